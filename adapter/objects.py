"""Object names for ``*`` + ``labelSelector`` requests, from watch-backed caches.

prometheus-adapter LISTs the objects on every such request. Here each group-resource gets
one ``shared.kube.informer.Informer``, started on first use and kept current by its
watch; only names, namespaces and labels are kept (its transform), and a request's
selector is resolved through the informer's (namespace, label) index instead of a scan of
every cached object.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import structlog
from cachetools import LRUCache

from shared.kube.client import Kube
from shared.kube.informer import Informer
from shared.kube.resources import GroupVersion, by_plural
from shared.selectors import Selector

from .config import GroupResource
from .promapi import PrometheusUnavailable

log = structlog.get_logger("adapter.objects")


class ObjectsUnavailable(PrometheusUnavailable):
    """The Kubernetes API could not be listed in time."""


def names_and_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """All the adapter reads of an object."""
    meta = obj.get("metadata") or {}
    keep = {k: meta[k] for k in ("name", "namespace", "labels", "resourceVersion") if k in meta}
    return {"metadata": keep}


class ObjectCache:
    def __init__(self, kube: Kube, sync_timeout: float = 10.0) -> None:
        self.kube = kube
        self.sync_timeout = sync_timeout
        self._informers: dict[GroupResource, Informer] = {}
        self._lock = threading.Lock()
        self._selections: LRUCache[
            tuple[GroupResource, str | None, Selector | None], tuple[tuple[int, int], tuple[str, ...]]
        ] = LRUCache(maxsize=1024)

    def _path(self, gr: GroupResource) -> str:
        known = by_plural(gr.resource, gr.group)
        if known is not None:
            return known.path()
        group = self.kube.get_sync(f"/apis/{gr.group}")  # a custom resource: ask discovery
        return GroupVersion(gr.group, group["preferredVersion"]["version"]).path + f"/{gr.resource}"

    def _informer(self, gr: GroupResource) -> Informer:
        with self._lock:
            informer = self._informers.get(gr)
            if informer is None:
                informer = Informer(self.kube, self._path(gr), transform=names_and_labels)
                self._informers[gr] = informer.start()
            return informer

    async def names(
        self, namespace: str | None, gr: GroupResource, selector: Selector | None
    ) -> Sequence[str]:
        informer = self._informers.get(gr)
        if informer is None:  # the first request for this resource starts its informer
            informer = await asyncio.to_thread(self._informer, gr)
        if not informer.synced.is_set() and not await asyncio.to_thread(
            informer.synced.wait, self.sync_timeout
        ):
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

    def close(self) -> None:
        for informer in self._informers.values():
            informer.stop()
