"""A human-readable account of one decision: the answer to "why did my HPA do that?".

It walks the same steps as the engine -- each metric's proposal and how it was computed,
then what stabilization, rate policies and min/max did to it -- using the trace the engine
recorded while deciding, so the account can never drift from the decision.
"""

from __future__ import annotations

from shared.durations import format_time

from .limiting import limiting_step, metric_label
from .metrics import MetricOutcome
from .model import MetricSpec, Snapshot
from .reconcile import Decision


def _target_text(spec: MetricSpec) -> str:
    t = spec.target
    if t is None:
        return "no target"
    if t.average_utilization is not None and t.average_value is None:
        return f"{t.average_utilization}% of request"
    if t.average_value is not None:
        return f"average value {t.average_value}"
    if t.value is not None:
        return f"value {t.value}"
    return "no usable target"


def _metric_lines(i: int, o: MetricOutcome) -> list[str]:
    head = f"  [{i}] {metric_label(o.spec)}, target {_target_text(o.spec)}"
    if not o.ok:
        return [head, f"      FAILED ({o.reason}): {o.event_message}"]
    lines = [f"{head} -> proposes {o.replicas}"]
    c = o.calc
    if c is not None and c.groups is not None:
        g = c.groups
        lines.append(
            f"      pods: {g.ready_count} ready, {len(g.unready)} unready, {len(g.missing)} missing, "
            f"{len(g.ignored)} ignored"
        )
        for label, names in (("unready", g.unready), ("missing", g.missing), ("ignored", g.ignored)):
            if names:
                lines.append(f"        {label}: {', '.join(sorted(names))}")
    source: dict[str, object] = next((v for k, v in o.status.items() if k != "type"), {})
    current = source.get("current") or {}
    assert isinstance(current, dict)
    if current:
        shown = ", ".join(f"{k} {v}" for k, v in current.items())
        lines.append(f"      current: {shown}")
    if c is not None and c.ratio is not None:
        extra = f", recomputed {c.new_ratio:.4g}" if c.new_ratio is not None else ""
        lines.append(f"      usage ratio {c.ratio:.4g} (current / target){extra}")
    if c is not None and c.ready_pods is not None:
        lines.append(f"      ready pods (Running and Ready): {c.ready_pods}")
    lines.extend(f"      {n}" for n in (c.notes if c is not None else []))
    return lines


def explain(snap: Snapshot, d: Decision) -> str:
    meta = snap.hpa.get("metadata", {})
    ref = snap.hpa.get("spec", {}).get("scaleTargetRef") or {}
    out = [f"HPA {meta.get('namespace', '')}/{meta.get('name', '')} at {format_time(snap.now)}"]
    out.append(f"  target {ref.get('kind', '?')}/{ref.get('name', '?')}")
    if snap.scale is not None:
        out.append(
            f"  current replicas {snap.scale.spec_replicas} (status {snap.scale.status_replicas}), "
            f"selector {snap.scale.selector or '(none)'}"
        )
    out.append(
        f"  bounds: min {snap.min_replicas}, max {snap.max_replicas}; "
        + (
            "behavior policies (spec.behavior)"
            if snap.behavior
            else "legacy normalization (no spec.behavior)"
        )
    )
    for note in d.notes:
        out.append(f"  {note}")
    if d.metrics is not None:
        out.append("")
        out.append("Metrics")
        for i, o in enumerate(d.metrics.outcomes, 1):
            out.extend(_metric_lines(i, o))
        if not d.metrics.failed:
            out.append(f"  largest proposal: {d.metrics.replicas} ({d.metrics.metric_name})")
        if d.metrics.invalid_error:
            out.append(f"  {d.metrics.invalid_error}")
            if d.metrics.failed:
                out.append("  a broken metric never lets the HPA scale down: nothing changes this round")
    if d.normalized is not None:
        n = d.normalized
        out.append("")
        out.append("Normalization")
        out.extend(f"  {note}" for note in n.notes)
        if not n.notes:
            out.append("  neither stabilization nor limits changed the proposal")
    out.append("")
    if d.rescale:
        out.append(
            f"Result: rescale {d.current_replicas} -> {d.desired_replicas} (reason: {d.rescale_reason})"
        )
    else:
        out.append(f"Result: keep {d.desired_replicas} replicas")
    if d.fallback:
        out.append(f"  fallback: {d.fallback}")
    out.append(f"  limiting step: {limiting_step(d)}")
    out.append("Conditions")
    for c in d.status.get("conditions") or []:
        out.append(f"  {c.get('type')}={c.get('status')} {c.get('reason')}: {c.get('message')}")
    if d.events:
        out.append("Events")
        out.extend(f"  {e.type} {e.reason}: {e.message}" for e in d.events)
    return "\n".join(out)
