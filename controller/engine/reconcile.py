"""One reconcile of one HPA, offline: ``decide(snapshot) -> Decision``.

The control flow is upstream's ``reconcileAutoscaler`` (pkg/controller/podautoscaler/
horizontal.go), one named step per stage of it:

1. ``_read_scale``      -- validate the target reference and read its scale
                           (FailedGetScale / SucceededGetScale); remember the first sight;
2. ``_bounds``          -- the current count against zero, maxReplicas and minReplicas
                           (ScalingDisabled, the two clamps that need no metrics);
3. ``_compute_metrics`` -- the selector, the pods it selects, every metric's proposal
                           (ScalingActive; FailedComputeMetricsReplicas ends the round);
4. ``_normalize``       -- stabilization and behavior policies, or the legacy rules
                           (ScalingLimited, the AbleToScale reasons);
5. ``_rescale``         -- the rescale or not, its event and condition, scale events kept
                           for the policies, and the status (``decision.set_status``).

``decide`` reads no clock and does no I/O: the live controller assembles a snapshot, calls
this same function, and writes what it returns. ``_Round`` holds what upstream keeps in
local variables and on the HPA object while it reconciles.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shared.jsondoc import json_copy
from shared.kube.resources import GroupVersion, GroupVersionError
from shared.selectors import SelectorError
from shared.selectors import parse_cached as parse_selector

from . import behavior as bh
from . import fallback as fb
from .conditions import (
    ABLE_TO_SCALE,
    SCALED_TO_ZERO,
    SCALING_ACTIVE,
    SCALING_LIMITED,
    get_condition,
    remove_condition,
    set_condition,
)
from .decision import Decision, history_to_wire, set_status
from .knobs import PAUSED_REASON
from .metrics import INTERNAL_ERROR, SPEC_ERROR, MetricsResult, compute_all
from .model import JSON, Event, History, Pod, Recommendation, Scale, Snapshot
from .replica_calculator import PodContext

__all__ = ["Decision", "decide", "history_to_wire"]


@dataclass
class _Round:
    """The working state of one reconcile."""

    snap: Snapshot
    hpa: JSON
    original_status: JSON
    status: JSON
    conditions: list[JSON]
    history: History
    events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fallback: str = ""  # what an opt-in fallback decided (``fallback``), if it did

    @classmethod
    def start(cls, snap: Snapshot) -> _Round:
        # the snapshot's HPA is already our own copy (parse_snapshot) and a round only reads
        # it and its status; the status it writes is a copy
        hpa = snap.hpa
        original = hpa.get("status") or {}
        status: JSON = json_copy(original)
        conditions: list[JSON] = list(status.get("conditions") or [])
        if not snap.settings.release.has_condition_generation:
            # before 1.37 a condition has no observedGeneration field: that release's
            # controller (and API server) never carry one
            conditions = [{k: v for k, v in c.items() if k != "observedGeneration"} for c in conditions]
        status["conditions"] = conditions
        return cls(snap, hpa, original, status, conditions, snap.history)

    def cond(self, ctype: str, ok: bool, reason: str, message: str) -> None:
        set_condition(self.conditions, ctype, ok, reason, message, self.snap.now)

    def event(self, type_: str, reason: str, message: str) -> None:
        self.events.append(Event(type_, reason, message))

    def finish(self, desired: int, rescale: bool, **kw: object) -> Decision:
        if not self.status.get("conditions"):
            self.status.pop("conditions", None)
        return Decision(
            desired,
            rescale,
            self.status,
            self.events,
            self.history,
            notes=self.notes,
            fallback=self.fallback,
            **kw,  # type: ignore[arg-type]
        )

    def metrics_failed(
        self,
        current: int,
        statuses: list[JSON] | None,
        error: str,
        *,
        metrics_result: MetricsResult | None = None,
        kind: str = INTERNAL_ERROR,
    ) -> Decision:
        """No scaling this round: record current replicas and metrics, keep the old desired count."""
        old_desired = int((self.snap.hpa.get("status") or {}).get("desiredReplicas") or 0)
        set_status(
            self.status, self.snap.hpa, current, old_desired, statuses, False, self.snap.now, _gen(self.snap)
        )
        self.event("Warning", "FailedComputeMetricsReplicas", error)
        self.notes.append(f"no scaling this round: {error}")
        return self.finish(current, False, current_replicas=current, error=kind, metrics=metrics_result)


@dataclass
class _Plan:
    """Where the round stands after the bounds: what it will propose and why."""

    current: int
    min_replicas: int
    max_replicas: int
    scaled_to_zero: bool
    has_object_or_external: bool
    desired: int = 0
    rescale: bool = True
    reason: str = ""
    needs_metrics: bool = True
    metrics: MetricsResult | None = None
    normalized: bh.Normalized | None = None
    statuses: list[JSON] | None = None


def _gen(snap: Snapshot) -> bool:
    return snap.settings.feature_gates.hpa_generation


def decide(snap: Snapshot) -> Decision:
    r = _Round.start(snap)
    scale = _read_scale(r)
    if scale is None:
        current = int(r.original_status.get("currentReplicas") or 0)
        return r.finish(current, False, error=INTERNAL_ERROR)
    if snap.paused:
        return _paused(r, scale)
    plan = _bounds(r, scale)
    if plan.needs_metrics:
        failed = _compute_metrics(r, scale, plan)
        if failed is not None:
            return failed
        _normalize(r, plan)
    return _rescale(r, plan)


def _paused(r: _Round, scale: Scale) -> Decision:
    """promhpa's own kind with ``spec.controller.paused``: no metrics read, no scale written,
    the count held where it is, and a condition saying so (upstream has no pause)."""
    current = scale.spec_replicas
    previous = r.status.get("currentMetrics")
    set_status(r.status, r.hpa, current, current, previous, False, r.snap.now, _gen(r.snap))
    r.cond(
        SCALING_ACTIVE,
        False,
        PAUSED_REASON,
        f"scaling is paused (spec.controller.paused): the replica count is held at {current}",
    )
    r.notes.append("spec.controller.paused is true: the replica count is held")
    return r.finish(current, False, current_replicas=current)


def _valid_group_version(api_version: str) -> bool:
    try:
        GroupVersion.parse(api_version)
    except GroupVersionError:
        return False
    return True


def _read_scale(r: _Round) -> Scale | None:
    """1. The target's scale, or FailedGetScale; a first sight records a recommendation."""
    target_ref = r.hpa.get("spec", {}).get("scaleTargetRef") or {}
    scale_error = r.snap.scale_error
    if not _valid_group_version(str(target_ref.get("apiVersion", ""))):
        scale_error = f"unexpected GroupVersion string: {target_ref.get('apiVersion')}"
    if scale_error is not None or r.snap.scale is None:
        message = scale_error or "unrecognized resource"
        r.event("Warning", "FailedGetScale", message)
        r.cond(
            ABLE_TO_SCALE,
            False,
            "FailedGetScale",
            f"the HPA controller was unable to get the target's current scale: {message}",
        )
        r.notes.append(f"the scale subresource could not be read: {message}")
        return None
    r.cond(
        ABLE_TO_SCALE,
        True,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    )
    scale = r.snap.scale
    h = r.history
    if h.recommendations is None:  # first sight since (re)start: a restart cannot scale down at once
        r.history = replace(h, recommendations=(Recommendation(scale.spec_replicas, r.snap.now),))
    return scale


