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
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from cachetools import TTLCache

from promclient.backends import Backends
from promclient.promapi import PrometheusAPI, PrometheusUnavailable, gather_all
from rules.config import Config, GroupResource, Rule
from rules.series import index_series


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


def _keep_from(index: Index, previous: Index, backends: set[str]) -> None:
    """Carry the previous entries of rules on ``backends`` (which failed) into ``index``."""
    for key, served in previous.custom.items():
        kept = [s for s in served if s.rule.backend in backends]
        if kept:
            index.custom.setdefault(key, []).extend(kept)
    for metric, served in previous.external.items():
        kept = [s for s in served if s.rule.backend in backends]
        if kept:
            index.external.setdefault(metric, []).extend(kept)


def _may_produce(rule: Rule, metric: str) -> bool:
    """Could this rule's ``name.as`` yield ``metric``? (every $ reference may be any text)"""
    pattern = re.escape(rule.naming.as_)
    pattern = re.sub(r"\\\$\\\{[^}]*\\\}|\\\$[A-Za-z0-9_]+", ".*", pattern)
    return re.fullmatch(pattern, metric) is not None


class Registry:
    def __init__(
        self,
        config: Config,
        prometheus: PrometheusAPI | Backends,
        max_age: timedelta,
        negative_ttl: float = 2.0,
    ) -> None:
        self.config = config
        self.backends = Backends.of(prometheus)
        self.max_age = max_age
        self.index = Index.empty()
        self.last_relist: float | None = None
        self.relist_seconds: float | None = None
        self.relists = 0
        # backend name -> why its last discovery failed; its rules keep their previous index
        self.backend_errors: dict[str, str] = {}
        self._unknown: TTLCache[tuple[str, str], bool] = TTLCache(maxsize=10_000, ttl=negative_ttl)
        self._lock = asyncio.Lock()
        # relists finished (whether or not every backend answered), and the failures of the
        # last one: a lookup that waited for a relist takes its answer instead of asking
        # again (a hung backend would otherwise hold the request for two of its timeouts)
        self._generation = 0
        self._failures: dict[str, PrometheusUnavailable] = {}

    async def _list(self, rules: Iterable[Rule]) -> tuple[Index, dict[str, PrometheusUnavailable]]:
        """The index of ``rules``, from every backend that answered, and why the others did not."""
        by_backend: dict[str, dict[str, list[Rule]]] = defaultdict(lambda: defaultdict(list))
        for rule in rules:
            by_backend[rule.backend][rule.series_query].append(rule)

        async def one(
            backend: str, queries: dict[str, list[Rule]]
        ) -> list[tuple[list[Rule], list[dict[str, str]]]]:
            client = self.backends.get(backend)
            answers = await gather_all([client.series(q, self.max_age) for q in queries])
            return list(zip(queries.values(), answers, strict=True))

        names = list(by_backend)
        results = await asyncio.gather(*(one(b, by_backend[b]) for b in names), return_exceptions=True)
        idx = Index.empty()
        failed: dict[str, PrometheusUnavailable] = {}
        for backend, result in zip(names, results, strict=True):
            if isinstance(result, PrometheusUnavailable):
                failed[backend] = result
                continue
            if isinstance(result, BaseException):
                raise result
            for rules_for_query, series in result:
                idx.series_count += len(series)
                for rule in rules_for_query:
                    custom, external = index_series(rule, series)
                    for gr, metric, name in custom:
                        idx.custom.setdefault((gr, metric), []).append(Served(rule, name))
                    for metric, name in external:
                        idx.external.setdefault(metric, []).append(Served(rule, name))
        return idx, failed

    async def relist(self) -> None:
        """Rebuild the index from every backend; the old index serves until the new one is
        whole, and a backend that fails keeps its previous entries (its queries will say it
        is down) while the others move on. Raises only when every backend failed."""
        start = time.monotonic()
        async with self._lock:
            rules = self.config.rules + self.config.external_rules
            index, failed = await self._list(rules)
            self.backend_errors = {b: str(e) for b, e in failed.items()}
            self._failures = failed
            self._generation += 1
            if failed and len(failed) == len({r.backend for r in rules}):
                raise next(iter(failed.values()))
            if failed:
                _keep_from(index, self.index, set(failed))
            self.index = index
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
        seen = self._generation
        async with self._lock:
            if self._generation != seen:  # a relist ended while this waited: its answer stands
                return self._after_relist(kind, metric, rules)
            found, failed = await self._list(rules)
            for key, served in found.custom.items():
                self.index.custom.setdefault(key, [])
                self.index.custom[key] += [s for s in served if s not in self.index.custom[key]]
            for m, served in found.external.items():
                self.index.external.setdefault(m, [])
                self.index.external[m] += [s for s in served if s not in self.index.external[m]]
        hit = _holds(found, kind, metric)
        if not hit and failed:
            raise next(iter(failed.values()))  # a backend that may serve it is down: 503, not 404
        if not hit:
            self._unknown[(kind, metric)] = True
        return hit

    def _after_relist(self, kind: str, metric: str, rules: list[Rule]) -> bool:
        if _holds(self.index, kind, metric):
            return True
        down = [self._failures[r.backend] for r in rules if r.backend in self._failures]
        if down:
            raise down[0]  # a backend that may serve it is down: 503 (or 504), not 404
        self._unknown[(kind, metric)] = True
        return False

    def custom_resources(self) -> list[tuple[GroupResource, str]]:
        return sorted(self.index.custom, key=lambda k: (k[0].resource, k[0].group, k[1]))

    def external_metrics(self) -> list[str]:
        return sorted(self.index.external)


def _holds(index: Index, kind: str, metric: str) -> bool:
    """Does ``index`` serve ``metric`` as a custom (any resource) or external metric?"""
    return metric in index.external if kind == "external" else any(m == metric for _, m in index.custom)
