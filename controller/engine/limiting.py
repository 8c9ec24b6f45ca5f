"""Which step of a decision set its replica count, and what each metric proposed.

"Why did my HPA not scale?" is mostly answered by one word: the step that had the last say
-- the tolerance band kept the count, a stabilization window held it, a rate policy or
min/max clamped it, or the metrics could not be read. The live controller exports it per
HPA (``promhpa_controller_limiting_step``) beside each metric's proposal, and ``why``
prints it; both come from the decision the engine returned, so they cannot drift from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import MetricSpec
from .reconcile import Decision

# in the order a decision passes them; "none": the proposal went through unchanged
STEPS = (
    "none", "tolerance", "stabilization", "policy", "min", "max", "metrics-failed", "disabled", "fallback",
)  # fmt: skip

_CLAMPS = {
    "TooManyReplicas": "max",
    "TooFewReplicas": "min",
    "ScaleUpLimit": "policy",
    "ScaleDownLimit": "policy",
}


@dataclass(frozen=True)
class Proposal:
    index: int  # the metric's position in spec.metrics
    metric: str  # e.g. "External queue_depth"
    replicas: int | None  # None: the metric could not be read


def metric_label(spec: MetricSpec) -> str:
    if spec.type in ("Resource", "ContainerResource"):
        where = f" (container {spec.container})" if spec.container else ""
        return f"{spec.type} {spec.name}{where}"
    if spec.type == "Object":
        d = spec.described_object or {}
        return f"Object {spec.name} on {d.get('kind', '?')}/{d.get('name', '?')}"
    if spec.type in ("Pods", "External"):
        return f"{spec.type} {spec.name}"
    return f"unknown source type {spec.type!r}"


def proposals(d: Decision) -> list[Proposal]:
    if d.metrics is None:
        return []
    outcomes = enumerate(d.metrics.outcomes)
    return [Proposal(i, metric_label(o.spec), o.replicas if o.ok else None) for i, o in outcomes]


def limiting_step(d: Decision) -> str:
    """The last step that changed (or, for the tolerance band, kept) the replica count."""
    if d.fallback:
        return "fallback"
    if d.metrics is None:  # decided before metrics: zero replicas, or a count outside min/max
        reason = d.rescale_reason
        if "above Spec.MaxReplicas" in reason:
            return "max"
        if "below Spec.MinReplicas" in reason:
            return "min"
        return "disabled" if d.normalized is None else "none"
    if d.metrics.failed or d.normalized is None:
        return "metrics-failed"
    n = d.normalized
    if n.limited and n.limit_reason in _CLAMPS:
        return _CLAMPS[n.limit_reason]
    if n.stabilized != max(d.metrics.replicas, 0):
        return "stabilization"
    largest = [o for o in d.metrics.outcomes if o.ok and o.replicas == d.metrics.replicas]
    kept = any(o.calc is not None and o.calc.kept == "tolerance" for o in largest)
    if kept and d.metrics.replicas == d.current_replicas:
        return "tolerance"
    return "none"