def _bounds(r: _Round, scale: Scale) -> _Plan:
    """2. Zero replicas (scaling disabled unless the HPA put it there) and the two clamps."""
    snap = r.snap
    rel = snap.settings.release
    scaled_to_zero = (
        rel.scales_from_zero
        and snap.settings.feature_gates.hpa_scale_to_zero
        and ((c := get_condition(r.conditions, SCALED_TO_ZERO)) is not None and c.get("status") == "True")
    )
    plan = _Plan(
        scale.spec_replicas,
        snap.min_replicas,
        snap.max_replicas,
        scaled_to_zero,
        any(m.type in ("Object", "External") for m in snap.metrics),
    )
    current = plan.current
    if rel.scales_from_zero:
        disabled = current == 0 and not (
            (plan.min_replicas != 0 and scaled_to_zero) or (scaled_to_zero and plan.has_object_or_external)
        )
    else:  # up to 1.35: zero replicas disable scaling unless minReplicas is 0 too
        disabled = current == 0 and plan.min_replicas != 0
    if disabled:
        plan.desired, plan.rescale, plan.needs_metrics = 0, False, False
        r.cond(
            SCALING_ACTIVE,
            False,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        )
        if rel.scales_from_zero and not snap.settings.feature_gates.hpa_scale_to_zero:
            remove_condition(r.conditions, SCALED_TO_ZERO)  # with the gate off: here and on a rescale
        r.notes.append("the target is at zero replicas and the HPA did not put it there: scaling is disabled")
    elif current > plan.max_replicas and current != 0:
        plan.reason, plan.desired, plan.needs_metrics = (
            "Current number of replicas above Spec.MaxReplicas",
            plan.max_replicas,
            False,
        )
        r.notes.append(f"current {current} is above maxReplicas {plan.max_replicas}: no metrics needed")
    elif current < plan.min_replicas and current != 0:
        plan.reason, plan.desired, plan.needs_metrics = (
            "Current number of replicas below Spec.MinReplicas",
            plan.min_replicas,
            False,
        )
        r.notes.append(f"current {current} is below minReplicas {plan.min_replicas}: no metrics needed")
    return plan


