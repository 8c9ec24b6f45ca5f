"""The fields of an autoscaling/v2 HorizontalPodAutoscaler spec, for ``replay --set``.

A misspelt path (``behaviour.scaleDown...``) used to add a key the engine ignores, so
variant B equalled A and the replay said "no difference". Every ``--set`` path is checked
against the API's fields -- and its value against the field's type -- before anything is
queried, with "did you mean" for a near miss.
"""

from __future__ import annotations

import difflib
from typing import Any

from shared.quantity import Quantity, QuantityError

# a field: a nested object (dict), a list of one (a 1-tuple), "map" (any keys), or a type
_SELECTOR = {
    "matchLabels": "map",
    "matchExpressions": ({"key": "str", "operator": "str", "values": ("str",)},),
}
_IDENTIFIER = {"name": "str", "selector": _SELECTOR}
_TARGET = {"type": "str", "value": "quantity", "averageValue": "quantity", "averageUtilization": "int"}
_CROSS = {"apiVersion": "str", "kind": "str", "name": "str"}
_RULES = {
    "stabilizationWindowSeconds": "int",
    "selectPolicy": "str",
    "policies": ({"type": "str", "value": "int", "periodSeconds": "int"},),
    "tolerance": "quantity",
}
SPEC: dict[str, Any] = {
    "scaleTargetRef": _CROSS,
    "minReplicas": "int",
    "maxReplicas": "int",
    "metrics": (
        {
            "type": "str",
            "object": {"describedObject": _CROSS, "metric": _IDENTIFIER, "target": _TARGET},
            "pods": {"metric": _IDENTIFIER, "target": _TARGET},
            "resource": {"name": "str", "target": _TARGET},
            "containerResource": {"name": "str", "container": "str", "target": _TARGET},
            "external": {"metric": _IDENTIFIER, "target": _TARGET},
        },
    ),
    "behavior": {"scaleUp": _RULES, "scaleDown": _RULES},
}


class FieldError(ValueError):
    """A path or value the HPA spec does not have."""


def check(keys: list[str | int], value: Any) -> None:
    """Raise FieldError unless ``keys`` name a field of an HPA spec and ``value`` fits it."""
    node: Any = SPEC
    walked: list[str] = []
    for key in keys:
        if isinstance(key, int):
            if not isinstance(node, tuple):
                raise FieldError(f"spec.{'.'.join(walked)} is not a list")
            node = node[0]
            walked[-1] += f"[{key}]"
            continue
        if node == "map":
            walked.append(key)
            node = "str"
            continue
        if not isinstance(node, dict):
            raise FieldError(f"spec.{'.'.join(walked)} has no fields")
        if key not in node:
            hint = difflib.get_close_matches(key, sorted(node), n=1)
            where = f"spec.{'.'.join(walked)}" if walked else "spec"
            raise FieldError(
                f"{where} has no field {key!r}"
                + (f" (did you mean {hint[0]!r}?)" if hint else f" (fields: {', '.join(sorted(node))})")
            )
        walked.append(key)
        node = node[key]
    _check_value(f"spec.{'.'.join(walked)}", node, value)


def _check_value(path: str, kind: Any, value: Any) -> None:
    if kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
        raise FieldError(f"{path} is a whole number, not {value!r}")
    if kind == "str" and not isinstance(value, str):
        raise FieldError(f"{path} is a string, not {value!r}")
    if kind == "quantity" and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
        raise FieldError(f"{path} is a quantity such as 500m or 0.05, not {value!r}")
    if kind == "quantity" and isinstance(value, str):
        try:
            Quantity.parse(value)
        except QuantityError as e:
            raise FieldError(f"{path}: {e}") from None
