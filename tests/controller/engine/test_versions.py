"""Deciding as each supported Kubernetes release: version strings, and the rules that
differ between 1.33 and 1.38 on plain snapshots (the differential test holds every rule
to upstream's code of each release)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.reader import SnapshotError
from controller.engine.versions import Release
from controller.engine.versions import VersionError
from controller.engine.versions import nearest
from controller.engine.versions import parse_minor
from localcluster.manifests import object_metric
from tests.controller.engine.builders import external_metric
from tests.controller.engine.builders import pod
from tests.controller.engine.builders import snapshot


def as_release(snap: dict[str, Any], minor: int) -> dict[str, Any]:
    snap["controller"] = {**snap["controller"], "kubernetesVersion": f"1.{minor}"}
    return snap


@pytest.mark.parametrize(
    ("text", "minor"),
    [("1.35", 35), ("v1.35", 35), ("v1.35.4", 35), ("v1.34.4-eks-1a2b3c", 34), ("kube=1.33", 33)],
)
def test_every_spelling_of_a_version_reads_as_its_minor(text: str, minor: int) -> None:
    assert parse_minor(text) == minor


def test_a_version_that_is_not_one_is_an_error_naming_the_forms() -> None:
    with pytest.raises(VersionError, match=r"'1\.x' is not a Kubernetes version: use 1\.MINOR"):
        parse_minor("1.x")


def test_a_release_outside_the_range_decides_as_the_nearest_with_a_warning() -> None:
    rel, warning = nearest(30)
    assert rel == Release(33)
    assert warning is not None
    assert "older than the oldest release promhpa decides as (1.33)" in warning
    rel, warning = nearest(40)
    assert rel == Release(38)
    assert warning is not None
    assert "newer than the newest release promhpa decides as (1.38)" in warning
    assert nearest(35) == (Release(35), None)


def test_a_snapshot_without_a_version_decides_as_the_snapshot_formats_release() -> None:
    """specs/hpa-snapshot.md documents v1.37.2's defaults: an unmarked snapshot keeps its answer."""
    assert parse_snapshot(snapshot()).settings.release == Release(37)


def test_a_snapshot_with_a_bad_version_names_the_field() -> None:
    snap = snapshot(controller={"kubernetesVersion": "one-thirty-five"})
    with pytest.raises(SnapshotError, match=r"controller\.kubernetesVersion"):
        parse_snapshot(snap)


def zero_replicas_min_zero(minor: int) -> dict[str, Any]:
    snap = snapshot(
        current=0, min_replicas=0, metrics=[external_metric(value="10")], external=[("qps", "25")], pods=[]
    )
    return as_release(snap, minor)


def test_up_to_1_35_zero_replicas_with_min_zero_still_compute_metrics() -> None:
    d = decide(parse_snapshot(zero_replicas_min_zero(35)))
    assert (d.rescale, d.desired_replicas) == (True, 3)


def test_from_1_36_zero_replicas_the_hpa_did_not_cause_disable_scaling() -> None:
    for minor in (36, 37):
        d = decide(parse_snapshot(zero_replicas_min_zero(minor)))
        assert d.rescale is False
        reasons = {c["type"]: c["reason"] for c in d.status["conditions"]}
        assert reasons["ScalingActive"] == "ScalingDisabled"


def test_before_1_36_no_scaled_to_zero_condition_is_written() -> None:
    snap = as_release(
        snapshot(current=3, metrics=[external_metric(value="10")], external=[("qps", "60")]), 35
    )
    d = decide(parse_snapshot(snap))
    assert d.rescale
    assert "ScaledToZero" not in {c["type"] for c in d.status["conditions"]}


def memory_usage(minor: int) -> str:
    metric = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}},
    }
    pods = [pod(f"web-{i}") for i in range(2)]
    usage = [
        {
            "metadata": {"name": f"web-{i}", "namespace": "ns"},
            "timestamp": "2026-01-01T12:00:00Z",
            "window": "1m0s",
            "containers": [{"name": "app", "usage": {"memory": "64Mi"}}],
        }
        for i in range(2)
    ]
    snap = as_release(snapshot(current=2, metrics=[metric], pods=pods, pod_metrics_=usage), minor)
    d = decide(parse_snapshot(snap))
    return str(d.status["currentMetrics"][0]["resource"]["current"]["averageValue"])


def test_memory_usage_is_binary_si_from_1_34_and_decimal_si_before() -> None:
    assert memory_usage(34) == "64Mi"
    assert memory_usage(33) == str(64 * 1024 * 1024)


