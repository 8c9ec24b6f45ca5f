"""An HPA spec checked as the kube-apiserver checks one (autoscaling/v2 validation), before
``replay`` reads a single sample: a spec the API server would refuse is refused here, with
every problem at once, in the API server's words (``spec.maxReplicas: Invalid value: -3:
must be greater than or equal to 1``). Replaying it would answer a question no cluster can
ask: what an HPA that cannot exist would have done.

Pure: a document in, a list of messages out.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from shared.quantity import Quantity, QuantityError

METRIC_TYPES = ("Object", "Pods", "Resource", "ContainerResource", "External")
_SOURCE = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Max", "Min", "Disabled")
POLICY_TYPES = ("Pods", "Percent")
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_SECONDS = 3600


def _invalid(path: str, value: Any, why: str) -> str:
    return f"{path}: Invalid value: {value!r}: {why}"


def _unsupported(path: str, value: Any, allowed: tuple[str, ...]) -> str:
    return f"{path}: Unsupported value: {value!r}: supported values: " + ", ".join(f'"{a}"' for a in allowed)


def _int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_hpa(doc: Any) -> list[str]:
    """Every reason the API server would refuse ``doc`` (an autoscaling/v2 HPA); empty when
    it would accept it."""
    if not isinstance(doc, dict):
        return ["the document is not an object"]
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return ["spec: Required value"]
    out: list[str] = []
    ref = spec.get("scaleTargetRef")
    if not isinstance(ref, dict):
        out.append("spec.scaleTargetRef: Required value")
    else:
        for key in ("kind", "name"):
            if not ref.get(key):
                out.append(f"spec.scaleTargetRef.{key}: Required value")
    low, high = spec.get("minReplicas", 1), spec.get("maxReplicas")
    if high is None:
        out.append("spec.maxReplicas: Required value")
    elif not _int(high) or high < 1:
        out.append(_invalid("spec.maxReplicas", high, "must be greater than or equal to 1"))
    if not _int(low) or low < 0:
        out.append(_invalid("spec.minReplicas", low, "must be greater than or equal to 0"))
    elif _int(high) and high >= 1 and low > high:
        out.append(_invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    metrics = spec.get("metrics") or []
    if not isinstance(metrics, list):
        out.append("spec.metrics: must be a list")
        metrics = []
    for i, m in enumerate(metrics):
        out += _metric(f"spec.metrics[{i}]", m)
    if low == 0 and not any(isinstance(m, dict) and m.get("type") in ("Object", "External") for m in metrics):
        out.append(
            _invalid("spec.minReplicas", 0, "must be greater than or equal to 1 unless an Object or External "
                     "metric is configured (HPAScaleToZero)")
        )  # fmt: skip
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for direction in ("scaleUp", "scaleDown"):
            rules = behavior.get(direction)
            if isinstance(rules, dict):
                out += _rules(f"spec.behavior.{direction}", rules)
    return out


def _metric(path: str, m: Any) -> list[str]:
    if not isinstance(m, dict):
        return [f"{path}: must be an object"]
    kind = m.get("type")
    if kind not in METRIC_TYPES:
        return [_unsupported(f"{path}.type", kind, METRIC_TYPES)]
    key = _SOURCE[kind]
    source = m.get(key)
    if not isinstance(source, dict):
        return [f"{path}.{key}: Required value: must populate information for the given metric source"]
    out = []
    if kind in ("Resource", "ContainerResource"):
        if not source.get("name"):
            out.append(f"{path}.{key}.name: Required value: must specify a resource name")
        if kind == "ContainerResource" and not source.get("container"):
            out.append(f"{path}.{key}.container: Required value: must specify a container")
    else:
        metric = source.get("metric")
        if not isinstance(metric, dict) or not metric.get("name"):
            out.append(f"{path}.{key}.metric.name: Required value: must specify a metric name")
    described = source.get("describedObject")
    if kind == "Object" and not (
        isinstance(described, dict) and described.get("kind") and described.get("name")
    ):
        out.append(f"{path}.object.describedObject: Required value: must specify kind and name")
    out += _target(f"{path}.{key}.target", source.get("target"), kind)
    return out


def _target(path: str, t: Any, kind: str) -> list[str]:
    if not isinstance(t, dict):
        return [f"{path}: Required value"]
    ttype = t.get("type")
    if ttype not in TARGET_TYPES:
        return [_unsupported(f"{path}.type", ttype, TARGET_TYPES)]
    out = []
    field = {"Utilization": "averageUtilization", "Value": "value", "AverageValue": "averageValue"}[ttype]
    if ttype == "Utilization":
        if kind not in ("Resource", "ContainerResource"):
            out.append(_invalid(f"{path}.type", ttype, f"is not supported for {kind} metrics"))
        u = t.get(field)
        if not _int(u) or u < 1:
            out.append(_invalid(f"{path}.averageUtilization", u, "must be greater than 0"))
        return out
    if kind in ("Pods",) and ttype == "Value":
        out.append(_invalid(f"{path}.type", ttype, "must be AverageValue for Pods metrics"))
    raw = t.get(field)
    if raw is None:
        out.append(f"{path}.{field}: Required value: must set {field} for target type {ttype}")
        return out
    try:
        q = Quantity.parse(str(raw))
    except QuantityError as e:
        out.append(_invalid(f"{path}.{field}", raw, f"not a quantity ({e})"))
        return out
    if q.milli_value() <= 0:
        out.append(_invalid(f"{path}.{field}", raw, "must be positive"))
    return out


def _rules(path: str, r: dict[str, Any]) -> list[str]:
    out = []
    window = r.get("stabilizationWindowSeconds")
    if window is not None and (not _int(window) or not 0 <= window <= MAX_STABILIZATION_SECONDS):
        out.append(_invalid(f"{path}.stabilizationWindowSeconds", window,
                            f"must be between 0 and {MAX_STABILIZATION_SECONDS} seconds"))  # fmt: skip
    select = r.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        out.append(_unsupported(f"{path}.selectPolicy", select, SELECT_POLICIES))
    policies = r.get("policies")
    if policies is not None:
        if not isinstance(policies, list) or not policies:
            out.append(f"{path}.policies: Required value: must specify at least one Policy")
        else:
            for i, p in enumerate(policies):
                where = f"{path}.policies[{i}]"
                if not isinstance(p, dict):
                    out.append(f"{where}: must be an object")
                    continue
                if p.get("type") not in POLICY_TYPES:
                    out.append(_unsupported(f"{where}.type", p.get("type"), POLICY_TYPES))
                if not _int(p.get("value")) or p["value"] <= 0:
                    out.append(_invalid(f"{where}.value", p.get("value"), "must be greater than zero"))
                period = p.get("periodSeconds")
                if not (_int(period) and 0 < period <= MAX_PERIOD_SECONDS):
                    why = f"must be greater than zero and less than or equal to {MAX_PERIOD_SECONDS}"
                    out.append(_invalid(f"{where}.periodSeconds", period, why))
    return out
