"""An HPA spec checked as the API server checks one, before replay reads any history (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine.hpa_validation import validate_hpa
from tests.controller.replay.hpa_table import BASE
from tests.controller.replay.hpa_table import changed

HPA = BASE


def test_a_valid_hpa_has_no_problem() -> None:
    assert validate_hpa(HPA) == []


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("maxReplicas", -3, "spec.maxReplicas: Invalid value: -3: must be greater than or equal to 1"),
        ("maxReplicas", 0, "spec.maxReplicas: Required value"),
        (
            "minReplicas",
            20,
            "spec.maxReplicas: Invalid value: 10: must be greater than or equal to `minReplicas`",
        ),
        (
            "behavior.scaleUp.selectPolicy",
            "Bogus",
            'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Bogus": '
            'supported values: "Disabled", "Max", "Min"',
        ),
        (
            "metrics.0.type",
            "Bogus",
            'spec.metrics[0].type: Unsupported value: "Bogus": '
            'supported values: "ContainerResource", "External", "Object", "Pods", "Resource"',
        ),
        (
            "metrics.0.pods.target.averageValue",
            "abc",
            'spec.metrics[0].pods.target.averageValue: Invalid value: "abc"',
        ),
        (
            "metrics.0.pods.target.averageValue",
            "-0.1",
            'averageValue: Invalid value: "-100m": must be positive',
        ),
        (
            "metrics.1.resource.target.averageUtilization",
            0,
            "averageUtilization: Invalid value: 0: must be greater than 0",
        ),
        (
            "behavior.scaleUp.policies.0.periodSeconds",
            3600,
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 3600: "
            "must be less than or equal to 1800",
        ),
        (
            "behavior.scaleUp.policies.0.type",
            "Replicas",
            'policies[0].type: Unsupported value: "Replicas": supported values: "Percent", "Pods"',
        ),
        (
            "minReplicas",
            0,
            "spec.metrics: Forbidden: must specify at least one Object or External metric "
            "to support scaling to zero replicas",
        ),
        (
            "scaleTargetRef.name",
            "a/b",
            """spec.scaleTargetRef.name: Invalid value: "a/b": may not contain '/'""",
        ),
        ("scaleTargetRef.apiVersion", "v1", 'Invalid value: "v1": apiVersion must specify API group'),
    ],
)
def test_what_the_api_server_refuses_is_refused_in_its_words(path: str, value: Any, said: str) -> None:
    problems = validate_hpa(changed(path, value))
    assert any(said in p for p in problems), problems


def test_every_problem_is_said_at_once() -> None:
    doc = changed("maxReplicas", -3)
    doc["spec"]["behavior"]["scaleUp"]["selectPolicy"] = "Bogus"
    assert validate_hpa(doc) == [
        "spec.maxReplicas: Invalid value: -3: must be greater than or equal to 1",
        "spec.maxReplicas: Invalid value: -3: must be greater than or equal to `minReplicas`",
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Bogus": '
        'supported values: "Disabled", "Max", "Min"',
    ]


def test_before_scale_to_zero_a_zero_minimum_is_also_below_the_bound() -> None:
    problems = validate_hpa(changed("minReplicas", 0), scale_to_zero=False)
    assert "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1" in problems


def test_a_tolerance_the_cluster_drops_is_not_refused() -> None:
    doc = changed("behavior.scaleUp.tolerance", "-0.1")
    assert validate_hpa(doc, tolerance=False) == []
    assert validate_hpa(doc) == [
        'spec.behavior.scaleUp.tolerance: Invalid value: "-100m": must be greater than or equal to 0'
    ]
