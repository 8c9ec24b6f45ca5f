"""One reconcile end to end: branches, conditions, events, status and history."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from controller.engine import decide
from controller.engine import parse_snapshot

from .builders import NOW
from .builders import cpu_metric
from .builders import external_metric
from .builders import pod
from .builders import pod_metrics
from .builders import snapshot


def run(**kw: Any) -> Any:
    return decide(parse_snapshot(snapshot(**kw)))


def conditions(d: Any) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in d.status.get("conditions", [])}


def hot(n: int) -> list[dict[str, Any]]:
    return [pod_metrics(f"web-{i}", "1") for i in range(n)]


def test_first_sight_records_current_replicas_so_a_restart_cannot_scale_down_at_once() -> None:
    d = run(current=5, pod_metrics_=[pod_metrics(f"web-{i}", "100m") for i in range(5)], history={})
    assert (d.desired_replicas, d.rescale) == (5, False)
    assert conditions(d)["AbleToScale"] == ("True", "ScaleDownStabilized")
    assert d.history.recommendations is not None
    assert len(d.history.recommendations) == 2


def test_zero_replicas_is_maintenance_mode() -> None:
    d = run(current=0, pods=[])
    assert (d.desired_replicas, d.rescale) == (0, False)
    assert conditions(d)["ScalingActive"] == ("False", "ScalingDisabled")


def test_above_max_scales_to_max_without_metrics() -> None:
    d = run(current=12, max_replicas=10)
    assert (d.desired_replicas, d.rescale) == (10, True)
    assert d.events[0].message == "New size: 10; reason: Current number of replicas above Spec.MaxReplicas"
    assert "currentMetrics" not in d.status


def test_below_min_scales_to_min_without_metrics() -> None:
    d = run(current=1, min_replicas=3)
    assert (d.desired_replicas, d.events[0].reason) == (3, "SuccessfulRescale")


def test_failed_metric_with_a_scale_up_still_scales() -> None:
    d = run(
        metrics=[cpu_metric(50), external_metric(average="1")],
        pod_metrics_=hot(3),
        metricErrors=[{"source": "External", "name": "qps", "message": "boom"}],
    )
    assert d.desired_replicas == 6
    assert conditions(d)["ScalingActive"] == ("True", "ValidMetricFound")
    assert d.status["currentMetrics"][1] == {"type": ""}
    assert [e.reason for e in d.events] == ["FailedGetExternalMetric", "SuccessfulRescale"]


def test_failed_metric_never_allows_a_scale_down() -> None:
    d = run(
        metrics=[cpu_metric(50), external_metric(average="1")],
        pod_metrics_=[pod_metrics(f"web-{i}", "10m") for i in range(3)],
        metricErrors=[{"source": "External", "name": "qps", "message": "boom"}],
    )
    assert (d.desired_replicas, d.rescale) == (3, False)
    assert conditions(d)["ScalingActive"] == ("False", "FailedGetExternalMetric")
    assert d.events[-1].reason == "FailedComputeMetricsReplicas"
    assert d.events[-1].message.startswith("invalid metrics (1 invalid out of 2), first error is: ")


def test_unknown_metric_type_is_decided_not_refused() -> None:
    d = run(metrics=[{"type": "CheddarCheese"}])
    assert conditions(d)["ScalingActive"] == ("False", "InvalidMetricSourceType")
    assert d.error == "spec"


def test_missing_selector_is_invalid_selector() -> None:
    snap = snapshot()
    snap["scale"]["status"]["selector"] = ""
    d = decide(parse_snapshot(snap))
    assert conditions(d)["ScalingActive"] == ("False", "InvalidSelector")
    assert [e.reason for e in d.events] == ["SelectorRequired", "FailedComputeMetricsReplicas"]


def test_unparsable_selector_is_invalid_selector() -> None:
    snap = snapshot()
    snap["scale"]["status"]["selector"] = "cheddar cheese"
    d = decide(parse_snapshot(snap))
    assert conditions(d)["ScalingActive"] == ("False", "InvalidSelector")
    assert "couldn't convert selector" in d.status["conditions"][1]["message"]


def test_pods_claimed_by_two_hpas_are_an_ambiguous_selector_and_never_scale() -> None:
    snap = snapshot(current=3, pod_metrics_=hot(3))  # would scale up on its own
    snap["selectingHPAs"] = ["default/web", "default/web-canary"]
    d = decide(parse_snapshot(snap))
    assert conditions(d)["ScalingActive"] == ("False", "AmbiguousSelector")
    assert [e.reason for e in d.events] == ["AmbiguousSelector", "FailedComputeMetricsReplicas"]
    assert d.events[0].message == (
        "pods by selector app=web are controlled by more than one HPA (e.g. [default/web default/web-canary])"
    )
    assert (d.desired_replicas, d.rescale) == (3, False)


def test_explain_keeps_the_ambiguous_selector_note() -> None:
    from controller.engine.explain import explain

    snap = snapshot(current=3, pod_metrics_=hot(3))
    snap["selectingHPAs"] = ["default/web", "default/web-canary"]
    parsed = parse_snapshot(snap)
    text = explain(parsed, decide(parsed))
    assert "pods are also selected by another HPA: default/web, default/web-canary" in text
    assert "no scaling this round" in text


def test_pods_claimed_by_this_hpa_alone_are_not_ambiguous() -> None:
    snap = snapshot(current=3, pod_metrics_=hot(3))
    snap["selectingHPAs"] = ["default/web"]
    assert conditions(decide(parse_snapshot(snap)))["ScalingActive"] == ("True", "ValidMetricFound")


def test_failed_get_scale_keeps_everything_and_says_why() -> None:
    snap = snapshot()
    del snap["scale"]
    snap["scaleError"] = 'deployments.apps "web" not found'
    d = decide(parse_snapshot(snap))
    assert conditions(d)["AbleToScale"] == ("False", "FailedGetScale")
    assert d.events[0].reason == "FailedGetScale"
    assert d.rescale is False


def test_failed_scale_write_reports_failed_update_scale() -> None:
    d = run(pod_metrics_=hot(3), scaleUpdateError="conflict")
    assert conditions(d)["AbleToScale"] == ("False", "FailedUpdateScale")
    assert (
        d.events[-1].message == "New size: 6; reason: cpu resource utilization (percentage of request) "
        "above target; error: conflict"
    )
    assert d.history.scale_up_events == ()


def test_rescale_sets_last_scale_time_and_records_a_scale_event_with_behavior() -> None:
    d = run(pod_metrics_=hot(3), behavior={})
    assert d.status["lastScaleTime"] == NOW
    assert [(e.replica_change) for e in d.history.scale_up_events] == [3]


def test_condition_transition_time_moves_only_when_status_changes() -> None:
    old = [
        {
            "type": "AbleToScale",
            "status": "True",
            "lastTransitionTime": "2025-01-01T00:00:00Z",
            "reason": "ReadyForNewScale",
            "message": "x",
        }
    ]
    d = run(pod_metrics_=hot(3), conditions=old)
    assert d.status["conditions"][0]["lastTransitionTime"] == "2025-01-01T00:00:00Z"


def test_scale_to_zero_records_scaled_to_zero_with_an_external_metric() -> None:
    d = run(
        current=2,
        min_replicas=0,
        metrics=[external_metric(average="5")],
        external=[("qps", "0")],
        behavior={},
        controller={"featureGates": {"HPAScaleToZero": True}},
    )
    assert (d.desired_replicas, conditions(d)["ScaledToZero"]) == (0, ("True", "ScaledToZero"))


def from_zero(min_replicas: int, target: str, qps: str, **kw: Any) -> Any:
    """A target at zero replicas with one External metric: ``qps`` against ``target`` each."""
    metric = [external_metric(value=target)]
    return run(current=0, pods=[], min_replicas=min_replicas, metrics=metric, external=[("qps", qps)], **kw)


def test_scaled_to_zero_target_wakes_up_on_its_external_metric() -> None:
    cond = [{"type": "ScaledToZero", "status": "True", "reason": "ScaledToZero", "message": "x"}]
    d = from_zero(0, "5", "12", controller={"featureGates": {"HPAScaleToZero": True}}, conditions=cond)
    assert (d.desired_replicas, conditions(d)["ScaledToZero"]) == (3, ("False", "NotScaledToZero"))


GATE_OFF = {"featureGates": {"HPAScaleToZero": False}}
STORED = [{"type": "ScaledToZero", "status": "True", "reason": "ScaledToZero", "message": "x"}]


def test_gate_off_removes_a_stored_scaled_to_zero_condition_on_a_rescale() -> None:
    d = run(pod_metrics_=hot(3), conditions=STORED, controller=GATE_OFF)
    assert d.rescale
    assert "ScaledToZero" not in conditions(d)


def test_gate_off_keeps_a_stored_scaled_to_zero_condition_when_nothing_rescales() -> None:
    d = run(pod_metrics_=hot(3), conditions=STORED, controller=GATE_OFF, max_replicas=3)
    assert not d.rescale
    assert conditions(d)["ScaledToZero"] == ("True", "ScaledToZero")


def test_gate_off_removes_it_when_scaling_is_disabled_at_zero() -> None:
    d = run(pods=[], current=0, metrics=[external_metric(value="5")], conditions=STORED, controller=GATE_OFF)
    assert conditions(d)["ScalingActive"] == ("False", "ScalingDisabled")
    assert "ScaledToZero" not in conditions(d)


def test_target_raised_from_zero_to_min_replicas_names_the_reason() -> None:
    """A scaled-to-zero target whose metric proposes 0, with scale-up disabled by policy:
    upstream still raises it to minReplicas, and names that as the reason."""
    d = from_zero(2, "100", "0", conditions=STORED, behavior={"scaleUp": {"selectPolicy": "Disabled"}})
    assert d.desired_replicas == 2
    assert d.events[-1].message == "New size: 2; reason: Current number of replicas below Spec.MinReplicas"


def with_generation(gates: dict[str, bool] | None = None, version: str = "1.37") -> Any:
    controller = {"featureGates": gates or {}, "kubernetesVersion": version}
    snap = snapshot(pod_metrics_=hot(3), controller=controller)
    snap["hpa"]["metadata"]["generation"] = 7
    snap["hpa"]["status"]["observedGeneration"] = 6
    return decide(parse_snapshot(snap))


def test_status_observed_generation_is_the_generation_under_the_gate() -> None:
    assert with_generation().status["observedGeneration"] == 7


def test_status_observed_generation_is_dropped_without_the_gate() -> None:
    assert "observedGeneration" not in with_generation({"HPAGeneration": False}).status


def test_status_observed_generation_stays_from_1_38_where_the_gate_is_locked() -> None:
    assert with_generation({"HPAGeneration": False}, "1.38").status["observedGeneration"] == 7


def test_conditions_keep_their_own_observed_generation() -> None:
    cond = [{"type": "AbleToScale", "status": "True", "reason": "x", "message": "y", "observedGeneration": 3}]
    d = run(pod_metrics_=hot(3), conditions=cond)
    able = next(c for c in d.status["conditions"] if c["type"] == "AbleToScale")
    assert (able["reason"], able["observedGeneration"]) == ("SucceededRescale", 3)


def test_default_metric_is_cpu_at_80_percent() -> None:
    snap = snapshot(pod_metrics_=hot(3))
    del snap["hpa"]["spec"]["metrics"]
    d = decide(parse_snapshot(snap))
    assert d.desired_replicas == 4  # 100% against 80%: ceil(1.25 * 3)


def test_deciding_leaves_the_snapshot_as_it_was() -> None:
    """A round reads the snapshot's HPA without copying it: deciding the same snapshot again
    (shadow mode re-decides at other moments) must give the same answer from the same input."""
    names = ("a", "b", "c")
    data = snapshot(pods=[pod(n) for n in names], pod_metrics_=[pod_metrics(n, "900m") for n in names])
    raw = deepcopy(data)
    parsed = parse_snapshot(data)
    hpa_before = deepcopy(parsed.hpa)
    first = decide(parsed).to_wire()
    assert parsed.hpa == hpa_before
    assert data == raw
    assert decide(parsed).to_wire() == first
    assert first["desiredReplicas"] == 6  # a rescale: conditions, events and history all written
