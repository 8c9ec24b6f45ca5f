"""The step that set a decision's replica count, and each metric's proposal."""

from __future__ import annotations

from typing import Any

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.explain import explain
from controller.engine.limiting import Proposal
from controller.engine.limiting import limiting_step
from controller.engine.limiting import proposals

from .builders import cpu_metric
from .builders import external_metric
from .builders import pod_metrics
from .builders import snapshot


def run(**kw: Any) -> Any:
    return decide(parse_snapshot(snapshot(**kw)))


def cpu(n: int, usage: str) -> list[dict[str, Any]]:
    return [pod_metrics(f"web-{i}", usage) for i in range(n)]


def test_a_proposal_that_goes_through_unchanged_is_none() -> None:
    d = run(current=3, pod_metrics_=cpu(3, "1"))  # 100% of request at a 50% target: 6
    assert (d.desired_replicas, limiting_step(d)) == (6, "none")


def test_a_ratio_within_the_tolerance_band_is_tolerance() -> None:
    d = run(current=3, pod_metrics_=cpu(3, "520m"))  # 52% at a 50% target: ratio 1.04
    assert (d.desired_replicas, limiting_step(d)) == (3, "tolerance")


def test_a_higher_recent_recommendation_is_stabilization() -> None:
    history = {"recommendations": [{"replicas": 5, "timestamp": "2026-01-01T11:59:00Z"}]}
    d = run(current=5, pods=None, pod_metrics_=cpu(5, "100m"), history=history)
    assert d.desired_replicas == 5
    assert limiting_step(d) == "stabilization"


def test_a_rate_policy_that_caps_a_scale_up_is_policy() -> None:
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}  # fmt: skip
    d = run(current=3, pod_metrics_=cpu(3, "1"), behavior=behavior)
    assert (d.desired_replicas, limiting_step(d)) == (4, "policy")


def test_max_replicas_that_caps_a_scale_up_is_max() -> None:
    d = run(current=3, pod_metrics_=cpu(3, "1"), max_replicas=4)
    assert (d.desired_replicas, limiting_step(d)) == (4, "max")


def test_min_replicas_that_holds_a_scale_down_is_min() -> None:
    d = run(current=3, pod_metrics_=cpu(3, "10m"), min_replicas=2, history={"recommendations": []})
    assert (d.desired_replicas, limiting_step(d)) == (2, "min")


def test_a_count_below_min_without_metrics_is_min() -> None:
    d = run(current=1, min_replicas=3)
    assert (d.desired_replicas, limiting_step(d)) == (3, "min")


def test_metrics_that_cannot_be_read_are_metrics_failed_and_proposals_say_which() -> None:
    d = run(current=3, metrics=[external_metric("qps", average="10")], external=[])
    assert limiting_step(d) == "metrics-failed"
    assert proposals(d) == [Proposal(0, "External qps", None)]


def test_zero_replicas_are_disabled() -> None:
    assert limiting_step(run(current=0, pods=[])) == "disabled"


def test_proposals_name_each_metric_in_spec_order() -> None:
    d = run(current=2, metrics=[cpu_metric(50), external_metric("qps", average="10")],
            pod_metrics_=cpu(2, "1"), external=[("qps", "30")])  # fmt: skip
    assert proposals(d) == [Proposal(0, "Resource cpu", 4), Proposal(1, "External qps", 3)]


def test_explain_names_the_limiting_step() -> None:
    s = snapshot(current=3, pod_metrics_=cpu(3, "1"), max_replicas=4)
    d = decide(parse_snapshot(s))
    assert "limiting step: max" in explain(parse_snapshot(s), d)
