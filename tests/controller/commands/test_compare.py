"""``compare --kind phpa``: an object of promhpa's kind beside its built-in twin, on plain data."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.commands.common import DecisionFlags
from controller.commands.compare import own_kind_comparison
from tests.controller.engine.builders import external_metric
from tests.controller.engine.builders import snapshot

FLAGS = DecisionFlags(
    horizontal_pod_autoscaler_sync_period=timedelta(seconds=15),
    horizontal_pod_autoscaler_tolerance=0.1,
    horizontal_pod_autoscaler_downscale_stabilization=timedelta(minutes=5),
    horizontal_pod_autoscaler_cpu_initialization_period=timedelta(minutes=5),
    horizontal_pod_autoscaler_initial_readiness_delay=timedelta(seconds=30),
    feature_gates={},
    emulated_version=None,
)


def own(knobs: dict[str, Any] | None, value: str = "36", current: int = 3, **spec: Any) -> dict[str, Any]:
    s = snapshot(current=current, metrics=[external_metric("qps", average="10")], external=[("qps", value)],
                 history={"recommendations": []})  # fmt: skip
    s["hpa"]["apiVersion"] = "autoscaling.promhpa.io/v2"
    s["hpa"]["spec"].update(spec)
    if knobs is not None:
        s["hpa"]["spec"]["controller"] = knobs
    return dict(s)


def test_an_object_without_knobs_decides_as_its_built_in_twin() -> None:
    item = own_kind_comparison(own(None), FLAGS)
    assert (item["desiredReplicas"], item["builtInDesiredReplicas"], item["differences"]) == (4, 4, [])


def test_a_knob_that_changes_the_decision_is_a_difference_naming_it() -> None:
    item = own_kind_comparison(own({"tolerance": 0.25}), FLAGS)  # ratio 1.2: within 25 %, not 10 %
    assert (item["desiredReplicas"], item["builtInDesiredReplicas"]) == (3, 4)
    assert item["knobs"] == ["tolerance"]
    assert item["differences"][0] == "desiredReplicas: promhpa 3, built-in 4"


def test_the_twin_decides_under_the_clusters_scale_to_zero_gate() -> None:
    """The kind takes minReplicas 0 whatever the gate; on a 1.36 cluster, whose gate is off
    by default, the built-in controller scales to zero too but never says ScaledToZero."""
    doc = own({}, value="0", current=2, minReplicas=0)
    doc["controller"] = {"kubernetesVersion": "1.36", "featureGates": {"HPAScaleToZero": True}}
    item = own_kind_comparison(doc, FLAGS)
    assert (item["desiredReplicas"], item["builtInDesiredReplicas"]) == (0, 0)
    ours = {c["type"] for c in item["status"]["conditions"]}
    twins = {c["type"] for c in item["builtInStatus"]["conditions"]}
    assert ours - twins == {"ScaledToZero"}
    assert any("ScaledToZero" in d for d in item["differences"]), item["differences"]
