"""Providers: a parsed request in, wire items out, through the registry and Prometheus.

``ObjectLister`` is how ``*`` + ``labelSelector`` becomes object names: the live adapter
uses a watch-backed cache of Kubernetes objects; without one (local use) only selector-less
``*`` requests can be served, by asking Prometheus for every object that has the metric.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from adapter.api.requests import BadRequest, MetricRequest, NotFound
from adapter.api.wire import (
    CUSTOM,
    EXTERNAL,
    RESOURCE,
    item_builder,
    milli_quantity,
    resource_list,
    timestamp,
    value_list,
)
from adapter.metricrules.isolation import IsolationError
from adapter.metricrules.team_assignment import Served as TeamServed
from adapter.metricrules.team_queries import TeamQueries
from promclient.backends import Backends
from promclient.promapi import PrometheusAPI
from rules.config import Config, GroupResource
from rules.naming import NAMESPACES, NODES, PODS
from rules.promql import QueryError
from rules.queries import ObjectQuery, container_query, custom_query, external_query, node_query
from shared.selectors import Selector

from .answers import external_list, selector_json, usage_of
from .registry import Registry


class ObjectLister(Protocol):
    async def names(
        self, namespace: str | None, gr: GroupResource, selector: Selector | None
    ) -> Sequence[str]: ...


def _asking(req: MetricRequest) -> str | None:
    """The namespace a request asks as (its tenant's, on a backend with one per namespace):
    none for a namespace object's metric, which is about the namespace, not from it."""
    return None if req.resource == NAMESPACES else req.namespace


class Providers:
    def __init__(
        self,
        config: Config,
        registry: Registry,
        prometheus: PrometheusAPI | Backends,
        lister: ObjectLister | None = None,
    ) -> None:
        self.config, self.registry, self.lister = config, registry, lister
        self.backends = Backends.of(prometheus)  # each rule is answered by its own backend
        # MetricRules and ClusterMetricRules (``adapter.metricrules.team_watch``), when watched
        self.team: TeamQueries | None = None

    async def _names(self, req: MetricRequest) -> tuple[str, ...]:
        assert req.resource is not None
        if req.name is not None:
            return (req.name,)
        if self.lister is not None:
            names = await self.lister.names(req.namespace, req.resource, req.selector)
            if not names:
                raise NotFound(
                    f"no {req.resource} match labelSelector {req.selector or '(empty)'}"
                    + (f" in namespace {req.namespace}" if req.namespace else "")
                )
            return tuple(names)
        if req.selector is not None and not req.selector.empty():
            raise BadRequest(
                "labelSelector needs the Kubernetes object cache: run the adapter with access "
                "to the cluster (in-cluster or --kubeconfig)"
            )
        return ()  # every object that has the metric

    async def custom(self, req: MetricRequest) -> dict[str, Any]:
        assert req.resource is not None
        team = (
            self.team.assignment.lookup_custom(req.namespace, req.resource, req.metric)
            if self.team is not None
            else None
        )
        served = None if team is not None else await self.registry.custom(req.resource, req.metric)
        if served is None and team is None:
            where = f"{req.resource}" + (f" in namespace {req.namespace}" if req.namespace else "")
            raise NotFound(
                f"the custom metric {req.metric!r} is not served for {where}: no rule discovered a "
                "matching series (check the rule's seriesQuery and name, or run "
                "`promhpa-adapter check-config`)"
            )
        names = await self._names(req)
        asked = ObjectQuery(req.resource, req.namespace, names, req.metric_selector)
        if team is not None:  # a MetricRule's: confined to its namespace, in its time limit
            try:
                query, label = team.rule.render_custom(team.series, asked)
            except (IsolationError, QueryError) as e:
                raise BadRequest(f"{team.rule.describe()}: {e}") from None
            assert self.team is not None
            samples = await self.team.query(team.rule, query, _asking(req))
        else:
            assert served is not None
            query, label = custom_query(served.rule, served.series, asked)
            samples = await self.backends.get(served.rule.backend).query(query, namespace=_asking(req))
        wanted = set(names)
        ns = req.namespace if req.resource != NAMESPACES else None
        item = item_builder(req.version, req.resource, ns, req.metric, selector_json(req.metric_selector))
        items = []
        for s in samples:
            obj = s.labels.get(label, "")
            value = milli_quantity(s.value)
            if not obj or value is None or (wanted and obj not in wanted):
                continue
            items.append(item(obj, value, s.timestamp))
        rule = served.rule if served is not None else team.rule.rule if team is not None else None
        if rule is not None and rule.absent == "zero":  # an object without a series has 0
            have = {i["describedObject"]["name"] for i in items}
            items += [item(n, "0", time.time()) for n in names if n not in have]
        if req.name is not None and not items:
            raise NotFound(
                f"the custom metric {req.metric!r} has no value for {req.resource} "
                f"{(req.namespace + '/') if req.namespace else ''}{req.name}"
            )
        items.sort(key=lambda i: i["describedObject"]["name"])
        return value_list(CUSTOM, req.version, "MetricValueList", items)

    async def external(self, req: MetricRequest) -> dict[str, Any]:
        team = self.team.assignment.lookup(req.namespace, req.metric) if self.team is not None else None
        if team is not None:
            return await self._team_external(team, req)
        served = await self.registry.external(req.metric)
        if served is None:
            raise NotFound(
                f"the external metric {req.metric!r} is not served: no external rule discovered a "
                "matching series"
            )
        samples = await self.backends.get(served.rule.backend).query(
            external_query(served.rule, served.series, req.namespace, req.selector), namespace=req.namespace
        )
        return external_list(req, samples, None, zero=served.rule.absent == "zero")

    async def _team_external(self, served: TeamServed, req: MetricRequest) -> dict[str, Any]:
        """A MetricRule's query, confined to its namespace, within the team rules' query time
        limit; the request's labelSelector picks among the direct form's series by their
        labels (the file form's metricsQuery has it as its LabelMatchers)."""
        rule = served.rule
        try:
            query = rule.render(served.series, req.namespace, req.selector)
        except (IsolationError, QueryError) as e:
            raise BadRequest(f"{rule.describe()}: {e}") from None
        assert self.team is not None
        samples = await self.team.query(rule, query, req.namespace)
        zero = rule.rule is not None and rule.rule.absent == "zero"
        return external_list(req, samples, req.selector if rule.rule is None else None, zero=zero)

    # --- metrics.k8s.io --------------------------------------------------------------------

    def _resource_rules(self) -> Any:
        rr = self.config.resource_rules
        if rr is None or (rr.cpu is None and rr.memory is None):
            raise NotFound("metrics.k8s.io is not configured: add resourceRules to the config")
        return rr

    async def pods(self, req: MetricRequest) -> dict[str, Any]:
        rr = self._resource_rules()
        names: tuple[str, ...] = ()
        if req.name is not None:
            names = (req.name,)
        elif req.selector is not None and not req.selector.empty():
            if self.lister is None:
                raise BadRequest("labelSelector needs the Kubernetes object cache")
            names = tuple(await self.lister.names(req.namespace, PODS, req.selector))
            if not names:
                return value_list(RESOURCE, req.version, "PodMetricsList", [])
        usage: dict[tuple[str, str], dict[str, dict[str, str]]] = defaultdict(dict)
        stamps: dict[tuple[str, str], float] = {}
        for resource, q in (("cpu", rr.cpu), ("memory", rr.memory)):
            if q is None:
                continue
            query, pod_label, container_label = container_query(q, req.namespace, names)
            ns_label = "namespace"
            for s in await self.backends.get(rr.backend).query(query, namespace=req.namespace):
                key = (s.labels.get(ns_label, req.namespace or ""), s.labels.get(pod_label, ""))
                if not key[1]:
                    continue
                usage[key].setdefault(s.labels.get(container_label, ""), {})[resource] = usage_of(resource, s)
                stamps[key] = max(stamps.get(key, 0.0), s.timestamp)
        items = []
        for (ns, pod), containers in sorted(usage.items()):
            items.append(
                {
                    "metadata": {"name": pod, "namespace": ns},
                    "timestamp": timestamp(stamps[(ns, pod)]),
                    "window": rr.window,
                    "containers": [{"name": c, "usage": u} for c, u in sorted(containers.items())],
                }
            )
        if req.name is not None and not items:
            raise NotFound(f"podmetrics {req.namespace}/{req.name} not found")
        if req.name is not None:
            return {"kind": "PodMetrics", "apiVersion": f"{RESOURCE}/{req.version}", **items[0]}
        return value_list(RESOURCE, req.version, "PodMetricsList", items)

    async def nodes(self, req: MetricRequest) -> dict[str, Any]:
        rr = self._resource_rules()
        names = (req.name,) if req.name else ()
        usage: dict[str, dict[str, str]] = defaultdict(dict)
        stamps: dict[str, float] = {}
        for resource, q in (("cpu", rr.cpu), ("memory", rr.memory)):
            if q is None:
                continue
            query, node_label = node_query(q, names)
            for s in await self.backends.get(rr.backend).query(query):
                node = s.labels.get(node_label, "")
                if node:
                    usage[node][resource] = usage_of(resource, s)
                    stamps[node] = max(stamps.get(node, 0.0), s.timestamp)
        items = [
            {"metadata": {"name": n}, "timestamp": timestamp(stamps[n]), "window": rr.window, "usage": u}
            for n, u in sorted(usage.items())
        ]
        if req.name is not None:
            if not items:
                raise NotFound(f"nodemetrics {req.name} not found")
            return {"kind": "NodeMetrics", "apiVersion": f"{RESOURCE}/{req.version}", **items[0]}
        return value_list(RESOURCE, req.version, "NodeMetricsList", items)

    # --- a provider (``adapter.api.provider``): the rule file's and MetricRules' metrics -----

    def resources(self, req: MetricRequest) -> list[dict[str, Any]]:
        return list(resource_list(req.group, req.version, self.discovery(req))["resources"])

    async def answer(self, req: MetricRequest, path_qs: str) -> dict[str, Any]:
        """Every request for values this adapter's rules serve, or NotFound naming the metric."""
        if req.kind == "object":
            return await self.custom(req)
        if req.kind == "external":
            return await self.external(req)
        if req.kind == "pods":
            return await self.pods(req)
        return await self.nodes(req)

    def discovery(self, req: MetricRequest) -> list[tuple[str, bool, str]]:
        if req.group == CUSTOM:
            out: list[tuple[str, bool, str]] = []
            seen: set[GroupResource] = set()
            pairs = set(self.registry.custom_resources())
            if self.team is not None:
                pairs.update(self.team.assignment.custom_metrics())
            for gr, metric in sorted(pairs, key=lambda k: (k[0].resource, k[0].group, k[1])):
                scoped = gr not in (NAMESPACES, NODES) and gr.resource != "persistentvolumes"
                if gr not in seen:  # a plain entry too: kubectl api-resources hides names with a '/'
                    seen.add(gr)
                    out.append((str(gr), scoped, "MetricValueList"))
                out.append((f"{gr}/{metric}", scoped, "MetricValueList"))
            return out
        if req.group == EXTERNAL:
            names = set(self.registry.external_metrics())
            if self.team is not None:
                names.update(self.team.assignment.metrics())
            return [(m, True, "ExternalMetricValueList") for m in sorted(names)]
        return [("nodes", False, "NodeMetrics"), ("pods", True, "PodMetrics")]
