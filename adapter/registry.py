"""Discovery: which metrics exist, per resource, and which rule and series serve each.

Every ``--metrics-relist-interval`` each distinct ``seriesQuery`` goes to Prometheus'
series API (series seen within ``--metrics-max-age``); ``index_series`` (pure) turns the
answer into metrics. Between relists, a request for a metric we do not know triggers a
targeted lookup -- only the rules whose naming can produce that name are re-listed -- so a
new metric is served at once instead of after up to ten minutes. Lookups of names that
still do not exist are remembered briefly, so unknown names cannot be used to hammer
Prometheus.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from cachetools import TTLCache

from .config import Config, GroupResource, Rule
from .naming import NamingError, ResourceMapper, metric_name
from .promapi import PrometheusAPI, gather_all


@dataclass(frozen=True)
class Served:
    """A metric as served: which rule and which Prometheus series answer it."""

    rule: Rule
    series: str


@dataclass
class Index:
    custom: dict[tuple[GroupResource, str], list[Served]]
    external: dict[str, list[Served]]
    series_count: int = 0

    @classmethod
    def empty(cls) -> Index:
        return cls({}, {}, 0)


def index_series(
    rule: Rule, series: Iterable[Mapping[str, str]]
) -> tuple[list[tuple[GroupResource, str, str]], list[tuple[str, str]]]:
    """(resource, metric, series name) for custom rules; (metric, series name) for external."""
    custom: list[tuple[GroupResource, str, str]] = []
    external: list[tuple[str, str]] = []
    mapper = ResourceMapper(rule.resources)
    seen: set[tuple[str, ...]] = set()
    for labels in series:
        name = labels.get("__name__", "")
        if not name or not all(f.keep(name) for f in rule.series_filters):
            continue
        try:
            metric = metric_name(rule.naming, name)
        except NamingError:
            continue
        if not metric:
            continue
        if rule.kind == "externalRules":
            if (metric, name) not in seen:
                seen.add((metric, name))
                external.append((metric, name))
            continue
        for label in labels:
            gr = mapper.resource_for_label(label)
            if gr is not None and (gr.group, gr.resource, metric, name) not in seen:
                seen.add((gr.group, gr.resource, metric, name))
                custom.append((gr, metric, name))
    return custom, external


def _may_produce(rule: Rule, metric: str) -> bool:
    """Could this rule's ``name.as`` yield ``metric``? (every $ reference may be any text)"""
    pattern = re.escape(rule.naming.as_)
    pattern = re.sub(r"\\\$\\\{[^}]*\\\}|\\\$[A-Za-z0-9_]+", ".*", pattern)
    return re.fullmatch(pattern, metric) is not None


class Registry:
    def __init__(
        self, config: Config, prometheus: PrometheusAPI, max_age: timedelta, negative_ttl: float = 2.0
    ) -> None:
        self.config = config
        self.prometheus = prometheus
        self.max_age = max_age
        self.index = Index.empty()
        self.last_relist: float | None = None
        self.relist_seconds: float | None = None
        self.relists = 0
        self._unknown: TTLCache[tuple[str, str], bool] = TTLCache(maxsize=10_000, ttl=negative_ttl)
        self._lock = asyncio.Lock()

    async def _list(self, rules: Iterable[Rule]) -> Index:
        by_query: dict[str, list[Rule]] = defaultdict(list)
        for rule in rules:
            by_query[rule.series_query].append(rule)
        results = await gather_all([self.prometheus.series(q, self.max_age) for q in by_query])
        idx = Index.empty()
        for (_query, rules_for_query), series in zip(by_query.items(), results, strict=True):
            idx.series_count += len(series)
            for rule in rules_for_query:
                custom, external = index_series(rule, series)
                for gr, metric, name in custom:
                    idx.custom.setdefault((gr, metric), []).append(Served(rule, name))
                for metric, name in external:
                    idx.external.setdefault(metric, []).append(Served(rule, name))
        return idx

    async def relist(self) -> None:
        """Rebuild the index from Prometheus; the old index serves until the new one is whole."""
        start = time.monotonic()
        async with self._lock:
            self.index = await self._list(self.config.rules + self.config.external_rules)
            self._unknown.clear()
        self.relists += 1
        self.relist_seconds = time.monotonic() - start
        self.last_relist = time.time()

    async def custom(self, gr: GroupResource, metric: str) -> Served | None:
        found = self.index.custom.get((gr, metric))
        if found is None and await self._look_up("custom", metric):
            found = self.index.custom.get((gr, metric))
        return found[0] if found else None

    async def external(self, metric: str) -> Served | None:
        found = self.index.external.get(metric)
        if found is None and await self._look_up("external", metric):
            found = self.index.external.get(metric)
        return found[0] if found else None

    async def _look_up(self, kind: str, metric: str) -> bool:
        """On-demand discovery of one metric name; True when the index changed."""
        if (kind, metric) in self._unknown:
            return False
        rules = [
            r
            for r in (self.config.rules if kind == "custom" else self.config.external_rules)
            if _may_produce(r, metric)
        ]
        if not rules:
            self._unknown[(kind, metric)] = True
            return False
        async with self._lock:
            found = await self._list(rules)
            for key, served in found.custom.items():
                self.index.custom.setdefault(key, [])
                self.index.custom[key] += [s for s in served if s not in self.index.custom[key]]
            for m, served in found.external.items():
                self.index.external.setdefault(m, [])
                self.index.external[m] += [s for s in served if s not in self.index.external[m]]
        hit = (metric in found.external) if kind == "external" else any(m == metric for _, m in found.custom)
        if not hit:
            self._unknown[(kind, metric)] = True
        return hit

    def custom_resources(self) -> list[tuple[GroupResource, str]]:
        return sorted(self.index.custom, key=lambda k: (k[0].resource, k[0].group, k[1]))

    def external_metrics(self) -> list[str]:
        return sorted(self.index.external)
