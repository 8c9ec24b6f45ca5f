"""Upstream's feature gates that change HPA decisions, with Kubernetes v1.37.2's defaults.

| gate | 1.37.2 | what it changes |
|---|---|---|
| HPAConfigurableTolerance | GA, locked on | per-direction ``behavior.*.tolerance`` |
| HPAScaleToZero | beta, on | ``minReplicas: 0`` with Object/External metrics; the ScaledToZero condition |
| HPAGeneration | beta, on | ``status.observedGeneration`` from ``metadata.generation`` (off: dropped) |
| HPAOptimizedSelectorStore | beta, on | AmbiguousSelector names at most two HPAs ("e.g.") |

``parse_gates`` reads kube-controller-manager's ``--feature-gates`` syntax
(``Name=bool,...``): a locked gate cannot be changed and a bad value is an error with
kcm's text; gates that do not concern the HPA are accepted and returned separately, so a
kcm command line can be reused as is.
"""

from __future__ import annotations

from dataclasses import replace

from .model import FeatureGates

# name -> (FeatureGates attribute, default, locked)
GATES: dict[str, tuple[str, bool, bool]] = {
    "HPAConfigurableTolerance": ("hpa_configurable_tolerance", True, True),
    "HPAScaleToZero": ("hpa_scale_to_zero", True, False),
    "HPAGeneration": ("hpa_generation", True, False),
    "HPAOptimizedSelectorStore": ("hpa_optimized_selector_store", True, False),
}
_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


class GateError(ValueError):
    """A --feature-gates value kube-controller-manager would refuse."""


def _bool(name: str, text: str) -> bool:
    """strconv.ParseBool, with kcm's message on failure."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise GateError(
        f'invalid value of {name}={text}, err: strconv.ParseBool: parsing "{text}": invalid syntax'
    )


def set_gate(gates: FeatureGates, name: str, value: bool) -> FeatureGates:
    attr, default, locked = GATES[name]
    if locked and value != default:
        raise GateError(
            f"cannot set feature gate {name} to {str(value).lower()}, "
            f"feature is locked to {str(default).lower()}"
        )
    return replace(gates, **{attr: value})


def parse_gates(text: str) -> tuple[FeatureGates, list[str]]:
    """The gates a ``--feature-gates`` value sets, and the names it sets that are not ours."""
    gates, others = FeatureGates(), []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise GateError(f"missing bool value for {name}")
        if name.strip() in GATES:
            gates = set_gate(gates, name.strip(), _bool(name.strip(), value.strip()))
        else:
            _bool(name.strip(), value.strip())
            others.append(name.strip())
    return gates, others


def gates_to_wire(gates: FeatureGates) -> dict[str, bool]:
    return {name: bool(getattr(gates, attr)) for name, (attr, _, _) in GATES.items()}
