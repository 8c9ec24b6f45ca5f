"""kube-controller-manager's --feature-gates, with Kubernetes v1.37.2's HPA gates (pure)."""

from __future__ import annotations

import pytest

from controller.engine.gates import GateError, gates_to_wire, parse_gates
from controller.engine.model import FeatureGates


def test_defaults_are_v1_37_2s() -> None:
    assert gates_to_wire(FeatureGates()) == {
        "HPAConfigurableTolerance": True,
        "HPAScaleToZero": True,
        "HPAGeneration": True,
        "HPAOptimizedSelectorStore": True,
    }


def test_a_beta_gate_can_be_turned_off() -> None:
    gates, others = parse_gates("HPAScaleToZero=false,HPAGeneration=False")
    assert (gates.hpa_scale_to_zero, gates.hpa_generation, others) == (False, False, [])


def test_a_locked_gate_cannot_be_turned_off_with_kcms_message() -> None:
    with pytest.raises(
        GateError,
        match=r"^cannot set feature gate HPAConfigurableTolerance to false, feature is locked to true$",
    ):
        parse_gates("HPAConfigurableTolerance=false")


def test_a_bad_value_is_kcms_parse_error() -> None:
    with pytest.raises(
        GateError, match=r'invalid value of HPAScaleToZero=maybe, err: strconv.ParseBool: parsing "maybe"'
    ):
        parse_gates("HPAScaleToZero=maybe")


def test_gates_that_do_not_change_hpa_decisions_are_accepted_and_named() -> None:
    gates, others = parse_gates("SidecarContainers=true,HPAScaleToZero=true")
    assert (gates.hpa_scale_to_zero, others) == (True, ["SidecarContainers"])
