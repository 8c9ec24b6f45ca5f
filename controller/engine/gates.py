"""Upstream's feature gates that change HPA decisions, with each release's defaults.

| gate | 1.33 | 1.34 | 1.35 | 1.36 | 1.37 | 1.38 |
|---|---|---|---|---|---|---|
| HPAConfigurableTolerance | alpha, off | alpha, off | beta, on | beta, on | GA, locked on | GA, locked on |
| HPAScaleToZero | alpha, off | alpha, off | alpha, off | alpha, off | beta, on | beta, on |
| HPAGeneration | -- | -- | -- | -- | beta, on | GA, locked on |
| HPAOptimizedSelectorStore | -- | -- | -- | -- | beta, on | beta, on |
| PodLevelResources | alpha, off | beta, on | beta, on | beta, on | beta, on | beta, on |
| StaleControllerConsistencyHPA | -- | -- | -- | -- | beta, on | beta, on |

What each changes: per-direction ``behavior.*.tolerance``; from 1.36, the ScaledToZero
condition; ``status.observedGeneration``; which two HPAs AmbiguousSelector names; from
1.34, pod-level requests as a utilization's denominator.

(``--`` : the release does not know the gate; its kube-controller-manager refuses it.)

``parse_gates`` reads kube-controller-manager's ``--feature-gates`` syntax
(``Name=bool,...``) into the values it sets; ``resolve`` applies them to a release's
defaults with kcm's errors: a locked gate cannot be changed and a gate the release does not
know is refused. Gates that do not concern the HPA are accepted and returned separately, so
a kcm command line can be reused as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .model import FeatureGates
from .versions import Release

# name -> (FeatureGates attribute, {minor: (default, locked)}); a minor absent: unknown gate
_ALPHA_OFF, _BETA_ON, _LOCKED_ON = (False, False), (True, False), (True, True)
GATES: dict[str, tuple[str, dict[int, tuple[bool, bool]]]] = {
    "HPAConfigurableTolerance": (
        "hpa_configurable_tolerance",
        {33: _ALPHA_OFF, 34: _ALPHA_OFF, 35: _BETA_ON, 36: _BETA_ON, 37: _LOCKED_ON, 38: _LOCKED_ON},
    ),
    "HPAScaleToZero": (
        "hpa_scale_to_zero",
        {33: _ALPHA_OFF, 34: _ALPHA_OFF, 35: _ALPHA_OFF, 36: _ALPHA_OFF, 37: _BETA_ON, 38: _BETA_ON},
    ),
    "HPAGeneration": ("hpa_generation", {37: _BETA_ON, 38: _LOCKED_ON}),
    "HPAOptimizedSelectorStore": ("hpa_optimized_selector_store", {37: _BETA_ON, 38: _BETA_ON}),
    "PodLevelResources": (
        "pod_level_resources",
        {33: _ALPHA_OFF, 34: _BETA_ON, 35: _BETA_ON, 36: _BETA_ON, 37: _BETA_ON, 38: _BETA_ON},
    ),
    "StaleControllerConsistencyHPA": (
        "stale_controller_consistency_hpa",
        {37: _BETA_ON, 38: _BETA_ON},
    ),
}
_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}


NEWEST_RELEASE = Release()


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


def defaults(rel: Release = NEWEST_RELEASE) -> FeatureGates:
    """The release's own defaults; a gate it does not know is off (its behaviour is absent)."""
    values = {attr: per.get(rel.minor, (False, False))[0] for attr, per in GATES.values()}
    return FeatureGates(**values)


def known(rel: Release) -> list[str]:
    return [name for name, (_, per) in GATES.items() if rel.minor in per]


def resolve(rel: Release, wanted: Mapping[str, bool], *, strict: bool = True) -> FeatureGates:
    """The release's defaults with ``wanted`` applied. ``strict`` (a command line): a
    locked or unknown gate is kcm's error; otherwise (a snapshot) such values are ignored,
    as the release's controller would never have run with them."""
    gates = defaults(rel)
    for name, value in wanted.items():
        attr, per = GATES[name]
        if rel.minor not in per:
            if strict:
                raise GateError(f"unrecognized feature gate: {name} (Kubernetes {rel} does not have it)")
            continue
        default, locked = per[rel.minor]
        if locked and value != default:
            if strict:
                raise GateError(
                    f"cannot set feature gate {name} to {str(value).lower()}, "
                    f"feature is locked to {str(default).lower()}"
                )
            continue
        gates = replace(gates, **{attr: value})
    return gates


def parse_gates(text: str) -> tuple[dict[str, bool], list[str]]:
    """The decision gates a ``--feature-gates`` value sets, and the names it sets that are not ours."""
    wanted: dict[str, bool] = {}
    others: list[str] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        component, colon, gate = name.strip().partition(":")
        if colon:  # kcm 1.37's per-component form, kube:Name=bool
            if component != "kube":
                others.append(name.strip())
                continue
            name = gate
        name = name.strip()
        if not sep:
            raise GateError(f"missing bool value for {name}")
        v = _bool(name, value.strip())
        if name in GATES:
            wanted[name] = v
        else:
            others.append(name)
    return wanted, others


def gates_to_wire(gates: FeatureGates, rel: Release = NEWEST_RELEASE) -> dict[str, bool]:
    """The release's known gates and their values (what a snapshot records)."""
    return {name: bool(getattr(gates, GATES[name][0])) for name in known(rel)}
