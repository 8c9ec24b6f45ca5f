"""Request paths to small values: the one place URL shapes are understood.

Two steps, both pure:

1. ``request_info`` reads a path exactly as the kube-apiserver's ``RequestInfoFactory``
   does (decode once, split on ``/``, ``namespaces/{ns}/`` moves into the namespace unless
   followed by a namespace subresource, then resource / name / subresource). That value is
   what the aggregator authorized, so it is what our own ``SubjectAccessReview`` asks about.
2. ``metric_request`` turns that value into a ``MetricRequest`` for a provider, and refuses
   every shape whose query would reach beyond what was authorized: a cluster-scoped
   resource inside a namespace, a namespaced one at the root, empty or invalid namespaces
   and names. The namespace a provider queries is always ``RequestInfo.namespace``.

Whether a request names one object or ``*`` (all objects matching ``labelSelector``) is
decided here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rules.config import GroupResource
from rules.naming import NAMESPACES, known, namespaced
from shared.selectors import Selector, SelectorError, parse_cached

from .errors import StatusError
from .wire import CUSTOM, EXTERNAL, RESOURCE, VERSIONS


class BadRequest(StatusError, ValueError):  # noqa: N818 - named for the HTTP status it becomes
    """400: the request is malformed (bad selector, invalid name, bad escape)."""

    code, reason = 400, "BadRequest"


class NotFound(StatusError, LookupError):  # noqa: N818 - named for the HTTP status it becomes
    """404: no such metric, resource or path shape; the message names it."""

    code, reason = 404, "NotFound"


# the kube-apiserver's namespace subresources: `namespaces/{ns}/status` is the namespace
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def decode_path(raw: str) -> str:
    """Percent-decode a raw path once, strictly, as Go's net/url does for the apiserver.

    A stray ``%`` is a 400 there and here; ``%2F`` becomes ``/`` (and so a separator), and
    ``%2500`` becomes the three characters ``%00`` -- never a NUL.
    """
    if "%" not in raw:
        return raw
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(raw):
        if m.group(1) is None:
            raise BadRequest(f"invalid URL escape {raw[m.start() : m.start() + 3]!r} in path")
        out += raw[pos : m.start()].encode()
        out.append(int(m.group(1), 16))
        pos = m.end()
    out += raw[pos:].encode()
    try:
        return out.decode()
    except UnicodeDecodeError:
        raise BadRequest("the path is not valid UTF-8 after decoding") from None


REQUEST_INFO = "promhpa.request_info"  # where authorization leaves its reading for the handler


@dataclass(frozen=True)
class RequestInfo:
    """What the kube-apiserver reads from a path (its ``request.RequestInfo``)."""

    path: str
    is_resource: bool
    verb: str = "get"
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    namespaced_path: bool = False  # the path said namespaces/{ns}/..., even with ns ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()


def request_info(raw_path: str) -> RequestInfo:
    """The apiserver's reading of a GET path (raw, still percent-encoded)."""
    path = decode_path(raw_path)
    parts = path.strip("/").split("/")
    if len(parts) < 4 or parts[0] != "apis":
        return RequestInfo(path, is_resource=False)
    group, version, rest = parts[1], parts[2], parts[3:]
    namespace, namespaced_path = "", False
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace, namespaced_path = rest[1], True
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return RequestInfo(
        path,
        is_resource=True,
        verb="get" if name else "list",
        api_group=group,
        api_version=version,
        namespace=namespace,
        namespaced_path=namespaced_path,
        resource=resource,
        name=name,
        subresource=subresource,
        parts=tuple(rest),
    )


@dataclass(frozen=True)
class MetricRequest:
    group: str
    version: str
    kind: str  # "object" | "external" | "pods" | "nodes" | "discovery"
    resource: GroupResource | None = None
    namespace: str | None = None
    name: str | None = None  # None: every object matching the selector ("*")
    metric: str = ""
    selector: Selector | None = None  # labelSelector
    metric_selector: Selector | None = None  # metricLabelSelector (custom metrics)


def _selector(query: dict[str, str], key: str) -> Selector | None:
    text = query.get(key)
    if not text:
        return None
    try:
        return parse_cached(text)
    except SelectorError as e:
        raise BadRequest(f"invalid {key} {text!r}: {e}") from None


def _group_resource(text: str) -> GroupResource:
    resource, _, group = text.partition(".")
    found = known(GroupResource(group, resource)) if not group else None
    return GroupResource(found.group if found else group, resource)


def _namespace(info: RequestInfo) -> str:
    ns = info.namespace
    if not ns:
        raise BadRequest("the namespace in the path is empty; name one: namespaces/{namespace}/...")
    if len(ns) > 63 or not _DNS_LABEL.fullmatch(ns):
        raise BadRequest(f"invalid namespace {ns!r}: a namespace is a DNS-1123 label")
    return ns


