"""Object names for ``*`` + ``labelSelector`` requests, from watch-backed caches.

prometheus-adapter LISTs the objects on every such request. Here each group-resource gets
one ``shared.kube.informer.Informer``, started on first use and kept current by its
watch; only names, namespaces and labels are kept (its transform), and a request's
selector is resolved through the informer's (namespace, label) index instead of a scan of
every cached object.

A request waits for an informer's first list on the event loop (``Informer.wait_synced``),
where the informers run too: with RBAC missing or the API server down, a waiting request
holds nothing but its own coroutine. Each informer's
age -- how long since the API server last said anything to it -- is exported
(``promhpa_adapter_informer_last_contact_age_seconds``) and fails /readyz past
``stale_after``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from typing import Any

import structlog
from cachetools import LRUCache
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from promclient.promapi import PrometheusUnavailable
from rules.config import GroupResource
from shared.kube.client import Kube
from shared.kube.informer import Informer
from shared.kube.resources import GroupVersion, by_plural
from shared.selectors import Selector

from .health import Health

log = structlog.get_logger("adapter.serving.objects")


class ObjectsUnavailable(PrometheusUnavailable):
    """The Kubernetes API could not be listed in time."""


def names_and_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """All the adapter reads of an object."""
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "labels", "resourceVersion") if k in meta}
    return {"metadata": keep}


class ObjectCache:
    def __init__(
        self,
        kube: Kube,
        sync_timeout: float = 10.0,
        *,
        stale_after: float = 180.0,
        health: Health | None = None,
        metrics: CollectorRegistry | None = None,
        watch_idle_timeout: float = 90.0,
    ) -> None:
        self.kube = kube
        self.sync_timeout = sync_timeout
        self.stale_after = stale_after
        self.watch_idle_timeout = watch_idle_timeout
        if health is not None:
            health.checks.append(self.stale)
        if metrics is not None:
            metrics.register(_InformerAges(self))
        self._informers: dict[GroupResource, Informer] = {}
        self._starting = asyncio.Lock()
        self._selections: LRUCache[
            tuple[GroupResource, str | None, Selector | None], tuple[tuple[int, int], tuple[str, ...]]
        ] = LRUCache(maxsize=1024)

    async def _path(self, gr: GroupResource) -> str:
        known = by_plural(gr.resource, gr.group)
        if known is not None:
            return known.path()
        group = await self.kube.get(f"/apis/{gr.group}")  # a custom resource: ask discovery
        return GroupVersion(gr.group, group["preferredVersion"]["version"]).path + f"/{gr.resource}"

    async def _informer(self, gr: GroupResource) -> Informer:
        async with self._starting:
            informer = self._informers.get(gr)
            if informer is None:
                informer = Informer(
                    self.kube,
                    await self._path(gr),
                    transform=names_and_labels,
                    watch_idle_timeout=self.watch_idle_timeout,
                )
                self._informers[gr] = informer.start()
            return informer

    async def names(
        self, namespace: str | None, gr: GroupResource, selector: Selector | None
    ) -> Sequence[str]:
        informer = self._informers.get(gr)
        if informer is None:  # the first request for this resource starts its informer
            informer = await self._informer(gr)
        if not await informer.wait_synced(self.sync_timeout):
            raise ObjectsUnavailable(
                f"could not list {gr} from the Kubernetes API within {self.sync_timeout:.0f}s"
                + (f": {informer.error}" if informer.error else "")
            )
        # the same few selectors come back on every request (an HPA's, every sync period), and
        # over 1,000 pods selecting and sorting the names was a tenth of a ``pods/*`` answer:
        # a selection is kept until the objects of its namespace or their labels change. The
        # generation is read before selecting, so a change that races the selection only
        # makes the entry stale sooner, never wrong.
        generation = informer.selection_generation(namespace)
        key = (gr, namespace, selector)
        kept = self._selections.get(key)
        if kept is not None and kept[0] == generation:
            return kept[1]
        names = tuple(sorted(o["metadata"]["name"] for o in informer.select(namespace, selector)))
        self._selections[key] = (generation, names)
        return names

    def stale(self) -> str | None:
        """Why /readyz should fail (an informer unheard of for ``stale_after``), or None."""
        now = time.monotonic()
        for gr, informer in list(self._informers.items()):
            age = informer.age(now)
            if age is not None and age > self.stale_after:
                why = f": {informer.error}" if informer.error else ""
                return f"the {gr} informer has heard nothing from the Kubernetes API for {age:.0f}s{why}"
        return None

    def ages(self) -> dict[str, float]:
        now = time.monotonic()
        return {str(gr): age for gr, i in list(self._informers.items()) if (age := i.age(now)) is not None}

    async def aclose(self) -> None:
        for informer in self._informers.values():
            await informer.aclose()


class _InformerAges:
    """The informers' ages as a gauge, read when scraped."""

    def __init__(self, cache: ObjectCache) -> None:
        self.cache = cache

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "promhpa_adapter_informer_last_contact_age_seconds",
            "Seconds since the API server last answered an object informer (list, watch or event)",
            labels=["resource"],
        )
        for resource, age in sorted(self.cache.ages().items()):
            family.add_metric([resource], age)
        yield family
