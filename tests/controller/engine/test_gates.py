"""kube-controller-manager's --feature-gates, with each supported release's HPA gates (pure)."""

from __future__ import annotations

import pytest

from controller.engine.gates import GateError
from controller.engine.gates import defaults
from controller.engine.gates import gates_to_wire
from controller.engine.gates import parse_gates
from controller.engine.gates import resolve
from controller.engine.model import FeatureGates
from controller.engine.versions import Release


def test_defaults_are_the_newest_releases() -> None:
    assert gates_to_wire(FeatureGates()) == {
        "HPAConfigurableTolerance": True,
        "HPAScaleToZero": True,
        "HPAGeneration": True,
        "HPAOptimizedSelectorStore": True,
        "PodLevelResources": True,
        "StaleControllerConsistencyHPA": True,
    }
    assert defaults(Release(37)) == FeatureGates()
    assert defaults(Release(38)) == FeatureGates()


def test_hpa_generation_is_locked_on_from_1_38() -> None:
    with pytest.raises(GateError, match="HPAGeneration"):
        resolve(Release(38), {"HPAGeneration": False})
    assert resolve(Release(37), {"HPAGeneration": False}).hpa_generation is False


@pytest.mark.parametrize(
    ("minor", "wire"),
    [
        (33, {"HPAConfigurableTolerance": False, "HPAScaleToZero": False, "PodLevelResources": False}),
        (34, {"HPAConfigurableTolerance": False, "HPAScaleToZero": False, "PodLevelResources": True}),
        (35, {"HPAConfigurableTolerance": True, "HPAScaleToZero": False, "PodLevelResources": True}),
        (36, {"HPAConfigurableTolerance": True, "HPAScaleToZero": False, "PodLevelResources": True}),
    ],
)
def test_each_release_has_its_own_gates_and_defaults(minor: int, wire: dict[str, bool]) -> None:
    rel = Release(minor)
    assert gates_to_wire(defaults(rel), rel) == wire


def test_a_beta_gate_can_be_turned_off() -> None:
    wanted, others = parse_gates("HPAScaleToZero=false,HPAGeneration=False")
    gates = resolve(Release(37), wanted)
    assert (gates.hpa_scale_to_zero, gates.hpa_generation, others) == (False, False, [])


def test_an_alpha_gate_can_be_turned_on_in_an_older_release() -> None:
    gates = resolve(Release(34), parse_gates("HPAConfigurableTolerance=true")[0])
    assert gates.hpa_configurable_tolerance is True


def test_a_locked_gate_cannot_be_turned_off_with_kcms_message() -> None:
    with pytest.raises(
        GateError,
        match=r"^cannot set feature gate HPAConfigurableTolerance to false, feature is locked to true$",
    ):
        resolve(Release(37), parse_gates("HPAConfigurableTolerance=false")[0])
    # before 1.37 the gate is beta and can be turned off
    assert resolve(Release(36), {"HPAConfigurableTolerance": False}).hpa_configurable_tolerance is False


def test_a_gate_the_release_does_not_have_is_refused_on_a_command_line() -> None:
    with pytest.raises(GateError, match=r"^unrecognized feature gate: HPAGeneration \(Kubernetes 1.35"):
        resolve(Release(35), {"HPAGeneration": True})


def test_a_snapshot_gate_the_release_does_not_have_is_ignored() -> None:
    gates = resolve(Release(35), {"HPAGeneration": True, "HPAConfigurableTolerance": False}, strict=False)
    assert (gates.hpa_generation, gates.hpa_configurable_tolerance) == (False, False)


def test_a_bad_value_is_kcms_parse_error() -> None:
    with pytest.raises(
        GateError, match=r'invalid value of HPAScaleToZero=maybe, err: strconv.ParseBool: parsing "maybe"'
    ):
        parse_gates("HPAScaleToZero=maybe")


def test_gates_that_do_not_change_hpa_decisions_are_accepted_and_named() -> None:
    wanted, others = parse_gates("SidecarContainers=true,HPAScaleToZero=true")
    assert (wanted, others) == ({"HPAScaleToZero": True}, ["SidecarContainers"])
