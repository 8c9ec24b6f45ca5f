"""A watch-backed cache of object names and labels, for ``*`` + ``labelSelector`` requests.

prometheus-adapter LISTs the objects on every such request. Here each group-resource is
listed once, on first use, and then kept current by a watch (re-listing after a broken or
expired watch), so a request resolves its selector from memory. Only names, namespaces and
labels are kept.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import structlog

from shared.kube import Kube, KubeError, resource_path
from shared.selectors import Selector

from .config import GroupResource
from .prometheus import PrometheusUnavailable

log = structlog.get_logger("adapter.objects")

_VERSIONS = {"": "v1", "apps": "v1", "batch": "v1", "networking.k8s.io": "v1", "autoscaling": "v2"}


class ObjectsUnavailable(PrometheusUnavailable):
    """The Kubernetes API could not be listed in time."""


@dataclass
class _Watcher:
    kube: Kube
    gr: GroupResource
    objects: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    synced: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    error: str = ""

    def _path(self) -> str:
        version = _VERSIONS.get(self.gr.group)
        if version is None:
            group = self.kube.get_sync(f"/apis/{self.gr.group}")
            version = group["preferredVersion"]["version"]
        return resource_path(self.gr.group, version, self.gr.resource)

    def run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                path = self._path()
                listing = self.kube.get_sync(path, [("resourceVersion", "0")])
                self.objects = {
                    (o["metadata"].get("namespace", ""), o["metadata"]["name"]): dict(
                        o["metadata"].get("labels") or {}
                    )
                    for o in listing.get("items", [])
                }
                rv = listing["metadata"]["resourceVersion"]
                self.synced.set()
                self.error = ""
                backoff = 0.5
                while not self.stop.is_set():
                    for event in self.kube.watch_sync(path, rv):
                        kind, obj = event.get("type"), event.get("object", {})
                        meta = obj.get("metadata", {})
                        if kind == "ERROR":
                            raise KubeError(int(obj.get("code", 0)), str(obj.get("message", "watch error")))
                        rv = meta.get("resourceVersion", rv)
                        if kind == "BOOKMARK":
                            continue
                        key = (meta.get("namespace", ""), meta.get("name", ""))
                        if kind == "DELETED":
                            self.objects.pop(key, None)
                        else:
                            self.objects[key] = dict(meta.get("labels") or {})
            except (KubeError, KeyError, ValueError) as e:
                self.error = str(e)
                if not self.stop.is_set():
                    log.warning("watch failed; re-listing", resource=str(self.gr), error=str(e))
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 30.0)


class ObjectCache:
    def __init__(self, kube: Kube, sync_timeout: float = 10.0) -> None:
        self.kube = kube
        self.sync_timeout = sync_timeout
        self._watchers: dict[GroupResource, _Watcher] = {}
        self._lock = threading.Lock()

    def _watcher(self, gr: GroupResource) -> _Watcher:
        with self._lock:
            w = self._watchers.get(gr)
            if w is None:
                w = self._watchers[gr] = _Watcher(self.kube, gr)
                threading.Thread(target=w.run, name=f"watch-{gr}", daemon=True).start()
            return w

    async def names(self, namespace: str | None, gr: GroupResource, selector: Selector | None) -> list[str]:
        w = self._watcher(gr)
        if not w.synced.is_set() and not await asyncio.to_thread(w.synced.wait, self.sync_timeout):
            raise ObjectsUnavailable(
                f"could not list {gr} from the Kubernetes API within {self.sync_timeout:.0f}s"
                + (f": {w.error}" if w.error else "")
            )
        return sorted(
            name
            for (ns, name), labels in list(w.objects.items())
            if (namespace is None or ns == namespace) and (selector is None or selector.matches(labels))
        )

    def close(self) -> None:
        for w in self._watchers.values():
            w.stop.set()
