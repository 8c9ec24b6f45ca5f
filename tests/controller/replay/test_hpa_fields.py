"""``replay --set`` paths and values against the autoscaling/v2 HPA spec (pure)."""

from __future__ import annotations

import pytest

from controller.replay.hpa_fields import FieldError
from controller.replay.hpa_fields import check


@pytest.mark.parametrize(
    ("keys", "value"),
    [
        (["behavior", "scaleDown", "stabilizationWindowSeconds"], 60),
        (["behavior", "scaleUp", "tolerance"], "0.05"),
        (["metrics", 0, "resource", "target", "averageUtilization"], 70),
        (["metrics", 0, "external", "metric", "selector", "matchLabels", "queue"], "jobs"),
        (["minReplicas"], 0),
    ],
)
def test_a_field_of_the_spec_is_accepted(keys: list[str | int], value: object) -> None:
    check(keys, value)


@pytest.mark.parametrize(
    ("keys", "value", "said"),
    [
        (["behaviour"], {}, "spec has no field 'behaviour' (did you mean 'behavior'?)"),
        (
            ["behavior", "scaleDown", "stabilisationWindowSeconds"],
            60,
            "did you mean 'stabilizationWindowSeconds'?",
        ),
        (["maxReplicas"], "ten", "spec.maxReplicas is a whole number, not 'ten'"),
        (["behavior", "scaleUp", "tolerance"], "5 percent", "spec.behavior.scaleUp.tolerance"),
        (["minReplicas", "x"], 1, "spec.minReplicas has no fields"),
    ],
)
def test_a_path_or_value_the_spec_does_not_have_is_refused(
    keys: list[str | int], value: object, said: str
) -> None:
    with pytest.raises(FieldError) as e:
        check(keys, value)
    assert said in str(e.value)
