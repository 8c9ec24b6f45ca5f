"""Request paths to small values: the one place URL shapes are understood.

Handlers only call ``parse_path`` and hand the resulting ``MetricRequest`` to a provider;
whether a request names one object or ``*`` (all objects matching ``labelSelector``) is
decided here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from shared.selectors import Selector, SelectorError, parse

from .config import GroupResource
from .naming import KNOWN_RESOURCES, NAMESPACES, namespaced
from .wire import CUSTOM, EXTERNAL, RESOURCE, VERSIONS


class BadRequest(ValueError):  # noqa: N818 - named for the HTTP status it becomes
    """400: the request is malformed (bad selector, unknown path shape)."""


class NotFound(LookupError):  # noqa: N818 - named for the HTTP status it becomes
    """404: no such metric or resource; the message names it."""


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
        return parse(text)
    except SelectorError as e:
        raise BadRequest(f"invalid {key} {text!r}: {e}") from None


def _group_resource(text: str) -> GroupResource:
    resource, _, group = text.partition(".")
    if not group and resource in KNOWN_RESOURCES:
        group = KNOWN_RESOURCES[resource][0]
    return GroupResource(group, resource)


def parse_path(path: str, query: dict[str, str]) -> MetricRequest:
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if len(parts) < 3 or parts[0] != "apis":
        raise NotFound(f"the server could not find the requested resource {path!r}")
    group, version, rest = parts[1], parts[2], parts[3:]
    if group not in VERSIONS or version not in VERSIONS[group]:
        raise NotFound(
            f"{group}/{version} is not served here (served: "
            + ", ".join(f"{g}/{v}" for g, vs in VERSIONS.items() for v in vs)
            + ")"
        )
    sel, msel = _selector(query, "labelSelector"), _selector(query, "metricLabelSelector")
    if not rest:
        return MetricRequest(group, version, "discovery")
    if group == EXTERNAL:
        if len(rest) == 3 and rest[0] == "namespaces":
            return MetricRequest(group, version, "external", namespace=rest[1], metric=rest[2], selector=sel)
        raise NotFound("external metrics are served at namespaces/{namespace}/{metric}")
    if group == RESOURCE:
        if rest[0] == "nodes" and len(rest) <= 2:
            return MetricRequest(
                group, version, "nodes", name=rest[1] if len(rest) == 2 else None, selector=sel
            )
        if rest == ["pods"]:
            return MetricRequest(group, version, "pods", selector=sel)
        if len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == "pods":
            return MetricRequest(
                group,
                version,
                "pods",
                namespace=rest[1],
                name=rest[3] if len(rest) == 4 else None,
                selector=sel,
            )
        raise NotFound(f"metrics.k8s.io serves nodes and pods, not {'/'.join(rest)!r}")
    assert group == CUSTOM
    if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "metrics":
        # the namespace object itself
        return MetricRequest(group, version, "object", NAMESPACES, None, rest[1], rest[3], sel, msel)
    if len(rest) == 5 and rest[0] == "namespaces":
        gr = _group_resource(rest[2])
        return MetricRequest(
            group, version, "object", gr, rest[1], None if rest[3] == "*" else rest[3], rest[4], sel, msel
        )
    if len(rest) == 3:
        gr = _group_resource(rest[0])
        if namespaced(gr) and gr.resource in KNOWN_RESOURCES:
            raise NotFound(
                f"{gr} is namespaced: use namespaces/{{namespace}}/{gr.resource}/{{name}}/{{metric}}"
            )
        return MetricRequest(
            group, version, "object", gr, None, None if rest[1] == "*" else rest[1], rest[2], sel, msel
        )
    raise NotFound(f"unknown custom metrics path {'/'.join(rest)!r}")
