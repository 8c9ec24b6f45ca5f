"""The admission webhook of promhpa's own kind on plain data: the API server's Status."""

from __future__ import annotations

from typing import Any

from controller.engine.model import FeatureGates
from controller.engine.model import Settings
from controller.live.admission import refusal

TARGET = {"type": "AverageValue", "averageValue": "10"}
EXTERNAL = {"type": "External", "external": {"metric": {"name": "q"}, "target": TARGET}}


def ours(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.promhpa.io/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 5, "metrics": [EXTERNAL], **spec},
    }  # fmt: skip


def test_a_valid_object_is_admitted() -> None:
    assert refusal(ours(), Settings()) is None


def test_an_invalid_object_is_refused_as_the_api_server_refuses_one_with_each_cause() -> None:
    status = refusal(ours(minReplicas=4, maxReplicas=2), Settings())
    assert status is not None
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.maxReplicas",
         "message": "Invalid value: 2: must be greater than or equal to `minReplicas`"},
    ]  # fmt: skip
    assert status["message"] == (
        'HorizontalPodAutoscaler.autoscaling.promhpa.io "web" is invalid: '
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
    )


def test_min_replicas_zero_is_admitted_whatever_the_clusters_gate() -> None:
    gate_off = Settings(feature_gates=FeatureGates(hpa_scale_to_zero=False))
    assert refusal(ours(minReplicas=0), gate_off) is None


def test_a_knob_the_schema_cannot_judge_is_refused_naming_it() -> None:
    status = refusal(ours(controller={"release": "1.40"}), Settings())
    assert status is not None
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.controller.release"]
