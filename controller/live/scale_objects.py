"""A target's ``scale`` subresource, worked out from the target object itself.

The API server answers a GET of ``<resource>/scale`` by converting the stored object to an
``autoscaling/v1`` Scale: for Deployments, ReplicaSets and StatefulSets the selector is
``metav1.LabelSelectorAsSelector(spec.selector).String()``, for ReplicationControllers
``labels.SelectorFromSet(spec.selector).String()``; for a custom resource the CRD's
``subresources.scale`` names the paths of the replicas and the selector. Doing the same
conversion on a watched object gives the same Scale without a request per reconcile.

Every function here answers None whenever the conversion could differ from the server's
(a value of an unexpected type, a selector Go would order in a way we cannot be sure of):
the caller then GETs the scale, so the server's own answer -- or its own error -- decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.selectors import SelectorError, parse_requirements

SCALE_KIND = {"kind": "Scale", "apiVersion": "autoscaling/v1"}
# the ObjectMeta fields the API server copies into a Scale
_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
# (group, version, resource) -> how its selector is held; the built-in scalable resources
LABEL_SELECTOR, LABEL_SET = "labelSelector", "labelSet"
BUILTIN: dict[tuple[str, str, str], str] = {
    ("apps", "v1", "deployments"): LABEL_SELECTOR,
    ("apps", "v1", "replicasets"): LABEL_SELECTOR,
    ("apps", "v1", "statefulsets"): LABEL_SELECTOR,
    ("", "v1", "replicationcontrollers"): LABEL_SET,
}
_OPERATORS = {"In": " in ", "NotIn": " notin ", "Exists": "", "DoesNotExist": ""}
# Go's sort.Sort is an insertion sort -- stable -- up to 12 elements; past that, requirements
# sharing a key could come out in an order we cannot predict
_STABLE_UP_TO = 12


@dataclass(frozen=True)
class ScalePaths:
    """A custom resource version's ``subresources.scale`` (JSON paths like ``.spec.replicas``)."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""


def builtin_essentials(obj: dict[str, Any]) -> dict[str, Any]:
    """What a built-in target's Scale is made of, and nothing else (the informer keeps only
    this: 10,000 Deployments' pod templates are not worth holding)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    kept_spec = {k: spec[k] for k in ("replicas", "selector") if k in spec}
    status = obj.get("status") or {}
    return {
        "metadata": {k: meta[k] for k in _META if k in meta},
        "spec": kept_spec,
        "status": {"replicas": status["replicas"]} if "replicas" in status else {},
    }


def builtin_scale(held: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Scale the API server would answer for this built-in object (None: GET it)."""
    spec = obj.get("spec") or {}
    if held == LABEL_SET:
        selector = label_set_text(spec.get("selector"))
    else:
        selector = label_selector_text(spec.get("selector"))
    replicas: Any = spec.get("replicas")
    status_replicas: Any = (obj.get("status") or {}).get("replicas", 0)
    if selector is None or not _is_int(replicas) or not _is_int(status_replicas):
        return None
    return _scale(obj, int(replicas), int(status_replicas), selector)


