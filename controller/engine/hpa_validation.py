"""An HPA spec checked as the kube-apiserver checks one (autoscaling/v2), in its words.

``replay`` refuses a spec the API server would refuse, with every problem at once, before
it reads a sample: replaying it would answer a question no cluster can ask. The
controller's admission webhook (``controller.live.admission``) refuses an object of
promhpa's own kind with the same messages, as the API server refuses a built-in HPA. The rules,
their order and their messages are the API server's (1.37; `tests/controller/replay/
test_hpa_validation_live.py` holds them against a real one): field paths as it writes
them, values as Go prints them (strings quoted, quantities in canonical form), supported
values sorted. What the API server defaults is defaulted first: a missing ``minReplicas``
is 1, missing scaling rules are the default rules (an empty ``policies`` list is not).

Pure: a document in, a list of messages out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeGuard

from shared.quantity import Quantity, QuantityError

METRIC_SOURCES = {  # metric type -> the field holding its source
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
PRESENCE_ORDER = ("object", "external", "pods", "resource", "containerResource")  # upstream's
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_SECONDS = 3600

STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
STANDARD_RESOURCES = STANDARD_CONTAINER_RESOURCES | {
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "configmaps", "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers",
}  # fmt: skip

_LABEL_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = _DNS_LABEL + "(\\." + _DNS_LABEL + ")*"


def go_quoted(text: str) -> str:
    """A string as Go's %q writes it (for the printable text a spec holds)."""
    return json.dumps(text, ensure_ascii=False)


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return go_quoted(str(value))


def invalid(path: str, value: Any, why: str) -> str:
    return f"{path}: Invalid value: {_shown(value)}: {why}"


def required(path: str, why: str = "") -> str:
    return f"{path}: Required value" + (f": {why}" if why else "")


def forbidden(path: str, why: str) -> str:
    return f"{path}: Forbidden: {why}"


def not_supported(path: str, value: Any, allowed: tuple[str, ...]) -> str:
    return f"{path}: Unsupported value: {_shown(value)}: supported values: " + ", ".join(
        go_quoted(a) for a in sorted(allowed)
    )


