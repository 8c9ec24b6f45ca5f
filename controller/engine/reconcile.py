"""One reconcile of one HPA, offline: ``decide(snapshot) -> Decision``.

The control flow is upstream's ``reconcileAutoscaler``: get the scale, remember the first
sight, branch on the current count (maintenance mode at zero, clamps outside [min, max]),
compute the metrics, normalize, rescale, compose the status. ``decide`` reads no clock and
does no I/O: the live controller assembles a snapshot, calls this same function, and writes
what it returns.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.durations import format_time
from shared.kube.resources import GroupVersion, GroupVersionError
from shared.selectors import SelectorError
from shared.selectors import parse as parse_selector

from . import behavior as bh
from .conditions import (
    ABLE_TO_SCALE,
    SCALED_TO_ZERO,
    SCALING_ACTIVE,
    SCALING_LIMITED,
    get_condition,
    remove_condition,
    set_condition,
)
from .metrics import INTERNAL_ERROR, SPEC_ERROR, MetricsResult, compute_all
from .model import JSON, Event, History, Pod, Recommendation, Snapshot
from .replica_calculator import PodContext


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

    def to_wire(self) -> JSON:
        return {
            "desiredReplicas": self.desired_replicas,
            "rescale": self.rescale,
            "status": self.status,
            "events": [e.to_wire() for e in self.events],
            "history": history_to_wire(self.history),
        }


def history_to_wire(h: History) -> JSON:
    out: JSON = {}
    if h.recommendations is not None:
        out["recommendations"] = [
            {"replicas": r.replicas, "timestamp": format_time(r.timestamp)} for r in h.recommendations
        ]
    for key, events in (("scaleUpEvents", h.scale_up_events), ("scaleDownEvents", h.scale_down_events)):
        out[key] = [
            {
                "replicaChange": e.replica_change,
                "timestamp": format_time(e.timestamp),
                **({"outdated": True} if e.outdated else {}),
            }
            for e in events
        ]
    return out


def _valid_group_version(api_version: str) -> bool:
    try:
        GroupVersion.parse(api_version)
    except GroupVersionError:
        return False
    return True


def _select_pods(snap: Snapshot, selector_text: str) -> list[Pod]:
    sel = parse_selector(selector_text)
    ns = str(snap.hpa.get("metadata", {}).get("namespace", ""))
    return [
        p for p in snap.pods if (not p.namespace or not ns or p.namespace == ns) and sel.matches(p.labels)
    ]


def _has_object_or_external(snap: Snapshot) -> bool:
    return any(m.type in ("Object", "External") for m in snap.metrics)


def decide(snap: Snapshot) -> Decision:
    hpa = copy.deepcopy(snap.hpa)
    original_status = copy.deepcopy(hpa.get("status") or {})
    status: JSON = copy.deepcopy(original_status)
    conditions: list[JSON] = list(status.get("conditions") or [])
    status["conditions"] = conditions
    now = snap.now
    gates = snap.settings.feature_gates
    events: list[Event] = []
    history = snap.history
    if not gates.hpa_scale_to_zero:
        remove_condition(conditions, SCALED_TO_ZERO)

    def cond(ctype: str, ok: bool, reason: str, message: str) -> None:
        set_condition(conditions, ctype, ok, reason, message, now)

    def finish(desired: int, rescale: bool, **kw: object) -> Decision:
        if not status.get("conditions"):
            status.pop("conditions", None)
        return Decision(desired, rescale, status, events, history, **kw)  # type: ignore[arg-type]

    target_ref = hpa.get("spec", {}).get("scaleTargetRef") or {}
    current_fallback = int(original_status.get("currentReplicas") or 0)
    scale_error = snap.scale_error
    if not _valid_group_version(str(target_ref.get("apiVersion", ""))):
        scale_error = f"unexpected GroupVersion string: {target_ref.get('apiVersion')}"
    if scale_error is not None or snap.scale is None:
        message = scale_error or "unrecognized resource"
        events.append(Event("Warning", "FailedGetScale", message))
        cond(
            ABLE_TO_SCALE,
            False,
            "FailedGetScale",
            f"the HPA controller was unable to get the target's current scale: {message}",
        )
        return finish(
            current_fallback,
            False,
            error=INTERNAL_ERROR,
            notes=[f"the scale subresource could not be read: {message}"],
        )

    cond(
        ABLE_TO_SCALE,
        True,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    )
    scale = snap.scale
    current = scale.spec_replicas
    if history.recommendations is None:  # first sight since (re)start: a restart cannot scale down at once
        history = History((Recommendation(current, now),), history.scale_up_events, history.scale_down_events)

    min_replicas, max_replicas = snap.min_replicas, snap.max_replicas
    scaled_to_zero = gates.hpa_scale_to_zero and (
        (c := get_condition(conditions, SCALED_TO_ZERO)) is not None and c.get("status") == "True"
    )
    has_obj_ext = _has_object_or_external(snap)
    metrics_result: MetricsResult | None = None
    normalized: bh.Normalized | None = None
    statuses: list[JSON] | None = None
    desired, rescale, reason_text, notes = 0, True, "", []
    needs_metrics = True

    if current == 0 and not ((min_replicas != 0 and scaled_to_zero) or (scaled_to_zero and has_obj_ext)):
        desired, rescale, needs_metrics = 0, False, False
        cond(
            SCALING_ACTIVE,
            False,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        )
        notes.append("the target is at zero replicas and the HPA did not put it there: scaling is disabled")
    elif current > max_replicas and current != 0:
        reason_text, desired, needs_metrics = (
            "Current number of replicas above Spec.MaxReplicas",
            max_replicas,
            False,
        )
        notes.append(f"current {current} is above maxReplicas {max_replicas}: no metrics needed")
    elif current < min_replicas and current != 0:
        reason_text, desired, needs_metrics = (
            "Current number of replicas below Spec.MinReplicas",
            min_replicas,
            False,
        )
        notes.append(f"current {current} is below minReplicas {min_replicas}: no metrics needed")

    if needs_metrics:
        if not scale.selector:
            events.append(Event("Warning", "SelectorRequired", "selector is required"))
            cond(SCALING_ACTIVE, False, "InvalidSelector", "the HPA target's scale is missing a selector")
            return _metrics_failed(
                snap, status, events, history, current, None, "selector is required", finish
            )
        try:
            pods = _select_pods(snap, scale.selector)
        except SelectorError as e:
            msg = f"couldn't convert selector into a corresponding internal selector object: {e}"
            events.append(Event("Warning", "InvalidSelector", msg))
            cond(SCALING_ACTIVE, False, "InvalidSelector", msg)
            return _metrics_failed(snap, status, events, history, current, None, msg, finish)
        if len(snap.selecting_hpas) > 1:  # two HPAs would fight over the same pods
            msg = (
                f"pods by selector {scale.selector} are controlled by multiple HPAs: "
                f"[{' '.join(snap.selecting_hpas)}]"
            )
            events.append(Event("Warning", "AmbiguousSelector", msg))
            cond(SCALING_ACTIVE, False, "AmbiguousSelector", msg)
            notes.append(f"pods are also selected by another HPA: {', '.join(snap.selecting_hpas)}")
            return _metrics_failed(snap, status, events, history, current, None, msg, finish)
        ctx = PodContext(
            pods, snap.settings.cpu_initialization_period, snap.settings.initial_readiness_delay, now
        )
        metrics_result = compute_all(snap, ctx, scale.spec_replicas, scale.status_replicas)
        events.extend(metrics_result.events)
        cond(SCALING_ACTIVE, *metrics_result.condition)
        statuses = metrics_result.statuses
        if metrics_result.replicas == -1:
            err = metrics_result.invalid_error or ""
            kind = (
                SPEC_ERROR
                if all(o.error_kind == SPEC_ERROR for o in metrics_result.outcomes if not o.ok)
                else INTERNAL_ERROR
            )
            return _metrics_failed(
                snap,
                status,
                events,
                history,
                current,
                statuses,
                err,
                finish,
                metrics_result=metrics_result,
                kind=kind,
            )
        proposal = max(metrics_result.replicas, 0)
        rescale_metric = metrics_result.metric_name if metrics_result.replicas > 0 else ""
        desired = proposal
        if desired > current:
            reason_text = f"{rescale_metric} above target"
        if desired < current:
            reason_text = "All metrics below target"
        recs = history.recommendations or ()
        if snap.behavior is None:
            normalized = bh.normalize_legacy(
                current,
                desired,
                min_replicas,
                max_replicas,
                recs,
                now,
                snap.settings.downscale_stabilization_window,
                snap.settings.scale_up_limit_factor,
                snap.settings.scale_up_limit_minimum,
            )
        else:
            normalized = bh.normalize_with_behavior(
                current,
                desired,
                min_replicas,
                max_replicas,
                snap.behavior.scale_up,
                snap.behavior.scale_down,
                snap.settings.downscale_stabilization_window,
                recs,
                history.scale_up_events,
                history.scale_down_events,
                now,
            )
        history = History(normalized.recommendations, history.scale_up_events, history.scale_down_events)
        cond(ABLE_TO_SCALE, True, normalized.able_reason, normalized.able_message)
        cond(SCALING_LIMITED, normalized.limited, normalized.limit_reason, normalized.limit_message)
        desired = normalized.replicas
        if current == 0 and min_replicas != 0 and scaled_to_zero and desired < min_replicas:
            desired = min_replicas
        rescale = desired != current

    action = "none"
    if rescale:
        if snap.scale_update_error is not None:
            err = snap.scale_update_error
            events.append(
                Event("Warning", "FailedRescale", f"New size: {desired}; reason: {reason_text}; error: {err}")
            )
            cond(
                ABLE_TO_SCALE,
                False,
                "FailedUpdateScale",
                f"the HPA controller was unable to update the target scale: {err}",
            )
            _set_status(
                status, hpa, current, int(original_status.get("desiredReplicas") or 0), statuses, False, now
            )
            return finish(
                current,
                False,
                current_replicas=current,
                error=INTERNAL_ERROR,
                metrics=metrics_result,
                normalized=normalized,
                notes=notes,
                rescale_reason=reason_text,
            )
        cond(
            ABLE_TO_SCALE,
            True,
            "SucceededRescale",
            f"the HPA controller was able to update the target scale to {desired}",
        )
        if gates.hpa_scale_to_zero:
            if current > 0 and desired == 0 and min_replicas == 0 and has_obj_ext:
                cond(SCALED_TO_ZERO, True, "ScaledToZero", "the HPA controller scaled the workload to zero")
            else:
                cond(
                    SCALED_TO_ZERO,
                    False,
                    "NotScaledToZero",
                    "the HPA controller did not scale the workload to zero",
                )
        events.append(Event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason_text}"))
        if snap.behavior is not None:
            if desired > current:
                ups = bh.store_scale_event(
                    history.scale_up_events, snap.behavior.scale_up, desired - current, now
                )
                history = History(history.recommendations, ups, history.scale_down_events)
            else:
                downs = bh.store_scale_event(
                    history.scale_down_events, snap.behavior.scale_down, current - desired, now
                )
                history = History(history.recommendations, history.scale_up_events, downs)
        action = "scale_up" if desired > current else "scale_down"
    else:
        desired = current
    _set_status(status, hpa, current, desired, statuses, rescale, now)
    err_label = "none"
    if metrics_result is not None and metrics_result.invalid_error:
        err_label = INTERNAL_ERROR
    return finish(
        desired,
        rescale,
        current_replicas=current,
        action=action,
        error=err_label,
        metrics=metrics_result,
        normalized=normalized,
        notes=notes,
        rescale_reason=reason_text,
    )


def _set_status(
    status: JSON,
    hpa: JSON,
    current: int,
    desired: int,
    statuses: list[JSON] | None,
    rescale: bool,
    now: object,
) -> None:
    """setStatus: recreate the status, keeping conditions and lastScaleTime."""
    conditions = status.get("conditions")
    last_scale = status.get("lastScaleTime")
    observed = status.get("observedGeneration")
    status.clear()
    generation = hpa.get("metadata", {}).get("generation")
    if generation is not None:
        status["observedGeneration"] = generation
    elif observed is not None:
        status["observedGeneration"] = observed
    if rescale:
        last_scale = format_time(now)  # type: ignore[arg-type]
    if last_scale is not None:
        status["lastScaleTime"] = last_scale
    status["currentReplicas"] = current
    status["desiredReplicas"] = desired
    if statuses:
        status["currentMetrics"] = statuses
    status["conditions"] = conditions


def _metrics_failed(
    snap: Snapshot,
    status: JSON,
    events: list[Event],
    history: History,
    current: int,
    statuses: list[JSON] | None,
    error: str,
    finish: Callable[..., Decision],
    *,
    metrics_result: MetricsResult | None = None,
    kind: str = INTERNAL_ERROR,
) -> Decision:
    """No scaling this round: record current replicas and metrics, keep the old desired count."""
    _set_status(
        status,
        snap.hpa,
        current,
        int((snap.hpa.get("status") or {}).get("desiredReplicas") or 0),
        statuses,
        False,
        snap.now,
    )
    events.append(Event("Warning", "FailedComputeMetricsReplicas", error))
    notes = [f"no scaling this round: {error}"]
    return finish(
        current,
        False,
        current_replicas=current,
        error=kind,
        metrics=metrics_result,
        notes=notes,
    )
