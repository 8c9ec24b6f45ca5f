"""The per-metric arithmetic, at its boundaries."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.replica_calculator import go_fdiv
from localcluster.manifests import object_metric

from .builders import cpu_metric
from .builders import external_metric
from .builders import pod
from .builders import pod_metrics
from .builders import pods_metric
from .builders import snapshot


def run(**kw: Any) -> Any:
    return decide(parse_snapshot(snapshot(**kw)))


def cpu_usage(*milli: str) -> list[dict[str, Any]]:
    return [pod_metrics(f"web-{i}", m) for i, m in enumerate(milli)]


def test_ratio_exactly_at_upper_tolerance_edge_keeps_replicas() -> None:
    # 55% against 50% is a ratio of exactly 1.1: inside the band, no change
    d = run(metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("550m", "550m", "550m"))
    assert (d.desired_replicas, d.rescale) == (3, False)


def test_ratio_just_above_upper_tolerance_edge_scales_up() -> None:
    d = run(metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("560m", "560m", "560m"))
    assert d.desired_replicas == 4  # ceil(1.12 * 3)


def test_ratio_exactly_at_lower_tolerance_edge_keeps_replicas() -> None:
    d = run(metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("450m", "450m", "450m"))
    assert (d.desired_replicas, d.rescale) == (3, False)


def test_ratio_just_below_lower_tolerance_edge_scales_down() -> None:
    d = run(current=10, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage(*["440m"] * 10))
    assert d.desired_replicas == 9  # ceil(0.88 * 10)
    assert d.metrics is not None
    assert d.metrics.outcomes[0].calc is not None
    assert d.metrics.outcomes[0].calc.ratio == pytest.approx(0.88)


def test_utilization_is_truncated_to_an_integer_percentage() -> None:
    # 1000m of 3000m requested is 33.33%, which upstream truncates to 33 before the ratio
    d = run(current=3, metrics=[cpu_metric(30)], pod_metrics_=cpu_usage("334m", "333m", "333m"))
    current = d.status["currentMetrics"][0]["resource"]["current"]
    assert current["averageUtilization"] == 33
    assert d.metrics is not None
    assert d.metrics.outcomes[0].calc is not None
    assert d.metrics.outcomes[0].calc.ratio == 33 / 30


def test_missing_pods_count_at_full_request_on_scale_down() -> None:
    # three pods at 10% and one without metrics, counted at 100%: 1300m of 4000m is 32%,
    # a ratio of 0.64 against 50% -> ceil(0.64 * 4) = 3 (not the 1 the three pods alone suggest)
    d = run(current=4, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("100m", "100m", "100m"))
    assert d.desired_replicas == 3
    calc = d.metrics.outcomes[0].calc if d.metrics else None
    assert calc is not None
    assert calc.groups is not None
    assert calc.groups.missing == {"web-3"}


def test_missing_pods_count_at_target_when_target_exceeds_100_percent() -> None:
    # target 200%: a missing pod is assumed at 200% of its request on a scale-down
    d = run(current=2, metrics=[cpu_metric(200)], pod_metrics_=cpu_usage("500m"))
    assert (d.desired_replicas, d.rescale) == (2, False)


def test_unready_pods_count_at_zero_on_scale_up() -> None:
    pods = [
        pod("web-0"),
        pod("web-1"),
        pod("web-2", ready="False", transition="2026-01-01T11:59:00Z", start="2026-01-01T11:59:00Z"),
    ]
    d = run(current=3, pods=pods, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("1", "1", "1"))
    # first pass 200% on two ready pods; second pass (1000+1000+0)/3000 = 66% -> ceil(1.33*3) = 4
    assert d.desired_replicas == 4


def test_pending_pods_are_unready_and_dropped_on_scale_down() -> None:
    pods = [pod("web-0"), pod("web-1", phase="Pending")]
    d = run(current=2, pods=pods, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("100m", "100m"))
    assert d.desired_replicas == 1


def test_deleted_and_failed_pods_are_ignored() -> None:
    pods = [pod("web-0"), pod("web-1", deleted=True), pod("web-2", phase="Failed")]
    d = run(current=3, pods=pods, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("1", "1", "1"))
    assert d.desired_replicas == 2  # only web-0 counts: ceil(2.0 * 1)


def test_cpu_sample_taken_before_pod_became_ready_is_unready_during_initialization() -> None:
    # started 1m ago (inside the 2m initialization period), ready 30s ago, sample window 1m
    pods = [pod("web-0", start="2026-01-01T11:59:00Z", transition="2026-01-01T11:59:30Z")]
    d = run(current=1, pods=pods, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("1"))
    assert d.rescale is False
    assert d.status["conditions"][1]["reason"] == "FailedGetResourceMetric"


def test_readiness_rules_do_not_apply_to_pods_metrics() -> None:
    pods = [pod("web-0", ready="False", start="2026-01-01T11:59:50Z")]
    m = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    d = run(current=1, pods=pods, metrics=[m], custom=[pods_metric("web-0", "20")])
    assert d.desired_replicas == 2


def test_container_without_request_fails_the_utilization_metric() -> None:
    d = run(current=1, pods=[pod("web-0", cpu_request=None)], pod_metrics_=cpu_usage("1"))
    active = d.status["conditions"][1]
    assert (active["reason"], d.rescale) == ("FailedGetResourceMetric", False)
    assert "missing request for cpu in container app of Pod web-0" in active["message"]


def test_sidecar_init_containers_count_toward_requests() -> None:
    containers = [{"name": "app", "resources": {"requests": {"cpu": "500m"}}}]
    p = pod("web-0", containers=containers)
    p["spec"]["initContainers"] = [
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "migrate", "resources": {"requests": {"cpu": "100m"}}},
    ]
    d = run(current=1, pods=[p], metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("1"))
    assert d.status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 100


def test_object_value_multiplies_ratio_by_ready_pods() -> None:
    m = object_metric("rps", "Service", "svc", "10")
    custom = [
        {
            "describedObject": {"kind": "Service", "name": "svc", "apiVersion": "v1"},
            "metric": {"name": "rps"},
            "timestamp": "2026-01-01T12:00:00Z",
            "value": "20",
        }
    ]
    pods = [pod("web-0"), pod("web-1"), pod("web-2", ready="False")]
    d = run(current=3, pods=pods, metrics=[m], custom=custom)
    assert d.desired_replicas == 4  # ceil(2.0 * 2 ready pods)


def test_external_average_value_divides_total_by_target() -> None:
    d = run(current=3, metrics=[external_metric(average="10")], external=[("qps", "35"), ("qps", "10")])
    assert d.desired_replicas == 5  # ceil(45 / 10)
    assert d.status["currentMetrics"][0]["external"]["current"]["averageValue"] == "15"


def test_external_value_sums_every_series() -> None:
    d = run(current=3, metrics=[external_metric(value="10")], external=[("qps", "10"), ("qps", "10")])
    assert d.desired_replicas == 6  # ceil(20 / 10 * 3 ready pods)


def test_configurable_tolerance_per_direction() -> None:
    behavior = {"scaleUp": {"tolerance": "0.01"}}
    d = run(metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("520m", "520m", "520m"), behavior=behavior)
    assert d.desired_replicas == 4  # 4% above target scales with a 1% scale-up tolerance


def test_configurable_tolerance_gate_is_locked_on_since_1_37() -> None:
    behavior = {"scaleUp": {"tolerance": "0.01"}}
    controller = {"featureGates": {"HPAConfigurableTolerance": False}}
    d = run(
        metrics=[cpu_metric(50)],
        pod_metrics_=cpu_usage("520m", "520m", "520m"),
        behavior=behavior,
        controller=controller,
    )
    assert d.desired_replicas == 4  # GA and locked: a snapshot saying false changes nothing


def test_zero_cpu_initialization_period_is_honoured_not_defaulted() -> None:
    # started 1m ago, ready 30s ago: with a 0s initialization period the pod is past it and counts
    pods = [pod("web-0", start="2026-01-01T11:59:00Z", transition="2026-01-01T11:59:30Z")]
    controller = {"cpuInitializationPeriod": "0s", "initialReadinessDelay": "0s"}
    d = run(
        current=1, pods=pods, metrics=[cpu_metric(50)], pod_metrics_=cpu_usage("1"), controller=controller
    )
    assert d.desired_replicas == 2


def test_a_division_rounds_each_operand_to_a_float64_first_as_go_does() -> None:
    # float64(-9223372036854745727) is -9223372036854746112; divided by 11 that is
    # -838488366986795136 (Go), where the exact quotient rounds to ...795008
    assert go_fdiv(-9223372036854745727, 11) == -838488366986795136.0