def _regex_error(msg: str, pattern: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{pattern}')"


def path_segment_problems(name: str) -> list[str]:
    """Why ``name`` cannot be one segment of a URL path (apimachinery's IsPathSegmentName)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def dns_label_problems(value: str) -> list[str]:
    out = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not re.fullmatch(_DNS_LABEL, value):
        if re.fullmatch(_DNS_SUBDOMAIN, value):
            out.append("must not contain dots")
        else:
            msg = (
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character"
            )
            out.append(_regex_error(msg, _DNS_LABEL, "my-name", "123-abc"))
    return out


def _subdomain_problems(value: str) -> list[str]:
    out = ["must be no more than 253 bytes"] if len(value.encode()) > 253 else []
    if not re.fullmatch(_DNS_SUBDOMAIN, value):
        msg = (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character"
        )
        out.append(_regex_error(msg, _DNS_SUBDOMAIN, "example.com"))
    return out


def qualified_name_problems(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (a label key: an optional DNS subdomain prefix
    and '/', then a name)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]  # fmt: skip
    out: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            out.append("prefix part must be non-empty")
        else:
            out += ["prefix part " + m for m in _subdomain_problems(parts[0])]
    if not name:
        out.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        out.append("name part must be no more than 63 bytes")
    if not re.fullmatch(_LABEL_KEY, name):
        out.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY, "MyName", "my.name", "123-abc"))
    return out


def container_resource_name_problems(path: str, name: str) -> list[str]:
    """A containerResource metric's resource name, as a container's resources are checked."""
    out = [invalid(path, name, m) for m in qualified_name_problems(name)]
    if out:
        return out
    native = "/" not in name or "kubernetes.io/" in name
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not name.startswith(("hugepages-", "requests.hugepages-")):
            out.append(invalid(path, name, "must be a standard resource type or fully qualified"))
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            out.append(invalid(path, name, "must be a standard resource for containers"))
    elif not native and (name.startswith("requests.") or qualified_name_problems("requests." + name)):
        out.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return out


def validate_hpa(doc: Any, scale_to_zero: bool = True, tolerance: bool = True) -> list[str]:
    """Every reason the API server would refuse ``doc`` (an autoscaling/v2 HPA) on create;
    empty when it would accept it. ``scale_to_zero``: the HPAScaleToZero gate is on (then
    minReplicas may be 0); ``tolerance``: the cluster keeps a rule's ``tolerance`` (the
    HPAConfigurableTolerance gate; otherwise the field is dropped, never refused)."""
    if not isinstance(doc, dict):
        return ["the document is not an object"]
    spec = doc.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return ["spec: must be an object"]
    out: list[str] = []
    low, high = spec.get("minReplicas", 1), spec.get("maxReplicas", 0)
    if not _is_int(low) or not _is_int(high):
        return [f"spec.{k}: must be an integer" for k, v in (("minReplicas", low), ("maxReplicas", high))
                if not _is_int(v)]  # fmt: skip
    bound = 0 if scale_to_zero else 1
    if low < bound:
        out.append(invalid("spec.minReplicas", low, f"must be greater than or equal to {bound}"))
    if high == 0:
        out.append(required("spec.maxReplicas"))
    elif high < 0:
        out.append(invalid("spec.maxReplicas", high, "must be greater than or equal to 1"))
    if high < low:
        out.append(invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    out += _reference("spec.scaleTargetRef", spec.get("scaleTargetRef"), empty_group=False)
    metrics = spec.get("metrics") or []
    if not isinstance(metrics, list):
        return [*out, "spec.metrics: must be a list"]
    for i, m in enumerate(metrics):
        out += _metric(f"spec.metrics[{i}]", m if isinstance(m, dict) else {})
    if low == 0 and not any(isinstance(m, dict) and m.get("type") in ("Object", "External") for m in metrics):
        out.append(forbidden("spec.metrics", "must specify at least one Object or External metric to support "
                                             "scaling to zero replicas"))  # fmt: skip
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for direction in ("scaleUp", "scaleDown"):
            rules = behavior.get(direction)
            if isinstance(rules, dict):
                out += _rules(f"spec.behavior.{direction}", rules, tolerance)
    return list(dict.fromkeys(out))  # the API server says each problem once


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _reference(path: str, ref: Any, empty_group: bool) -> list[str]:
    ref = ref if isinstance(ref, dict) else {}
    out = []
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            out.append(required(f"{path}.{key}"))
        else:
            out += [invalid(f"{path}.{key}", value, m) for m in path_segment_problems(value)]
    version = str(ref.get("apiVersion") or "")
    problem = _group_version_problem(version, empty_group)
    if problem:
        out.append(invalid(f"{path}.apiVersion", version, problem))
    return out


def _group_version_problem(text: str, empty_group: bool) -> str | None:
    if text in ("", "/") or text.count("/") == 0:
        group = ""
    elif text.count("/") == 1:
        group = text.split("/")[0]
    else:
        return f"unexpected GroupVersion string: {text}"
    if not empty_group and not group:
        return "apiVersion must specify API group"
    return None


def _type_of(path: str, d: dict[str, Any], what: str) -> tuple[str, list[str]]:
    """A source's or target's ``type``, and the refusal when it has none."""
    kind = str(d.get("type") or "")
    return kind, [] if kind else [required(f"{path}.type", f"must specify a {what} type")]


def _metric(path: str, m: dict[str, Any]) -> list[str]:
    kind, out = _type_of(path, m, "metric source")
    if kind not in METRIC_SOURCES:
        out.append(not_supported(f"{path}.type", kind, tuple(METRIC_SOURCES)))
    present = [f for f in PRESENCE_ORDER if m.get(f) is not None]
    if present:  # only the first source present is checked
        first = present[0]
        out += _SOURCE_CHECKS[first](f"{path}.{first}", m[first] if isinstance(m[first], dict) else {})
    expected = METRIC_SOURCES.get(kind)
    if expected is not None and m.get(expected) is None:
        out.append(required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        for other in sorted(set(present) - {expected}):
            out.append(forbidden(f"{path}.{other}", "must populate the given metric source only"))
    return out


def _identifier(path: str, metric: Any) -> list[str]:
    name = str((metric or {}).get("name") or "") if isinstance(metric, dict) else ""
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return [invalid(f"{path}.name", name, m) for m in path_segment_problems(name)]


def _target(path: str, t: dict[str, Any]) -> list[str]:
    ttype, out = _type_of(path, t, "metric target")
    if ttype not in TARGET_TYPES:
        out.append(invalid(f"{path}.type", ttype, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        raw = t.get(key)
        if raw is None:
            continue
        try:
            q = Quantity.parse(str(raw))
        except QuantityError as e:
            out.append(invalid(f"{path}.{key}", raw, f"quantities must match the regular expression ({e})"))
            continue
        if q.value <= 0:
            out.append(invalid(f"{path}.{key}", str(q), "must be positive"))
    u = t.get("averageUtilization")
    if u is not None and (not _is_int(u) or u < 1):
        out.append(invalid(f"{path}.averageUtilization", u, "must be greater than 0"))
    return out


def _target_of(src: dict[str, Any]) -> dict[str, Any]:
    t = src.get("target")
    return t if isinstance(t, dict) else {}


def _object(path: str, src: dict[str, Any]) -> list[str]:
    t = _target_of(src)
    out = _reference(f"{path}.describedObject", src.get("describedObject"), empty_group=True)
    out += _identifier(f"{path}.metric", src.get("metric")) + _target(f"{path}.target", t)
    if t.get("value") is None and t.get("averageValue") is None:
        out.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    return out


def _exactly_one(t: dict[str, Any], keys: tuple[str, str], neither: tuple[str, str],
                 both: tuple[str, str]) -> list[str]:  # fmt: skip
    """A target must set one of ``keys``, not both: (path, message) for each refusal."""
    present = [t.get(k) is not None for k in keys]
    if not any(present):
        return [required(*neither)]
    return [forbidden(*both)] if all(present) else []


def _external(path: str, src: dict[str, Any]) -> list[str]:
    t = _target_of(src)
    out = _identifier(f"{path}.metric", src.get("metric")) + _target(f"{path}.target", t)
    return out + _exactly_one(
        t, ("value", "averageValue"),
        (f"{path}.target.averageValue", "must set either a target value for metric or a per-pod target"),
        (f"{path}.target.value", "may not set both a target value for metric and a per-pod target"),
    )  # fmt: skip


def _pods(path: str, src: dict[str, Any]) -> list[str]:
    t = _target_of(src)
    out = _identifier(f"{path}.metric", src.get("metric")) + _target(f"{path}.target", t)
    if t.get("averageValue") is None:
        out.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    return out


def _resource(path: str, src: dict[str, Any], container: bool = False) -> list[str]:
    out = []
    name = str(src.get("name") or "")
    if not name:
        out.append(required(f"{path}.name", "must specify a resource name"))
    elif container:
        out += container_resource_name_problems(f"{path}.name", name)
    if container:
        box = str(src.get("container") or "")
        if not box:
            out.append(required(f"{path}.container", "must specify a container"))
        else:
            out += [invalid(f"{path}.container", box, m) for m in dns_label_problems(box)]
    t = _target_of(src)
    return out + _target(f"{path}.target", t) + _exactly_one(
        t, ("averageUtilization", "averageValue"),
        (f"{path}.target.averageUtilization", "must set either a target raw value or a target utilization"),
        (f"{path}.target.averageValue", "may not set both a target raw value and a target utilization"),
    )  # fmt: skip


def _container_resource(path: str, src: dict[str, Any]) -> list[str]:
    return _resource(path, src, container=True)


_SOURCE_CHECKS: dict[str, Callable[[str, dict[str, Any]], list[str]]] = {
    "object": _object,
    "external": _external,
    "pods": _pods,
    "resource": _resource,
    "containerResource": _container_resource,
}


def _rules(path: str, r: dict[str, Any], tolerance: bool) -> list[str]:
    out = []
    window = r.get("stabilizationWindowSeconds")
    if _is_int(window) and window < 0:
        out.append(
            invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero")
        )
    if _is_int(window) and window > MAX_STABILIZATION_SECONDS:
        out.append(invalid(f"{path}.stabilizationWindowSeconds", window,
                           f"must be less than or equal to {MAX_STABILIZATION_SECONDS}"))  # fmt: skip
    select = r.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        out.append(not_supported(f"{path}.selectPolicy", select, SELECT_POLICIES))
    policies = r.get("policies")
    if policies is not None:  # absent: the default rules' policies
        if not isinstance(policies, list) or not policies:
            out.append(required(f"{path}.policies", "must specify at least one Policy"))
        else:
            for i, p in enumerate(policies):
                out += _policy(f"{path}.policies[{i}]", p if isinstance(p, dict) else {})
    raw = r.get("tolerance")
    if tolerance and raw is not None:
        try:
            q = Quantity.parse(str(raw))
        except QuantityError:
            q = None
        if q is not None and q.value < 0:
            out.append(invalid(f"{path}.tolerance", str(q), "must be greater than or equal to 0"))
    return out


def _policy(path: str, p: dict[str, Any]) -> list[str]:
    out = []
    if p.get("type") not in POLICY_TYPES:
        out.append(not_supported(f"{path}.type", str(p.get("type") or ""), POLICY_TYPES))
    value, period = p.get("value", 0), p.get("periodSeconds", 0)
    if _is_int(value) and value <= 0:
        out.append(invalid(f"{path}.value", value, "must be greater than zero"))
    if _is_int(period) and period <= 0:
        out.append(invalid(f"{path}.periodSeconds", period, "must be greater than zero"))
    if _is_int(period) and period > MAX_PERIOD_SECONDS:
        out.append(
            invalid(f"{path}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}")
        )
    return out