def ambiguous(minor: int) -> str:
    snap = as_release(snapshot(selectingHPAs=["ns/web", "ns/other", "ns/third"]), minor)
    d = decide(parse_snapshot(snap))
    return next(c["message"] for c in d.status["conditions"] if c["reason"] == "AmbiguousSelector")


def test_ambiguous_selector_names_every_hpa_before_1_37_and_two_from_it() -> None:
    assert (
        ambiguous(36)
        == "pods by selector app=web are controlled by multiple HPAs: [ns/web ns/other ns/third]"
    )
    assert (
        ambiguous(37)
        == "pods by selector app=web are controlled by more than one HPA (e.g. [ns/web ns/other])"
    )


def object_error(minor: int) -> str:
    metric = object_metric("rps", "Service", "front", "10")
    snap = as_release(
        snapshot(metrics=[metric], metricErrors=[{"source": "Object", "name": "rps", "message": "boom"}]),
        minor,
    )
    d = decide(parse_snapshot(snap))
    return next(e.message for e in d.events if e.reason == "FailedGetObjectMetric")


def test_the_object_metric_error_reads_as_each_release_words_it() -> None:
    fetch = "unable to fetch metrics from custom metrics API: boom"
    assert object_error(37).endswith(f"unable to get metric rps on Service ns/front: {fetch}")
    assert object_error(36).endswith(f"unable to get metric rps: Service on ns front/{fetch}")


def test_before_1_37_a_conditions_observed_generation_is_not_carried() -> None:
    cond = {
        "type": "ScalingLimited",
        "status": "False",
        "reason": "DesiredWithinRange",
        "message": "earlier",
        "lastTransitionTime": "2026-01-01T11:00:00Z",
        "observedGeneration": 3,
    }
    for minor, kept in ((36, False), (37, True)):
        snap = as_release(snapshot(conditions=[dict(cond)], metrics=[external_metric(value="10")],
                                   external=[("qps", "30")]), minor)  # fmt: skip
        d = decide(parse_snapshot(snap))
        limited = next(c for c in d.status["conditions"] if c["type"] == "ScalingLimited")
        assert ("observedGeneration" in limited) is kept


def container_missing(minor: int) -> Any:
    metric = {
        "type": "ContainerResource",
        "containerResource": {
            "name": "cpu",
            "container": "sidecar",
            "target": {"type": "Utilization", "averageUtilization": 50},
        },
    }
    both = [
        {"name": "app", "resources": {"requests": {"cpu": "1"}}},
        {"name": "sidecar", "resources": {"requests": {"cpu": "1"}}},
    ]
    pods = [pod("web-0", containers=both), pod("web-1")]  # web-1 has no sidecar
    usage = [
        {
            "metadata": {"name": "web-0", "namespace": "ns"},
            "timestamp": "2026-01-01T12:00:00Z",
            "window": "1m0s",
            "containers": [{"name": "sidecar", "usage": {"cpu": "900m"}}],
        }
    ]
    snap = as_release(snapshot(current=2, metrics=[metric], pods=pods, pod_metrics_=usage), minor)
    return decide(parse_snapshot(snap))


def test_a_container_a_pod_lacks_is_an_error_from_1_35_and_a_zero_request_before() -> None:
    new, old = container_missing(35), container_missing(34)
    assert any("container sidecar not found in Pod web-1" in e.message for e in new.events)
    assert not any(e.type == "Warning" for e in old.events)


def negative_external_total(minor: int) -> Any:
    metric = external_metric("queue_depth", average="1")
    snap = snapshot(current=4, metrics=[metric], external=[("queue_depth", "-1260m")])
    return decide(parse_snapshot(as_release(snap, minor)))


def test_a_negative_external_total_proposes_below_zero_in_1_33_and_scales_to_min() -> None:
    # 1.33 divides the total as it is: ceil(-1.26 / 1) = -1, a proposal like any other,
    # which the controller's max with 0 turns into "All metrics below target"
    d = negative_external_total(33)
    assert (d.desired_replicas, d.rescale) == (1, True)
    assert [(e.type, e.reason, e.message) for e in d.events] == [
        ("Normal", "SuccessfulRescale", "New size: 1; reason: All metrics below target")
    ]


def test_from_1_34_a_negative_external_total_is_taken_for_an_overflow() -> None:
    # MaxInt32 proposed, then held to the default scale-up rate: max(2 x 4, 4 + 4) = 8
    d = negative_external_total(34)
    assert (d.desired_replicas, d.rescale) == (8, True)
    assert d.events[0].message.startswith("New size: 8; reason: external metric queue_depth(")