def _segment(kind: str, text: str) -> str:
    """An object or metric name as the apiserver allows it in a path (IsPathSegmentName),
    and printable: no Kubernetes object or Prometheus series is named otherwise."""
    if not text:
        raise BadRequest(f"the {kind} in the path is empty")
    if text in (".", "..") or "%" in text or not text.isprintable() or len(text) > 253:
        raise BadRequest(f"invalid {kind} {text!r} in the path")
    return text


def metric_request(info: RequestInfo, query: dict[str, str]) -> MetricRequest:
    """A provider's request from the apiserver's reading of the path, or NotFound/BadRequest."""
    group, version = info.api_group, info.api_version
    if not info.is_resource or group not in VERSIONS or version not in VERSIONS[group]:
        raise NotFound(
            f"the server could not find the requested resource {info.path!r} (served: "
            + ", ".join(f"{g}/{v}" for g, vs in VERSIONS.items() for v in vs)
            + ")"
        )
    sel, msel = _selector(query, "labelSelector"), _selector(query, "metricLabelSelector")
    if group == EXTERNAL:
        return _external(info, group, version, sel)
    if group == RESOURCE:
        return _resource(info, group, version, sel)
    assert group == CUSTOM
    return _custom(info, group, version, sel, msel)


def _external(info: RequestInfo, group: str, version: str, sel: Selector | None) -> MetricRequest:
    if not info.namespaced_path or len(info.parts) != 1 or info.resource in NAMESPACE_SUBRESOURCES:
        raise NotFound("external metrics are served at namespaces/{namespace}/{metric}")
    ns = _namespace(info)
    return MetricRequest(
        group, version, "external", namespace=ns, metric=_segment("metric", info.resource), selector=sel
    )


def _resource(info: RequestInfo, group: str, version: str, sel: Selector | None) -> MetricRequest:
    shape = "metrics.k8s.io serves nodes, nodes/{name}, pods and namespaces/{namespace}/pods[/{name}]"
    if info.namespaced_path:
        if info.resource != "pods" or len(info.parts) > 2:
            raise NotFound(shape)
        ns = _namespace(info)
        name = _segment("pod name", info.name) if len(info.parts) == 2 else None
        return MetricRequest(group, version, "pods", namespace=ns, name=name, selector=sel)
    if info.resource == "nodes" and len(info.parts) <= 2:
        name = _segment("node name", info.name) if len(info.parts) == 2 else None
        return MetricRequest(group, version, "nodes", name=name, selector=sel)
    if info.parts == ("pods",):
        return MetricRequest(group, version, "pods", selector=sel)
    raise NotFound(shape)


def _custom(
    info: RequestInfo, group: str, version: str, sel: Selector | None, msel: Selector | None
) -> MetricRequest:
    if info.namespaced_path:
        ns = _namespace(info)
        if len(info.parts) == 2 and info.resource == "metrics":  # the namespace object itself
            metric = _segment("metric", info.name)
            return MetricRequest(group, version, "object", NAMESPACES, None, ns, metric, sel, msel)
        if len(info.parts) != 3:
            raise NotFound(
                "custom metrics are served at namespaces/{namespace}/{resource}/{name|*}/{metric}, "
                "namespaces/{name}/metrics/{metric} and {resource}/{name|*}/{metric}"
            )
        gr = _group_resource(_segment("resource", info.resource))
        if not namespaced(gr):
            raise NotFound(
                f"{gr} is cluster-scoped: it has no objects in namespace {ns!r}; use "
                + (
                    "namespaces/{name}/metrics/{metric}"
                    if gr == NAMESPACES
                    else f"{gr.resource}/{{name}}/{{metric}}"
                )
            )
        name = None if info.name == "*" else _segment("name", info.name)
        return MetricRequest(
            group, version, "object", gr, ns, name, _segment("metric", info.subresource), sel, msel
        )
    if len(info.parts) != 3:
        raise NotFound(f"unknown custom metrics path {'/'.join(info.parts)!r}")
    gr = _group_resource(_segment("resource", info.resource))
    if namespaced(gr) and known(gr) is not None:
        raise NotFound(f"{gr} is namespaced: use namespaces/{{namespace}}/{gr.resource}/{{name}}/{{metric}}")
    name = None if info.name == "*" else _segment("name", info.name)
    return MetricRequest(
        group, version, "object", gr, None, name, _segment("metric", info.subresource), sel, msel
    )


def parse_path(raw_path: str, query: dict[str, str], info: RequestInfo | None = None) -> MetricRequest:
    """``metric_request(request_info(path))``, discovery paths included; ``info`` when the
    authorization step has read the path already."""
    info = info or request_info(raw_path)
    if info.is_resource is False:
        parts = info.path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in VERSIONS and parts[2] in VERSIONS[parts[1]]:
            return MetricRequest(parts[1], parts[2], "discovery")
    return metric_request(info, query)
