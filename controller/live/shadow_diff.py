"""What shadow mode compares: our would-be status beside the owner's, the difference in
words, and what a decision started from (``shadow`` pairs the decisions in time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.engine.model import Snapshot
from shared.durations import format_time

Key = tuple[str, str]
__all__ = ["Comparison", "Key", "OwnerRescale", "differences", "inputs", "seen_inputs"]


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
    differing_since: datetime | None = None  # when the current real difference began
    persistent: bool = False  # a real difference (see the module docstring), until an agreement
    quiet: int = 0  # our reconciles since the owner last wrote its status
    steady_sights: int = 0  # of those, how many differed from its (unchanged) status

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
            "status": self.status,
            "ownerStatus": self.owner_status,
        }


def conditions_of(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        str(c.get("type")): (str(c.get("status")), str(c.get("reason")))
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    }


def inputs(status: dict[str, Any]) -> tuple[Any, Any]:
    """What a decision started from, as its status records it."""
    return status.get("currentReplicas"), status.get("currentMetrics") or []


def _show(c: tuple[str, str] | None) -> str:
    return "absent" if c is None else f"{c[0]}/{c[1]}"


def differences(ours: dict[str, Any], owner: dict[str, Any], other: str = "owner") -> list[str]:
    """What differs between two HPA statuses, in words: desired replicas, then each condition
    (``other`` names the second: the owner, or a built-in twin)."""
    out: list[str] = []
    if ours.get("desiredReplicas") != owner.get("desiredReplicas"):
        out.append(
            f"desiredReplicas: promhpa {ours.get('desiredReplicas')}, {other} {owner.get('desiredReplicas')}"
        )
    mine, theirs = conditions_of(ours), conditions_of(owner)
    for ctype in sorted(set(mine) | set(theirs)):
        a, b = mine.get(ctype), theirs.get(ctype)
        if a != b:
            out.append(f"{ctype}: promhpa {_show(a)}, {other} {_show(b)}")
    return out


def seen_inputs(snap: Snapshot | None) -> dict[str, str]:
    """What our decision started from beyond its status (for the warning): the pods'
    readiness and the remembered recommendations, which the owner sampled at its own moments."""
    if snap is None:
        return {}
    recs = sorted(snap.history.recommendations or (), key=lambda r: r.timestamp)
    pods = [
        f"{p.name}:{p.phase}:{'ready' if p.ready else 'unready'}{':deleted' if p.deleted else ''}"
        for p in snap.pods
    ]
    return {
        "recommendations": ", ".join(f"{r.timestamp:%H:%M:%S.%f}={r.replicas}" for r in recs),
        "pods": ", ".join(pods),
    }
