"""A list+watch cache of one resource, kept current in a background thread.

The controller reads HPAs and pods from these caches instead of listing per reconcile; a
callback reports every change so the HPA concerned can be reconciled promptly. A broken or
expired watch (410 Gone) re-lists, with backoff, and the cache keeps serving meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from .kube import Kube, KubeError
from .selectors import Selector

log = structlog.get_logger("informer")
Key = tuple[str, str]  # (namespace, name)


@dataclass
class Informer:
    kube: Kube
    path: str  # e.g. /api/v1/pods or /apis/autoscaling/v2/horizontalpodautoscalers
    label_selector: str = ""
    on_change: Callable[[str, dict[str, Any]], None] | None = None
    # applied to every object before it is cached (client-go's SetTransform): dropping what
    # no reader needs keeps a 20,000-pod cache small
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    synced: threading.Event = field(default_factory=threading.Event)
    stopped: threading.Event = field(default_factory=threading.Event)
    error: str = ""
    relists: int = 0
    # (namespace) and (namespace, label key, label value) -> keys: selecting the pods of one
    # HPA must not scan every pod of a namespace (O(HPAs x pods) per sync period)
    _by_ns: dict[str, set[Key]] = field(default_factory=dict)
    _by_label: dict[tuple[str, str, str], set[Key]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Informer:
        threading.Thread(target=self._run, name=f"informer{self.path}", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopped.set()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def items(self) -> list[dict[str, Any]]:
        return list(self.objects.values())

    def select(self, namespace: str, selector: Selector | None = None) -> list[dict[str, Any]]:
        """Objects of one namespace that match ``selector`` (all of them for None).

        Equality and ``in`` requirements narrow the candidates through the label index;
        the full selector then decides, so every operator keeps its exact meaning.
        """
        with self._lock:
            keys: set[Key] | None = None
            for r in selector.requirements if selector is not None else ():
                if r.operator in ("=", "==", "in"):
                    hit: set[Key] = set()
                    for v in r.values:
                        hit |= self._by_label.get((namespace, r.key, v), set())
                    keys = hit if keys is None else keys & hit
            if keys is None:
                keys = set(self._by_ns.get(namespace, set()))
            objs = [o for k in keys if (o := self.objects.get(k)) is not None]
        if selector is None:
            return objs
        return [o for o in objs if selector.matches(o["metadata"].get("labels") or {})]

    def _shrink(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.transform(obj) if self.transform is not None and "metadata" in obj else obj

    def _index(self, key: Key, obj: dict[str, Any] | None) -> None:
        """Point the indexes at ``obj`` (None: forget ``key``); caller holds the lock."""
        old = self.objects.get(key)
        if old is not None:
            self._by_ns.get(key[0], set()).discard(key)
            for k, v in (old["metadata"].get("labels") or {}).items():
                self._by_label.get((key[0], k, v), set()).discard(key)
        if obj is None:
            self.objects.pop(key, None)
            return
        self.objects[key] = obj
        _add_to_index(self._by_ns, self._by_label, key, obj)

    def _notify(self, kind: str, obj: dict[str, Any]) -> None:
        if self.on_change is not None:
            try:
                self.on_change(kind, obj)
            except Exception as e:  # a callback must never kill the watch
                log.warning("informer callback failed", path=self.path, error=str(e))

    def _run(self) -> None:
        backoff = 0.5
        query = [("labelSelector", self.label_selector)] if self.label_selector else []
        while not self.stopped.is_set():
            try:
                listing = self.kube.get_sync(self.path, query)
                fresh = {
                    (o["metadata"].get("namespace", ""), o["metadata"]["name"]): self._shrink(o)
                    for o in listing.get("items", [])
                }
                gone = [self.objects[k] for k in self.objects.keys() - fresh.keys()]
                by_ns: dict[str, set[Key]] = {}
                by_label: dict[tuple[str, str, str], set[Key]] = {}
                for k, o in fresh.items():
                    _add_to_index(by_ns, by_label, k, o)
                with self._lock:  # one swap: readers never see a half-built cache
                    self.objects, self._by_ns, self._by_label = fresh, by_ns, by_label
                self.relists += 1
                for obj in gone:
                    self._notify("DELETED", obj)
                for obj in fresh.values():
                    self._notify("ADDED", obj)
                rv = listing["metadata"]["resourceVersion"]
                self.synced.set()
                self.error = ""
                backoff = 0.5
                while not self.stopped.is_set():
                    for event in self.kube.watch_sync(self.path, rv, extra=query):
                        kind, obj = event.get("type", ""), self._shrink(event.get("object", {}))
                        if kind == "ERROR":
                            raise KubeError(int(obj.get("code", 0)), str(obj.get("message", "watch error")))
                        meta = obj.get("metadata", {})
                        rv = meta.get("resourceVersion", rv)
                        if kind == "BOOKMARK":
                            continue
                        if (
                            self.label_selector
                            and kind != "DELETED"
                            and not _matches(obj, self.label_selector)
                        ):
                            kind = "DELETED"  # it no longer matches: forget it
                        key = (meta.get("namespace", ""), meta.get("name", ""))
                        with self._lock:
                            self._index(key, None if kind == "DELETED" else obj)
                        self._notify(kind, obj)
            except (KubeError, KeyError, ValueError) as e:
                self.error = str(e)
                if self.stopped.is_set():
                    break
                if isinstance(e, KubeError) and e.status in (401, 403):
                    # not transient: say which permission is missing; keep retrying so a fixed
                    # RoleBinding takes effect without a restart
                    log.error(
                        "not allowed to list and watch; grant list and watch on this resource",
                        path=self.path,
                        status=e.status,
                        error=str(e),
                    )
                else:
                    log.info("watch ended; re-listing", path=self.path, error=str(e))
                if not self.stopped.is_set():
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 10.0)


def _add_to_index(
    by_ns: dict[str, set[Key]],
    by_label: dict[tuple[str, str, str], set[Key]],
    key: Key,
    obj: dict[str, Any],
) -> None:
    by_ns.setdefault(key[0], set()).add(key)
    for k, v in (obj["metadata"].get("labels") or {}).items():
        by_label.setdefault((key[0], k, v), set()).add(key)


def _matches(obj: dict[str, Any], selector: str) -> bool:
    from .selectors import parse

    return parse(selector).matches(obj.get("metadata", {}).get("labels") or {})


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus metadata.managedFields, often half of a pod's size."""
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
