"""Shadow mode (``--dry-run``): decide beside the HPA's real owner and say where we differ.

Beside kube-controller-manager (or another promhpa) the decision is only comparable if our
memory holds what the *owner* did, not what we would have done: a rate-limit policy counts
the scale events of the controller that acts. So in dry-run the scale events come from the
owner's rescales, seen in its status writes -- a write that moves ``lastScaleTime`` carries
``currentReplicas`` (the count before) and ``desiredReplicas`` (after), exactly what
upstream stores -- while the recommendations are our own (they depend only on the metrics,
which both read from the same APIs).

Each dry-run reconcile is then compared with the owner's last status: desired replicas and
each condition's status and reason (messages carry metric values read at slightly different
moments, so they are shown, not compared). The two controllers sync at different moments, so
a short disagreement while the metrics or the scale move is expected: the owner's status is
up to one sync period old, and its stabilization window holds recommendations taken up to one
period apart from ours. A difference still there at the third reconcile running (two full
periods) is a real one, counted and reported with the time it began.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.engine.behavior import store_scale_event
from controller.engine.model import Behavior, History
from shared.durations import DurationError, format_time, parse_time

Key = tuple[str, str]
REAL_AFTER = 3  # sights of one disagreement: two full sync periods


@dataclass(frozen=True)
class OwnerRescale:
    change: int  # desired - current: positive up, negative down
    at: datetime


@dataclass
class Comparison:
    """Our would-be decision beside the owner's last status, for one HPA."""

    namespace: str
    name: str
    decided_at: datetime
    status: dict[str, Any]  # our would-be status, conditions with reasons and messages
    owner_status: dict[str, Any]
    differences: list[str] = field(default_factory=list)
    differing_since: datetime | None = None  # first reconcile of the current disagreement
    sights: int = 0  # reconciles running that saw the current disagreement
    persistent: bool = False  # seen at REAL_AFTER reconciles running: a real difference

    def to_wire(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "decidedAt": format_time(self.decided_at),
            "desiredReplicas": self.status.get("desiredReplicas"),
            "ownerDesiredReplicas": self.owner_status.get("desiredReplicas"),
            "differences": self.differences,
            "differingSince": format_time(self.differing_since) if self.differing_since else None,
            "differs": self.persistent,
            "sights": self.sights,
            "status": self.status,
            "ownerStatus": self.owner_status,
        }


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        str(c.get("type")): (str(c.get("status")), str(c.get("reason")))
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    }


def _show(c: tuple[str, str] | None) -> str:
    return "absent" if c is None else f"{c[0]}/{c[1]}"


def differences(ours: dict[str, Any], owner: dict[str, Any]) -> list[str]:
    """What differs between two HPA statuses, in words: desired replicas, then each condition."""
    out: list[str] = []
    if ours.get("desiredReplicas") != owner.get("desiredReplicas"):
        out.append(
            f"desiredReplicas: promhpa {ours.get('desiredReplicas')}, owner {owner.get('desiredReplicas')}"
        )
    mine, theirs = _conditions(ours), _conditions(owner)
    for ctype in sorted(set(mine) | set(theirs)):
        a, b = mine.get(ctype), theirs.get(ctype)
        if a != b:
            out.append(f"{ctype}: promhpa {_show(a)}, owner {_show(b)}")
    return out


class Shadow:
    """The owner's rescales (fed from the HPA informer's thread) and the comparisons."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_scale_time: dict[Key, str | None] = {}
        self._pending: dict[Key, list[OwnerRescale]] = {}
        self.comparisons: dict[Key, Comparison] = {}
        self.differences_total = 0

    def observe_hpa(self, kind: str, obj: dict[str, Any], seen_at: datetime) -> None:
        """Note an owner's rescale from a status write.

        Seen as it happens (a watch event), the rescale is dated when we see it: the owner
        stored its event a few milliseconds earlier, while ``lastScaleTime`` is truncated to
        the second and so up to a second early. Seen in the first list (we just started), it
        is dated by ``lastScaleTime``.
        """
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        status = obj.get("status") or {}
        last = status.get("lastScaleTime")
        with self._lock:
            if kind == "DELETED":
                self._last_scale_time.pop(key, None)
                self._pending.pop(key, None)
                self.comparisons.pop(key, None)
                return
            known = key in self._last_scale_time
            previous = self._last_scale_time.get(key)
            self._last_scale_time[key] = last
            if last is None or (known and previous == last):
                return
            current, desired = status.get("currentReplicas"), status.get("desiredReplicas")
            if not isinstance(current, int) or not isinstance(desired, int) or current == desired:
                return
            try:
                at = parse_time(str(last))
            except DurationError:
                return
            if known:
                at = max(at, seen_at)
            self._pending.setdefault(key, []).append(OwnerRescale(desired - current, at))

    def follow_owner(self, key: Key, history: History, behavior: Behavior | None) -> History:
        """The memory with the owner's rescales since the last reconcile stored as upstream
        stores its own (only with a behavior; the slot of an outdated event is reused)."""
        with self._lock:
            rescales = self._pending.pop(key, [])
        if behavior is None:
            return history
        ups, downs = history.scale_up_events, history.scale_down_events
        for r in rescales:
            if r.change > 0:
                ups = store_scale_event(ups, behavior.scale_up, r.change, r.at)
            else:
                downs = store_scale_event(downs, behavior.scale_down, -r.change, r.at)
        return History(history.recommendations, ups, downs)

    def compare(
        self, key: Key, status: dict[str, Any], owner_status: dict[str, Any], now: datetime
    ) -> Comparison:
        """Our would-be ``status`` beside the owner's; a difference is real at its third sight."""
        diffs = differences(status, owner_status) if owner_status.get("conditions") else []
        previous = self.comparisons.get(key)
        since, sights = None, 0
        if diffs:
            ongoing = previous is not None and previous.differing_since is not None
            since = previous.differing_since if ongoing and previous else now
            sights = previous.sights + 1 if ongoing and previous else 1
        persistent = sights >= REAL_AFTER
        if persistent and not (previous and previous.persistent):
            self.differences_total += 1
        c = Comparison(key[0], key[1], now, status, owner_status, diffs, since, sights, persistent)
        self.comparisons[key] = c
        return c