def _select_pods(snap: Snapshot, selector_text: str) -> list[Pod]:
    sel = parse_selector(selector_text)
    ns = str(snap.hpa.get("metadata", {}).get("namespace", ""))
    return [
        p for p in snap.pods if (not p.namespace or not ns or p.namespace == ns) and sel.matches(p.labels)
    ]


def _compute_metrics(r: _Round, scale: Scale, plan: _Plan) -> Decision | None:
    """3. The selector and its pods, then every metric's proposal; a Decision ends the round."""
    snap, current = r.snap, plan.current
    if not scale.selector:
        r.event("Warning", "SelectorRequired", "selector is required")
        r.cond(SCALING_ACTIVE, False, "InvalidSelector", "the HPA target's scale is missing a selector")
        return r.metrics_failed(current, None, "selector is required")
    try:
        pods = _select_pods(snap, scale.selector)
    except SelectorError as e:
        msg = f"couldn't convert selector into a corresponding internal selector object: {e}"
        r.event("Warning", "InvalidSelector", msg)
        r.cond(SCALING_ACTIVE, False, "InvalidSelector", msg)
        return r.metrics_failed(current, None, msg)
    if len(snap.selecting_hpas) > 1 and pods:  # two HPAs would fight over the same pods
        # upstream lists them in map order (from 1.37, at most two with
        # HPAOptimizedSelectorStore): any order is upstream's; ours is the snapshot's
        if snap.settings.release.names_two_claimants:
            named = (
                snap.selecting_hpas[:2]
                if snap.settings.feature_gates.hpa_optimized_selector_store
                else snap.selecting_hpas
            )
            msg = (
                f"pods by selector {scale.selector} are controlled by more than one HPA "
                f"(e.g. [{' '.join(named)}])"
            )
        else:
            msg = (
                f"pods by selector {scale.selector} are controlled by multiple HPAs: "
                f"[{' '.join(snap.selecting_hpas)}]"
            )
        r.event("Warning", "AmbiguousSelector", msg)
        r.cond(SCALING_ACTIVE, False, "AmbiguousSelector", msg)
        r.notes.append(f"pods are also selected by another HPA: {', '.join(snap.selecting_hpas)}")
        return r.metrics_failed(current, None, msg)
    ctx = PodContext(
        pods,
        snap.settings.cpu_initialization_period,
        snap.settings.initial_readiness_delay,
        snap.now,
        snap.settings.release,
    )
    result = compute_all(snap, ctx, scale.spec_replicas, scale.status_replicas)
    r.events.extend(result.events)
    r.cond(SCALING_ACTIVE, *result.condition)
    if snap.fallback_error:
        r.notes.append(f"fallback ignored: {snap.fallback_error}")
    if snap.fallback is not None:
        result = _fallback(r, snap.fallback, result, current)
    elif get_condition(r.conditions, fb.CONDITION) is not None:
        remove_condition(r.conditions, fb.CONDITION)  # its annotation is gone
    plan.metrics, plan.statuses = result, result.statuses
    if result.failed:
        failed = [o for o in result.outcomes if not o.ok]
        kind = SPEC_ERROR if all(o.error_kind == SPEC_ERROR for o in failed) else INTERNAL_ERROR
        return r.metrics_failed(
            current, result.statuses, result.invalid_error or "", metrics_result=result, kind=kind
        )
    plan.desired = max(result.replicas, 0)
    rescale_metric = result.metric_name if result.replicas > 0 else ""
    if plan.desired > current:
        plan.reason = f"{rescale_metric} above target"
    if plan.desired < current:
        plan.reason = "All metrics below target"
    return None


def _fallback(r: _Round, spec: fb.FallbackSpec, result: MetricsResult, current: int) -> MetricsResult:
    """3b. An opt-in fallback (``fallback``): remember the last good proposal or when the
    failure began; once it has lasted long enough, the failing metrics propose the fallback's
    count beside the metrics that still answer."""
    now = r.snap.now
    ok = [o.replicas for o in result.outcomes if o.ok]
    all_read = len(ok) == len(result.outcomes)
    mem = fb.remember(r.history.fallback or fb.FallbackMemory(), all_read, max(result.replicas, 0), now)
    r.history = replace(r.history, fallback=mem)
    if all_read:
        remove_condition(r.conditions, fb.CONDITION)
        return result
    proposal, text = fb.propose(spec, mem, current, now)
    if proposal is None:
        remove_condition(r.conditions, fb.CONDITION)
        waited = (now - (mem.failing_since or now)).total_seconds()
        r.notes.append(
            f"fallback {spec.policy} waits: metrics failing for {waited:g}s of "
            f"{spec.failure_duration.total_seconds():g}s"
        )
        return result
    r.fallback = text
    r.cond(fb.CONDITION, True, spec.policy, text)
    r.notes.append(f"fallback decided: {text}")
    largest = max(ok, default=0)
    name = result.metric_name if ok and largest >= proposal else f"fallback ({spec.policy})"
    return replace(result, replicas=max(largest, proposal), metric_name=name, failed=False)