def custom_scale(paths: ScalePaths, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Scale the API server would answer for this custom resource (None: GET it).

    As apiextensions-apiserver: a missing replicas field is 0, a missing selector "", and a
    value of the wrong type is the server's error to report, so that is a GET.
    """
    found, replicas = _at(obj, paths.spec_replicas)
    found_status, status_replicas = _at(obj, paths.status_replicas)
    selector: Any = ""
    if paths.label_selector:
        _, selector = _at(obj, paths.label_selector)
        selector = "" if selector is _MISSING else selector
    replicas = 0 if replicas is _MISSING else replicas
    status_replicas = 0 if status_replicas is _MISSING else status_replicas
    if not found or not found_status:  # a path through something that is not an object
        return None
    if not _is_int32(replicas) or not _is_int32(status_replicas) or not isinstance(selector, str):
        return None
    return _scale(obj, replicas, status_replicas, selector)


def label_selector_text(selector: Any) -> str | None:
    """``LabelSelectorAsSelector(s).String()``, or None where it is not certain."""
    if selector is None:
        return ""  # labels.Nothing()
    shown = _label_selector_text(selector)
    if shown is None or shown[1]:
        return None
    return shown[0]


def _label_selector_text(selector: Any) -> tuple[str, bool] | None:
    """The text, and whether Go's order of requirements sharing a key is uncertain (None:
    not a selector Go would accept)."""
    if not isinstance(selector, Mapping):
        return None
    labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(exprs, list):
        return None
    parts: list[tuple[str, str]] = [(str(k), f"{k}={v}") for k, v in sorted(labels.items())]
    for e in exprs:
        op = _OPERATORS.get(str(e.get("operator"))) if isinstance(e, Mapping) else None
        if op is None:
            return None
        key, values = str(e.get("key", "")), [str(v) for v in e.get("values") or []]
        if e["operator"] in ("In", "NotIn"):
            if not values:
                return None
            shown = values[0] if len(values) == 1 else ",".join(sorted(values))
            parts.append((key, f"{key}{op}({shown})"))
        elif values:
            return None
        else:
            parts.append((key, key if e["operator"] == "Exists" else f"!{key}"))
    keys = [k for k, _ in parts]
    uncertain = len(parts) > _STABLE_UP_TO and len(set(keys)) != len(keys)
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0])), uncertain


class ScaleConversionError(Exception):
    """The scale client refuses the Scale (upstream's FailedGetScale, with this message)."""


_NOT_CONVERTIBLE = (
    "received an object from a /scale endpoint which was not convertible to autoscaling Scale: "
    "failed to parse target selector: "
)
_EXPRESSION = {"in": "In", "notin": "NotIn", "exists": "Exists", "!": "DoesNotExist"}


def as_scale_client_returns(scale: dict[str, Any]) -> dict[str, Any]:
    """The Scale as kube-controller-manager's HPA controller receives it.

    client-go's scale client decodes the answer into its internal Scale, whose selector is a
    LabelSelector (``metav1.ParseToLabelSelector``), then converts back to autoscaling/v1
    (``LabelSelectorAsSelector(..).String()``): a selector that does not parse, or uses an
    operator a LabelSelector cannot hold (``!=``, ``>``, ``<``), fails the scale read itself
    (FailedGetScale, not InvalidSelector), and every other one comes back re-written --
    ``b=2,a=1`` as ``a=1,b=2``. Raises ScaleConversionError with the client's message.
    """
    selector = (scale.get("status") or {}).get("selector")
    if not isinstance(selector, str) or not selector:
        return scale
    try:
        requirements = parse_requirements(selector)
    except SelectorError as e:
        raise ScaleConversionError(
            f'{_NOT_CONVERTIBLE}couldn\'t parse the selector string "{selector}": {e}'
        ) from None
    labels: dict[str, str] = {}
    exprs: list[dict[str, Any]] = []
    for r in requirements:
        if r.operator in ("=", "=="):
            labels[r.key] = r.values[0]  # a map: the last one written wins
        elif r.operator in ("gt", "lt"):
            raise ScaleConversionError(
                f'{_NOT_CONVERTIBLE}"{r.operator}" isn\'t supported in label selectors'
            )
        elif r.operator in _EXPRESSION:
            exprs.append({"key": r.key, "operator": _EXPRESSION[r.operator], "values": list(r.values)})
        else:
            raise ScaleConversionError(
                f'{_NOT_CONVERTIBLE}"{r.operator}" is not a valid label selector operator'
            )
    shown = _label_selector_text({"matchLabels": labels, "matchExpressions": exprs})
    text = shown[0] if shown is not None else selector
    if text == selector:
        return scale
    status = {k: v for k, v in scale["status"].items() if k != "selector"}
    if text:
        status["selector"] = text
    return {**scale, "status": status}


def label_set_text(selector: Any) -> str | None:
    """``labels.SelectorFromSet(m).String()``: ``k=v`` pairs sorted by key."""
    if selector is None:
        return ""
    if not isinstance(selector, Mapping):
        return None
    return ",".join(f"{k}={selector[k]}" for k in sorted(selector))


def _scale(obj: Mapping[str, Any], replicas: int, status_replicas: int, selector: str) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    status: dict[str, Any] = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    return {
        **SCALE_KIND,
        "metadata": {k: meta[k] for k in _META if meta.get(k)},
        # ScaleSpec.Replicas is omitempty: a scale of 0 has no field
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


_MISSING: Any = object()


def _at(obj: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """(False, _) when the path runs through a non-object; (True, _MISSING) when absent."""
    node: Any = obj
    for part in path.removeprefix(".").split("."):
        if not isinstance(node, Mapping):
            return False, None
        if part not in node:
            return True, _MISSING
        node = node[part]
    return True, node


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_int32(value: Any) -> bool:
    # apiextensions reads an int64 and keeps int32(value); past int32 we cannot say what it shows
    return _is_int(value) and -(2**31) <= value < 2**31
