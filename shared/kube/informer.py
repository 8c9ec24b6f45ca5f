"""A list+watch cache of one resource, kept current by a task on the event loop.

client-go's informer and indexer in one small class: the controller reads HPAs and pods
from these caches instead of listing per reconcile, the adapter resolves ``*`` +
``labelSelector`` from them; a callback reports every change so the HPA concerned can be
reconciled promptly. Named index functions (client-go's ``Indexers``) map each object to
index keys -- by default ``namespace`` and ``label`` (namespace, key, value) -- so one
HPA's pods are found without scanning a namespace. A ``transform`` (client-go's
``SetTransform``) keeps only what the reader needs. A broken or expired watch (410 Gone)
re-lists, with backoff, and the cache keeps serving meanwhile.

It never dies silently: any exception -- a bug in a transform or an index function
included -- is logged with its traceback, then the informer backs off and re-lists. It
knows how long it has heard nothing from the API server (``age``: since the last list,
watch start, event or bookmark): a watch that delivers nothing, not even a bookmark, for
``watch_idle_timeout`` is dropped and re-established from the last resourceVersion, so a
connection that died without a word is noticed, and readers judge staleness by ``age``.
Readers wait for the first list with ``wait_synced``.

Everything runs on the loop that started it, readers included, so the cache needs no lock:
a relist swaps in a new cache in one assignment, and yields to the loop between pages and
while it indexes, so a 20,000-pod list does not hold up a request for its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import structlog

from shared.selectors import Selector

__all__ = ["IndexFunc", "Informer", "namespace_index", "without_managed_fields"]

from .client import Kube
from .errors import Forbidden, Gone, KubeError, Timeout, Unauthorized
from .indexes import (
    INDEXED_OPERATORS,
    IndexFunc,
    Key,
    add_to_indexes,
    default_indexers,
    label_index,
    namespace_index,
    selected_keys,
)

log = structlog.get_logger("informer")

INDEX_BATCH = 2000  # objects indexed between two yields to the loop, in a relist


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
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    error: str = ""
    relists: int = 0
    # the newest resourceVersion the cache has taken in (a list, an event or a bookmark): what
    # a controller compares its own writes with before trusting the cache (read-your-writes);
    # empty until the first list
    last_sync_rv: str = ""
    # index name -> function; selecting the pods of one HPA must not scan every pod of a
    # namespace (O(HPAs x pods) per sync period)
    indexers: dict[str, IndexFunc] = field(default_factory=default_indexers)
    _indexes: dict[str, dict[Hashable, set[Key]]] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None
    # objects per LIST page (client-go's reflector pages by 500): each page is shrunk by
    # ``transform`` before the next is read, so the peak memory of a relist is one page of
    # whole objects instead of the whole list (20,000 pods: ~10 KB of JSON each)
    page_size: int = 500
    # what ``selection_generation`` is made of: a relist moves the epoch (every selection);
    # an object added, removed or relabelled moves its namespace's count and the count for
    # selections across namespaces
    _epoch: int = 0
    _namespace_changes: dict[str, int] = field(default_factory=dict)
    _all_changes: int = 0
    # a watch that delivers nothing -- no event, no bookmark (the API server sends one about
    # every minute) -- for this long is dropped and re-established from the last
    # resourceVersion: a connection that died without a word is noticed, not waited on
    watch_idle_timeout: float = 90.0
    # each watch's server-side timeout is drawn from [1x, 2x) of this, as client-go's
    # reflector does (5-10 min), so many informers do not re-watch in step
    watch_timeout: int = 300
    # time.monotonic() of the last word from the API server: a list, a watch's start, an
    # event or a bookmark
    last_contact: float | None = None
    failures: int = 0  # list or watch attempts that ended in an error, since start

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the API server last said anything to this informer (None: never)."""
        if self.last_contact is None:
            return None
        return (time.monotonic() if now is None else now) - self.last_contact

    def _contact(self) -> None:
        self.last_contact = time.monotonic()

    async def wait_synced(self, timeout: float | None = None) -> bool:
        """Until the first list is in (True), or ``timeout`` seconds (False)."""
        if self.synced.is_set():
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.synced.wait()
        except TimeoutError:
            return False
        return True

    def start(self) -> Informer:
        """Start listing and watching, on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"informer {self.path}")
        return self

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def aclose(self) -> None:
        """Stop, and wait until its watch's connection is closed."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def selection_generation(self, namespace: str | None) -> tuple[int, int]:
        """Moves whenever what ``select(namespace, ...)`` can answer changes -- an object of
        that namespace (of any, for None) added or removed, or its labels changed -- and
        not when only the rest of an object does (a pod's status), nor for changes in other
        namespaces: a reader may keep a selection's result for as long as it stays put."""
        if namespace is None:
            return self._epoch, self._all_changes
        return self._epoch, self._namespace_changes.get(namespace, 0)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def items(self) -> list[dict[str, Any]]:
        return list(self.objects.values())

    def by_index(self, index: str, value: Hashable) -> list[dict[str, Any]]:
        """The objects whose ``index`` function yields ``value`` (client-go's ByIndex)."""
        keys = self._indexes.get(index, {}).get(value, set())
        return [o for k in keys if (o := self.objects.get(k)) is not None]

    def select(self, namespace: str | None, selector: Selector | None = None) -> list[dict[str, Any]]:
        """Objects of one namespace (every namespace for None) that match ``selector``.

        Equality and ``in`` requirements are answered by the label index, which holds every
        (namespace, key, value) an object carries; only the other operators are then checked
        object by object (over 1,000 pods and ``app=web`` that check was a tenth of a
        ``pods/*`` answer's CPU, for nothing). An informer without the standard label index
        checks every requirement.
        """
        if selector is not None and selector.nothing:
            return []
        requirements = selector.requirements if selector is not None else ()
        indexed = self.indexers.get("label") is label_index
        rest = [r for r in requirements if not indexed or r.operator not in INDEXED_OPERATORS]
        keys = selected_keys(self._indexes, namespace, requirements if indexed else ())
        objs = [o for k in keys if (o := self.objects.get(k)) is not None]
        if not rest:
            return objs
        return [o for o in objs if all(r.matches(o["metadata"].get("labels") or {}) for r in rest)]

    async def _list(self, query: list[tuple[str, str]]) -> tuple[dict[Key, dict[str, Any]], str]:
        """Every object (shrunk) and the list's resourceVersion, a page at a time. A continue
        token that expired between pages (410) restarts the list in one piece, as client-go
        does; the pages of one list are one consistent snapshot."""
        fresh: dict[Key, dict[str, Any]] = {}
        token = ""
        while True:
            paging = [("limit", str(self.page_size))] + ([("continue", token)] if token else [])
            try:
                page = await self.kube.get(self.path, [*query, *paging])
            except Gone:
                if not token:
                    raise
                fresh.clear()
                page, token = await self.kube.get(self.path, query), ""
            for o in page.get("items", []):
                kept = self._shrink(o)  # keyed by its strings: a transform may share them
                fresh[(kept["metadata"].get("namespace", ""), kept["metadata"]["name"])] = kept
            meta = page["metadata"]
            token = meta.get("continue", "")
            if not token:
                return fresh, str(meta["resourceVersion"])

    def _shrink(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.transform(obj) if self.transform is not None and "metadata" in obj else obj

    def _index(self, key: Key, obj: dict[str, Any] | None) -> None:
        """Point the indexes at ``obj`` (None: forget ``key``)."""
        old = self.objects.get(key)
        if old is None or obj is None or _labels(old) != _labels(obj):
            self._namespace_changes[key[0]] = self._namespace_changes.get(key[0], 0) + 1
            self._all_changes += 1
        if old is not None:
            for name, fn in self.indexers.items():
                index = self._indexes.get(name, {})
                for value in fn(old):
                    index.get(value, set()).discard(key)
        if obj is None:
            self.objects.pop(key, None)
            return
        self.objects[key] = obj
        add_to_indexes(self._indexes, self.indexers, key, obj)

    def _notify(self, kind: str, obj: dict[str, Any]) -> None:
        if self.on_change is not None:
            try:
                self.on_change(kind, obj)
            except Exception as e:  # a callback must never kill the watch
                log.warning("informer callback failed", path=self.path, error=str(e))

    async def _run(self) -> None:
        backoff = 0.5
        query = [("labelSelector", self.label_selector)] if self.label_selector else []
        while True:
            try:
                rv = await self._relist(query)
                backoff = 0.5
                while True:
                    rv = await self._watch(query, rv)
            except Exception as e:  # whatever it was, heal: log, back off, re-list
                self.failures += 1
                self.error = str(e) or type(e).__name__
                if isinstance(e, Unauthorized | Forbidden):
                    # not transient: say which permission is missing; keep retrying so a fixed
                    # RoleBinding takes effect without a restart
                    log.error(
                        "not allowed to list and watch; grant list and watch on this resource",
                        path=self.path,
                        status=e.status,
                        error=str(e),
                    )
                elif isinstance(e, KubeError):
                    log.info("watch ended; re-listing", path=self.path, error=str(e), backoff=backoff)
                else:  # a bug, ours or a callback's: the traceback says where
                    log.error(
                        "informer failed unexpectedly; re-listing",
                        path=self.path,
                        backoff=backoff,
                        exc_info=e,
                    )
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    async def _relist(self, query: list[tuple[str, str]]) -> str:
        """List everything, swap the cache in one piece, report the differences; the list's
        resourceVersion, to watch from."""
        fresh, rv = await self._list(query)
        self._contact()
        indexes: dict[str, dict[Hashable, set[Key]]] = {}
        for i, (k, o) in enumerate(fresh.items()):
            add_to_indexes(indexes, self.indexers, k, o)
            if i % INDEX_BATCH == INDEX_BATCH - 1:
                await asyncio.sleep(0)  # let the loop serve meanwhile
        gone = [self.objects[k] for k in self.objects.keys() - fresh.keys()]
        # one swap: readers never see a half-built cache
        self.objects, self._indexes = fresh, indexes
        self._epoch += 1
        self.last_sync_rv = rv
        self.relists += 1
        for obj in gone:
            self._notify("DELETED", obj)
        for obj in fresh.values():
            self._notify("ADDED", obj)
        self.synced.set()
        self.error = ""
        return rv

    async def _watch(self, query: list[tuple[str, str]], rv: str) -> str:
        """One watch from ``rv`` until the server ends it or it goes quiet for
        ``watch_idle_timeout``; the last resourceVersion seen, to watch on from."""
        server_timeout = self.watch_timeout + random.randrange(self.watch_timeout or 1)
        events = self.kube.watch(
            self.path,
            rv,
            server_timeout,
            extra=query,
            idle_timeout=self.watch_idle_timeout,
            opened=self._contact,
        )
        try:
            async for event in events:
                self._contact()
                kind, raw = event.get("type", ""), event.get("object", {})
                if kind == "ERROR":
                    raise KubeError(int(raw.get("code", 0)), str(raw.get("message", "watch error")))
                # read before the transform, which may drop it (the controller's pods do)
                rv = (raw.get("metadata") or {}).get("resourceVersion", rv)
                obj = self._shrink(raw)
                meta = obj.get("metadata", {})
                if kind == "BOOKMARK":
                    self.last_sync_rv = rv
                    continue
                if self.label_selector and kind != "DELETED" and not _matches(obj, self.label_selector):
                    kind = "DELETED"  # it no longer matches: forget it
                key = (meta.get("namespace", ""), meta.get("name", ""))
                self._index(key, None if kind == "DELETED" else obj)
                self.last_sync_rv = rv
                self._notify(kind, obj)
        except Timeout:
            log.info("watch went quiet; re-watching", path=self.path, idle_seconds=self.watch_idle_timeout)
        finally:
            await events.aclose()  # its connection closed, whatever ended the watch
        return rv


def _labels(obj: dict[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("labels") or {}


def _matches(obj: dict[str, Any], selector: str) -> bool:
    from shared.selectors import parse

    return parse(selector).matches(obj.get("metadata", {}).get("labels") or {})


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus metadata.managedFields, often half of a pod's size."""
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
