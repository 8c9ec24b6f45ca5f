"""spec.controller: kube-controller-manager's flags per object of promhpa's own kind."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.knobs import PAUSED_REASON
from controller.engine.knobs import parse_knobs
from controller.engine.model import Settings
from controller.engine.reader import SnapshotError

from .builders import external_metric
from .builders import snapshot

QPS = [external_metric("qps", average="10")]


def with_knobs(knobs: dict[str, Any] | None, *, value: str | None = "36", current: int = 3,
               history: dict[str, Any] | None = None) -> Any:  # fmt: skip
    s = snapshot(current=current, metrics=QPS, external=[("qps", value)] if value else [],
                 history=history or {"recommendations": []})  # fmt: skip
    if knobs is not None:
        s["hpa"]["apiVersion"] = "autoscaling.promhpa.io/v2"
        s["hpa"]["spec"]["controller"] = knobs
    return parse_snapshot(s)


def conditions(d: Any) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in d.status.get("conditions", [])}


def test_an_object_without_the_block_decides_with_the_controllers_settings() -> None:
    assert with_knobs(None).settings == with_knobs({}).settings
    assert decide(with_knobs(None)).desired_replicas == 4  # 36 / 10 per replica


def test_the_tolerance_knob_replaces_the_controllers_default_tolerance() -> None:
    assert decide(with_knobs({"tolerance": 0.25})).desired_replicas == 3  # ratio 1.2 is within 25 %


def test_the_stabilization_knob_lets_a_scale_down_through_at_once() -> None:
    history = {"recommendations": [{"replicas": 6, "timestamp": "2026-01-01T11:59:00Z"}]}
    held = decide(with_knobs({}, value="30", current=6, history=history))
    now = decide(with_knobs({"downscaleStabilizationWindow": "0s"}, value="30", current=6, history=history))
    assert (held.desired_replicas, now.desired_replicas) == (6, 3)


def test_the_release_knob_decides_as_that_release_with_its_gate_defaults() -> None:
    s = with_knobs({"release": "1.34"})
    assert (s.settings.release.minor, s.settings.feature_gates.hpa_configurable_tolerance) == (34, False)


def test_a_release_outside_the_supported_range_is_refused_naming_the_field() -> None:
    with pytest.raises(SnapshotError, match=r"hpa\.spec\.controller\.release: '1\.31'"):
        with_knobs({"release": "1.31"})


def test_an_unknown_knob_is_refused_naming_it() -> None:
    with pytest.raises(SnapshotError, match=r"hpa\.spec\.controller\.syncPeriods"):
        with_knobs({"syncPeriods": "5s"})


@pytest.mark.parametrize(("knob", "value"), [("syncPeriod", "500ms"), ("initialReadinessDelay", "-1s"),
                                             ("tolerance", -0.5)])  # fmt: skip
def test_a_bad_value_is_refused_naming_the_knob(knob: str, value: Any) -> None:
    with pytest.raises(SnapshotError, match=rf"hpa\.spec\.controller\.{knob}"):
        with_knobs({knob: value})


def test_the_sync_period_knob_is_read_as_a_duration() -> None:
    _, knobs = parse_knobs({"controller": {"syncPeriod": "2s"}}, Settings())
    assert knobs.sync_period == timedelta(seconds=2)


def test_paused_holds_the_count_and_says_so_in_a_condition() -> None:
    d = decide(with_knobs({"paused": True}))
    assert (d.desired_replicas, d.rescale, d.events) == (3, False, [])
    assert conditions(d)["ScalingActive"] == ("False", PAUSED_REASON)
    assert d.status["desiredReplicas"] == 3


def test_the_fallback_knob_stands_in_for_a_failed_metric_as_the_annotation_does() -> None:
    failing = {"recommendations": [], "fallback": {"failingSince": "2026-01-01T11:58:00Z"}}
    s = snapshot(current=3, metrics=QPS, history=failing)
    s["hpa"]["spec"]["controller"] = {"fallback": {"replicas": 6, "failureDurationSeconds": 60}}
    d = decide(parse_snapshot(s))
    assert (d.desired_replicas, d.rescale) == (6, True)


def test_a_bad_fallback_knob_names_its_field() -> None:
    with pytest.raises(SnapshotError, match=r"hpa\.spec\.controller\.fallback\.replicas"):
        with_knobs({"fallback": {"policy": "Static"}})


def test_an_object_of_our_kind_scales_to_zero_whatever_the_gates_say() -> None:
    gate_off = {"kubernetesVersion": "1.35", "featureGates": {"HPAScaleToZero": False}}
    s = snapshot(current=3, metrics=QPS, external=[("qps", "36")], controller=gate_off)
    builtin = parse_snapshot(s)
    s["hpa"]["apiVersion"] = "autoscaling.promhpa.io/v2"
    ours = parse_snapshot(s)
    assert (
        builtin.settings.feature_gates.hpa_scale_to_zero,
        ours.settings.feature_gates.hpa_scale_to_zero,
    ) == (
        False,
        True,
    )
