"""What one reconcile returns, and how the HPA status is composed (upstream's setStatus).

``Decision`` is the engine's output as plain data: the replica count, whether to rescale,
the status to write, the events to emit and the memory (history) for the next reconcile;
``to_wire`` is the JSON ``python -m controller decide`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from shared.durations import format_time

from . import behavior as bh
from .fallback import memory_to_wire
from .metrics import MetricsResult
from .model import JSON, Event, History, Recommendation, ScaleEvent


@dataclass
class Decision:
    desired_replicas: int
    rescale: bool
    status: JSON
    events: list[Event]
    history: History
    # for metrics and --explain
    current_replicas: int | None = None
    action: str = "none"  # scale_up | scale_down | none
    error: str = "none"  # spec | internal | none
    metrics: MetricsResult | None = None
    normalized: bh.Normalized | None = None
    notes: list[str] = field(default_factory=list)
    rescale_reason: str = ""
    # an opt-in fallback (``fallback``) stood in for metrics that could not be read: what it did
    fallback: str = ""

    def to_wire(self) -> JSON:
        return {
            "desiredReplicas": self.desired_replicas,
            "rescale": self.rescale,
            "status": self.status,
            "events": [e.to_wire() for e in self.events],
            "history": history_to_wire(self.history),
        }


def recommendation_to_wire(r: Recommendation) -> JSON:
    return {"replicas": r.replicas, "timestamp": format_time(r.timestamp)}


def event_to_wire(e: ScaleEvent) -> JSON:
    return {
        "replicaChange": e.replica_change,
        "timestamp": format_time(e.timestamp),
        **({"outdated": True} if e.outdated else {}),
    }


def history_to_wire(h: History) -> JSON:
    """The memory as a document (a snapshot's ``history``, the memory endpoint's answer)."""
    out: JSON = {}
    if h.recommendations is not None:
        out["recommendations"] = [recommendation_to_wire(r) for r in h.recommendations]
    out["scaleUpEvents"] = [event_to_wire(e) for e in h.scale_up_events]
    out["scaleDownEvents"] = [event_to_wire(e) for e in h.scale_down_events]
    if h.fallback is not None:
        out["fallback"] = memory_to_wire(h.fallback)
    return out


def set_status(
    status: JSON,
    hpa: JSON,
    current: int,
    desired: int,
    statuses: list[JSON] | None,
    rescale: bool,
    now: datetime,
    hpa_generation: bool = True,
) -> None:
    """setStatus: recreate the status, keeping conditions and lastScaleTime; with the
    HPAGeneration gate, observedGeneration is the HPA's generation (0 when it has none),
    without it a stored value is dropped (the status is rebuilt without the field)."""
    conditions = status.get("conditions")
    last_scale = status.get("lastScaleTime")
    status.clear()
    if hpa_generation:
        status["observedGeneration"] = int(hpa.get("metadata", {}).get("generation") or 0)
    if rescale:
        last_scale = format_time(now)
    if last_scale is not None:
        status["lastScaleTime"] = last_scale
    status["currentReplicas"] = current
    status["desiredReplicas"] = desired
    if statuses:
        status["currentMetrics"] = statuses
    status["conditions"] = conditions