def _normalize(r: _Round, plan: _Plan) -> None:
    """4. Stabilization and the behavior policies (or the legacy rules) on the proposal."""
    snap, h, s = r.snap, r.history, r.snap.settings
    recs = h.recommendations or ()
    if snap.behavior is None:
        n = bh.normalize_legacy(
            plan.current,
            plan.desired,
            plan.min_replicas,
            plan.max_replicas,
            recs,
            snap.now,
            s.downscale_stabilization_window,
            s.scale_up_limit_factor,
            s.scale_up_limit_minimum,
        )
    else:
        n = bh.normalize_with_behavior(
            plan.current,
            plan.desired,
            plan.min_replicas,
            plan.max_replicas,
            snap.behavior.scale_up,
            snap.behavior.scale_down,
            s.downscale_stabilization_window,
            recs,
            h.scale_up_events,
            h.scale_down_events,
            snap.now,
            saturate=s.release.saturates_int32,
        )
    plan.normalized = n
    r.history = replace(h, recommendations=n.recommendations)
    r.cond(ABLE_TO_SCALE, True, n.able_reason, n.able_message)
    r.cond(SCALING_LIMITED, n.limited, n.limit_reason, n.limit_message)
    plan.desired = n.replicas
    if (
        plan.current == 0
        and plan.min_replicas != 0
        and plan.scaled_to_zero
        and plan.desired < plan.min_replicas
    ):
        plan.desired = plan.min_replicas
        plan.reason = plan.reason or "Current number of replicas below Spec.MinReplicas"
    plan.rescale = plan.desired != plan.current


def _rescale(r: _Round, plan: _Plan) -> Decision:
    """5. Rescale or not: the event, AbleToScale/ScaledToZero, the policies' memory, the status."""
    snap, current, desired = r.snap, plan.current, plan.desired
    common = {"metrics": plan.metrics, "normalized": plan.normalized, "rescale_reason": plan.reason}
    if not plan.rescale:
        set_status(r.status, r.hpa, current, current, plan.statuses, False, snap.now, _gen(snap))
        error = INTERNAL_ERROR if plan.metrics is not None and plan.metrics.invalid_error else "none"
        return r.finish(current, False, current_replicas=current, action="none", error=error, **common)
    if snap.scale_update_error is not None:
        err = snap.scale_update_error
        r.event("Warning", "FailedRescale", f"New size: {desired}; reason: {plan.reason}; error: {err}")
        r.cond(
            ABLE_TO_SCALE,
            False,
            "FailedUpdateScale",
            f"the HPA controller was unable to update the target scale: {err}",
        )
        old_desired = int(r.original_status.get("desiredReplicas") or 0)
        set_status(r.status, r.hpa, current, old_desired, plan.statuses, False, snap.now, _gen(snap))
        return r.finish(current, False, current_replicas=current, error=INTERNAL_ERROR, **common)
    r.cond(
        ABLE_TO_SCALE,
        True,
        "SucceededRescale",
        f"the HPA controller was able to update the target scale to {desired}",
    )
    if not snap.settings.release.scales_from_zero:
        pass  # up to 1.35 the controller knows no ScaledToZero condition
    elif snap.settings.feature_gates.hpa_scale_to_zero:
        if current > 0 and desired == 0 and plan.min_replicas == 0 and plan.has_object_or_external:
            r.cond(SCALED_TO_ZERO, True, "ScaledToZero", "the HPA controller scaled the workload to zero")
        else:
            r.cond(
                SCALED_TO_ZERO,
                False,
                "NotScaledToZero",
                "the HPA controller did not scale the workload to zero",
            )
    else:
        remove_condition(r.conditions, SCALED_TO_ZERO)
    r.event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {plan.reason}")
    h = r.history
    if snap.behavior is not None:
        if desired > current:
            ups = bh.store_scale_event(h.scale_up_events, snap.behavior.scale_up, desired - current, snap.now)
            r.history = replace(h, scale_up_events=ups)
        else:
            downs = bh.store_scale_event(
                h.scale_down_events, snap.behavior.scale_down, current - desired, snap.now
            )
            r.history = replace(h, scale_down_events=downs)
    set_status(r.status, r.hpa, current, desired, plan.statuses, True, snap.now, _gen(snap))
    action = "scale_up" if desired > current else "scale_down"
    error = INTERNAL_ERROR if plan.metrics is not None and plan.metrics.invalid_error else "none"
    return r.finish(desired, True, current_replicas=current, action=action, error=error, **common)
