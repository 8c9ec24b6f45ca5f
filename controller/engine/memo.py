"""What a live controller parses once instead of once per reconcile.

A reconcile turns the live state into a snapshot document and parses that document back
(``parse_snapshot``), so that what is decided live is exactly what a saved snapshot replays.
Most of that document is the same objects from one reconcile to the next: the informer's
pods (replaced, never edited, when they change), the controller's flags, and the HPA's
memory (recommendations and scale events), which gains one entry a reconcile. Converting
and re-reading them every time was most of the engine's CPU per reconcile (at 21
recommendations the memory alone was two thirds of ``parse_snapshot``).

``ParseMemo`` remembers what was parsed by the *identity* of the object it came from, and
holds that object so the identity test stays sound. The memory goes both ways: the live
side asks ``history_wire`` for the document form of a ``History`` (reusing the entries the
previous document already had) and ``parse_snapshot`` finds that very document here and
takes the ``History`` it stands for. Offline (no memo) everything is parsed as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .decision import event_to_wire, history_to_wire, recommendation_to_wire
from .model import JSON, History, Pod, Settings
from .parse import PodSpecParts, parse_history, parse_pod, parse_pod_spec, parse_settings
from .reader import _Reader

Key = tuple[str, str]
T = TypeVar("T")
# distinct pod specs remembered (a cluster has far fewer templates than pods); past it the
# memory starts again, and only pods parsed after that stop sharing with those before
SPECS = 65_536


class ParseMemo:
    def __init__(self, limit: int = 1_000_000) -> None:
        # bounds what deleted pods and HPAs leave behind; above the pods a cluster holds (a
        # limit at 100,000 emptied the memo at every turn with 100,000 pods)
        self.limit = limit
        self._pods: dict[Key, tuple[Any, Pod]] = {}
        # pods' specs, by the identity of the (shared) object each was parsed from
        self._specs: dict[int, tuple[Any, PodSpecParts]] = {}
        self._settings: tuple[Any, Settings] | None = None
        # per HPA: the last history document, the History it stands for, and its entries
        # by the identity of the recommendation or event each was made from
        self._histories: dict[Key, tuple[Any, History, dict[int, tuple[Any, JSON]]]] = {}

    def pod(self, r: _Reader) -> Pod:
        meta = r.data.get("metadata")
        ns, name = (meta.get("namespace"), meta.get("name")) if isinstance(meta, dict) else (None, None)
        if not isinstance(ns, str) or not isinstance(name, str):
            return parse_pod(r)  # malformed: parse_pod says what is wrong
        hit = self._pods.get((ns, name))
        if hit is not None and hit[0] is r.data:
            return hit[1]
        labels = meta.get("labels")
        if not (
            isinstance(labels, dict) and all(type(k) is str and type(v) is str for k, v in labels.items())
        ):
            labels = None  # parse_pod reads (or rejects) them itself
        pod = parse_pod(r, self._spec(r), labels)
        if len(self._pods) >= self.limit:
            self._pods.clear()
        self._pods[(ns, name)] = (r.data, pod)
        return pod

    def _spec(self, r: _Reader) -> PodSpecParts | None:
        """The parse of the pod's spec if that very object was parsed before: the informer's
        pods of one template share one spec (``pod_fields``), and so their Pods share its
        containers and quantities -- at 100,000 pods, tens of MiB. None: ``parse_pod`` parses
        it itself."""
        raw = r.data.get("spec")
        if not isinstance(raw, dict):
            return None
        hit = self._specs.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        parsed = parse_pod_spec(r.obj("spec"))
        if len(self._specs) >= SPECS:
            self._specs.clear()
        self._specs[id(raw)] = (raw, parsed)
        return parsed

    def settings(self, r: _Reader) -> Settings:
        if self._settings is not None and self._settings[0] is r.data:
            return self._settings[1]
        parsed = parse_settings(r)
        self._settings = (r.data, parsed)
        return parsed

    def history_wire(self, key: Key, history: History) -> JSON:
        """``history_to_wire(history)``, remembered for ``key`` so that parsing this document
        returns ``history`` itself; entries unchanged since the last one are reused."""
        old = self._histories.get(key)
        before = old[2] if old is not None else {}
        entries: dict[int, tuple[Any, JSON]] = {}

        def reusing(make: Callable[[T], JSON]) -> Callable[[T], JSON]:
            def entry(item: T) -> JSON:
                hit = before.get(id(item))
                out: JSON = hit[1] if hit is not None and hit[0] is item else make(item)
                entries[id(item)] = (item, out)
                return out

            return entry

        doc = history_to_wire(history, reusing(recommendation_to_wire), reusing(event_to_wire))
        if old is None and len(self._histories) >= self.limit:
            self._histories.clear()
        self._histories[key] = (doc, history, entries)
        return doc

    def history(self, key: Key | None, r: _Reader) -> History:
        hit = self._histories.get(key) if key is not None else None
        if hit is not None and hit[0] is r.data:
            return hit[1]
        return parse_history(r)

    def forget(self, key: Key) -> None:
        """An HPA is gone: its memory goes too."""
        self._histories.pop(key, None)
