"""A metrics request plus a rule becomes one PromQL query (pure; table-tested).

The custom-metrics matchers come in prometheus-adapter's order -- the ``metricLabelSelector``
requirements, then the namespace label, then the resource label -- and the query groups by
the resource label so that each object gets its own series back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shared.selectors import Selector

from .config import GroupResource, ResourceQuery, Rule
from .naming import NAMESPACES, PODS, ResourceMapper
from .promql import (
    Matcher,
    QueryError,
    check_label,
    finish,
    selector_matchers,
    template_values,
    values_matcher,
)


@dataclass(frozen=True)
class ObjectQuery:
    """A custom-metrics request: these objects of this resource, in this namespace."""

    resource: GroupResource
    namespace: str | None
    names: tuple[str, ...]
    metric_selector: Selector | None = None


def custom_query(rule: Rule, series: str, req: ObjectQuery) -> tuple[str, str]:
    """The PromQL for a custom-metrics request, and the label that carries each object's name."""
    mapper = ResourceMapper(rule.resources)
    label = mapper.label_for_resource(req.resource)
    if label is None:
        raise QueryError(f"rule {rule.index} has no label for resource {req.resource}")
    matchers: list[Matcher] = selector_matchers(req.metric_selector)
    values: dict[str, Sequence[str]] = {}
    if req.namespace is not None and req.resource != NAMESPACES:
        # a request made inside a namespace reads only that namespace, whatever the resource
        ns_label = mapper.namespace_label()
        if ns_label is None:
            raise QueryError(
                f"rule {rule.index} has no namespace label for namespaced resource {req.resource}"
            )
        matchers.append(values_matcher(ns_label, [req.namespace]))
        values[ns_label] = [req.namespace]
    if req.names:
        matchers.append(values_matcher(label, req.names))
        values[label] = req.names
    else:  # every object that has the metric
        matchers.append(Matcher(check_label(label), "!=", ""))
    return finish(
        rule.metrics_query.render(template_values(series, matchers, [label], values)), series
    ), label


def external_query(rule: Rule, series: str, namespace: str | None, selector: Selector | None) -> str:
    matchers = selector_matchers(selector)
    values: dict[str, Sequence[str]] = {}
    if rule.resources.namespaced and namespace:
        # without a mapping, the conventional label: a namespaced rule must never read
        # another namespace's series
        ns_label = ResourceMapper(rule.resources).namespace_label() or "namespace"
        matchers.append(values_matcher(ns_label, [namespace]))
        values[ns_label] = [namespace]
    return finish(rule.metrics_query.render(template_values(series, matchers, [], values)), series)


def container_query(
    q: ResourceQuery, namespace: str | None, pods: Sequence[str] | None
) -> tuple[str, str, str]:
    """metrics.k8s.io pods: usage per (pod, container); returns the query and both label names."""
    mapper = ResourceMapper(q.resources)
    pod_label = mapper.label_for_resource(PODS)
    if pod_label is None:
        raise QueryError("resourceRules need a label for pods")
    matchers: list[Matcher] = []
    values: dict[str, Sequence[str]] = {}
    if namespace is not None:
        ns_label = mapper.namespace_label()
        if ns_label is None:
            raise QueryError("resourceRules need a namespace label")
        matchers.append(values_matcher(ns_label, [namespace]))
        values[ns_label] = [namespace]
    if pods:
        matchers.append(values_matcher(pod_label, pods))
        values[pod_label] = list(pods)
    group_by = [pod_label, q.container_label]
    ns = mapper.namespace_label()
    if namespace is None and ns is not None:
        group_by.insert(0, ns)
    return (
        q.container_query.render(template_values("", matchers, group_by, values)),
        pod_label,
        q.container_label,
    )


def node_query(q: ResourceQuery, nodes: Sequence[str] | None) -> tuple[str, str]:
    mapper = ResourceMapper(q.resources)
    node_label = mapper.label_for_resource(GroupResource("", "nodes"))
    if node_label is None:
        raise QueryError("resourceRules need a label for nodes")
    matchers = [values_matcher(node_label, nodes)] if nodes else []
    values = {node_label: list(nodes)} if nodes else {}
    return q.node_query.render(template_values("", matchers, [node_label], values)), node_label
