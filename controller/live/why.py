"""What ``why`` answers: each HPA's last reconciles, explained step by step, and what changed.

The leader keeps, per HPA, its last ``size`` (--why-history) *distinct* decisions: a
reconcile whose outcome (replicas, proposals, limiting step, conditions, current metrics,
and in shadow mode the owner's status) equals the previous one only extends that entry's
time span and count, so a steady HPA costs one entry and one rendered explanation, and
"what changed" between entries is never noise. The explanation is
``controller.engine.explain`` on the very snapshot and decision of that reconcile; the
changes are computed from the summaries, so both are exact.
"""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.engine import Decision
from controller.engine.explain import explain
from controller.engine.limiting import limiting_step, proposals
from controller.engine.model import Snapshot
from shared.durations import format_time

Key = tuple[str, str]


@dataclass
class Owner:
    """Shadow mode: what the HPA's owner wrote, and whether promhpa agrees with it."""

    desired: int | None
    conditions: dict[str, str]  # type -> reason
    agrees: bool | None  # None: not comparable yet (the owner has not decided)
    differences: list[str]

    def to_wire(self) -> dict[str, Any]:
        return {
            "desiredReplicas": self.desired,
            "conditions": self.conditions,
            "agrees": self.agrees,
            "differences": self.differences,
        }


@dataclass
class Entry:
    first: datetime
    last: datetime
    mode: str  # active | shadow | passive (another controller writes this HPA)
    summary: dict[str, Any]
    packed: bytes  # the explanation, compressed: 10,000 HPAs keep 5 each
    owner: Owner | None = None
    count: int = 1
    changes: list[str] = field(default_factory=list)  # from the entry before this one

    @property
    def text(self) -> str:
        return zlib.decompress(self.packed).decode()

    def to_wire(self) -> dict[str, Any]:
        out = {
            "from": format_time(self.first),
            "to": format_time(self.last),
            "reconciles": self.count,
            "mode": self.mode,
            **self.summary,
            "changes": self.changes,
            "explanation": self.text,
        }
        if self.owner is not None:
            out["owner"] = self.owner.to_wire()
        return out


def summarize(d: Decision) -> dict[str, Any]:
    """The outcome of one reconcile, as plain data: what ``why`` compares and prints."""
    return {
        "currentReplicas": d.current_replicas,
        "desiredReplicas": d.desired_replicas,
        "rescale": d.rescale,
        "limitingStep": limiting_step(d),
        "proposals": [{"metric": p.metric, "replicas": p.replicas} for p in proposals(d)],
        "conditions": {
            str(c.get("type")): {k: c.get(k) for k in ("status", "reason", "message")}
            for c in d.status.get("conditions") or []
        },
        "currentMetrics": d.status.get("currentMetrics") or [],
        **({"fallback": d.fallback} if d.fallback else {}),
    }


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two summaries, one phrase each, in the order a decision is made."""
    out: list[str] = []
    for key, label in (("currentReplicas", "current replicas"),):
        if before.get(key) != after.get(key):
            out.append(f"{label} {before.get(key)} -> {after.get(key)}")
    if before.get("currentMetrics") != after.get("currentMetrics"):
        out.append("current metric values changed")
    old = {p["metric"]: p["replicas"] for p in before.get("proposals", [])}
    for p in after.get("proposals", []):
        was = old.get(p["metric"], "absent")
        if was != p["replicas"]:
            out.append(f"{p['metric']} proposes {_n(was)} -> {_n(p['replicas'])}")
    if before.get("limitingStep") != after.get("limitingStep"):
        out.append(f"limiting step {before.get('limitingStep')} -> {after.get('limitingStep')}")
    if before.get("desiredReplicas") != after.get("desiredReplicas"):
        out.append(f"desired replicas {before.get('desiredReplicas')} -> {after.get('desiredReplicas')}")
    bc, ac = before.get("conditions", {}), after.get("conditions", {})
    for ctype in sorted(set(bc) | set(ac)):
        b, a = bc.get(ctype, {}), ac.get(ctype, {})
        if (b.get("status"), b.get("reason")) != (a.get("status"), a.get("reason")):
            out.append(f"{ctype} {b.get('reason', 'absent')} -> {a.get('reason', 'absent')}")
    if before.get("fallback") != after.get("fallback"):
        out.append("fallback " + ("decided" if after.get("fallback") else "ended"))
    return out


def _n(v: object) -> str:
    return "failed" if v is None else str(v)


@dataclass
class WhyLog:
    """Per HPA, the last ``size`` distinct decisions (newest last)."""

    size: int = 5
    entries: dict[Key, deque[Entry]] = field(default_factory=dict)

    def record(
        self,
        key: Key,
        snap: Snapshot,
        d: Decision,
        *,
        mode: str,
        owner: Owner | None = None,
    ) -> Entry | None:
        """Keep this decision (None: ``size`` is 0, nothing is kept)."""
        if self.size == 0:
            return None
        summary = summarize(d)
        log = self.entries.setdefault(key, deque(maxlen=self.size))
        if log:
            last = log[-1]
            if last.mode == mode and last.summary == summary and last.owner == owner:
                last.last, last.count = snap.now, last.count + 1
                return last
        entry = Entry(snap.now, snap.now, mode, summary, zlib.compress(explain(snap, d).encode(), 1), owner)
        if log:
            entry.changes = changes(log[-1].summary, summary)
            if log[-1].mode != mode:
                entry.changes.insert(0, f"mode {log[-1].mode} -> {mode}")
            if owner is not None and log[-1].owner != owner:
                entry.changes.append("the owner's status changed")
        log.append(entry)
        return entry

    def forget(self, key: Key) -> None:
        self.entries.pop(key, None)

    def to_wire(self, key: Key, last: int | None = None) -> dict[str, Any] | None:
        log = self.entries.get(key)
        if log is None:
            return None
        items = list(log)[-last:] if last else list(log)
        return {"namespace": key[0], "name": key[1], "items": [e.to_wire() for e in items]}
