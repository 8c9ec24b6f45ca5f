"""Rules as cluster resources: MetricRule (a team's, in its namespace) and ClusterMetricRule
(the platform's), judged and assigned -- plain data in, plain data out.

Why a verdict per object, written to its status: a team cannot read the adapter's logs, so
whether its rule is served, and if not why (the field, Prometheus' parser message, the
rule that holds the name), must be on the object it wrote.

What is served, when names meet:
* the rule file and ClusterMetricRules are the platform's and win; a MetricRule that asks
  for a name they serve is not served and says ``Conflict`` naming the holder;
* two rules of one kind asking for the same name: the older (creation time, then name)
  holds it; the other says ``Conflict``;
* a namespace holds at most ``limits.per_namespace`` MetricRules (the oldest are served);
* a MetricRule may use only the backends the platform lists (``limits.backends``).

An object that turns invalid keeps its last valid version serving (``Invalid`` on its
status says so): a bad edit must not take a metric away from the HPAs using it.

Served: the direct form (``metric`` + ``query``, one external metric) and the rule file's
form (``kind: Custom``, the default, or ``External``: ``seriesQuery`` discovers series,
``resources`` maps labels to objects, ``name`` turns series names into metrics,
``metricsQuery`` answers a request), all confined to the rule's namespace; a MetricRule
never serves metrics of objects outside a namespace (nodes, namespaces, volumes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import promql_parser
import yaml

from rules.config import ConfigError, GroupResource, Rule, parse_config
from rules.naming import NAMESPACES, NODES, PODS
from rules.promql import QueryError
from rules.queries import ObjectQuery, custom_query, external_query
from shared.selectors import Selector

from .isolation import IsolationError, Reach, confine, confine_query, confine_selector
from .query_cost import CostLimits, over_cost
from .query_size import CEILING, QueryTooLarge, SizeLimits, check_size

GROUP, VERSION = "promhpa.io", "v1alpha1"
NAMESPACED, CLUSTER = "MetricRule", "ClusterMetricRule"
PATHS = {
    NAMESPACED: f"/apis/{GROUP}/{VERSION}/metricrules",
    CLUSTER: f"/apis/{GROUP}/{VERSION}/clustermetricrules",
}
_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:.-]*")
Key = tuple[str, str, str]  # (kind, namespace, name)
# objects of no namespace: a MetricRule never serves metrics about them
CLUSTER_SCOPED = {NAMESPACES, NODES, GroupResource("", "persistentvolumes")}


@dataclass(frozen=True)
class Limits:
    per_namespace: int = 50
    backends: frozenset[str] = frozenset({""})  # "" is the adapter's --prometheus-url
    # tenants a MetricRule may read on a backend with a tenantHeader (``tenants``); empty:
    # its namespace's own only
    tenants: frozenset[str] = frozenset()
    # a MetricRule's query text (a ClusterMetricRule's is held to CEILING only: ``_size``)
    size: SizeLimits = field(default_factory=SizeLimits)
    # a MetricRule's cost (a ClusterMetricRule is the platform's, and has none)
    cost: CostLimits = field(default_factory=CostLimits)


@dataclass(frozen=True)
class TeamRule:
    """One valid rule, as served."""

    kind: str
    namespace: str  # "" for a ClusterMetricRule
    name: str
    metric: str  # the direct form's; "" for the file form (its metrics are discovered)
    query: str  # the direct form's, as sent: confined to ``namespace`` for a MetricRule
    backend: str
    generation: int
    created: str
    rule: Rule | None = None  # the file form, parsed as the rule file's would be
    selector: str = ""  # the file form's seriesQuery, as sent (confined for a MetricRule)
    # what its query reads (a MetricRule's; its @ reach is checked again at each request)
    reach: Reach = field(default_factory=Reach)

    @property
    def custom(self) -> bool:
        """The file form of a custom-metrics rule (``kind: Custom``)."""
        return self.rule is not None and self.rule.kind == "rules"

    def render_custom(self, series: str, req: ObjectQuery) -> tuple[str, str]:
        """The custom form's query for one request (and the label naming its objects),
        confined like every other query of a MetricRule."""
        assert self.rule is not None
        query, label = custom_query(self.rule, series, req)
        return (confine(query, self.namespace) if self.kind == NAMESPACED else query), label

    def render(self, series: str, namespace: str | None, selector: Selector | None) -> str:
        """The query answering one request: the direct form's as is; the file form's
        metricsQuery rendered for ``series``, then confined like the direct form."""
        if self.rule is None:
            return self.query
        query = external_query(self.rule, series, namespace, selector)
        return confine(query, self.namespace) if self.kind == NAMESPACED else query

    @property
    def key(self) -> Key:
        return (self.kind, self.namespace, self.name)

    def describe(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class Verdict:
    status: str  # "True" | "False"
    reason: str
    message: str


def key_of(kind: str, obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def judge(kind: str, obj: Mapping[str, Any], limits: Limits, now: float | None = None) -> TeamRule | Verdict:
    """One object on its own: its served form, or why it cannot be served. ``now`` (seconds
    since the epoch) is when an ``@`` pin's reach is measured; None leaves that to each
    request."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    namespace = str(meta.get("namespace") or "") if kind == NAMESPACED else ""
    if "query" not in spec:
        return _file_form(kind, obj, namespace, limits, now)
    metric, query = spec.get("metric"), spec.get("query")
    if not isinstance(metric, str) or not _METRIC.fullmatch(metric):
        return Verdict("False", "Invalid", f"spec.metric: {metric!r} is not a metric name")
    if not isinstance(query, str) or not query.strip():
        return Verdict("False", "Invalid", "spec.query: empty")
    backend = str(spec.get("backend") or "")
    refused = _backend_refused(kind, backend, limits)
    if refused is not None:
        return refused
    reach = Reach()
    try:
        check_size(query, _size(kind, limits), "the query")
        if kind == NAMESPACED:
            confined = confine_query(query, namespace)
            sent, reach = confined.query, confined.reach
        else:
            sent = _checked(query)
    except (IsolationError, QueryTooLarge) as e:
        return Verdict("False", "Invalid", f"spec.query: {e}")
    served = TeamRule(
        kind, namespace, **_identity(meta), metric=metric, query=sent, backend=backend, reach=reach
    )
    return _within_cost(served, limits, now, "spec.query")


def _size(kind: str, limits: Limits) -> SizeLimits:
    return limits.size if kind == NAMESPACED else CEILING


class _Identity(TypedDict):
    name: str
    generation: int
    created: str


def _identity(meta: Mapping[str, Any]) -> _Identity:
    """The name, generation and creation time of a rule object, as a TeamRule keeps them."""
    return _Identity(
        name=str(meta.get("name") or ""),
        generation=int(meta.get("generation") or 0),
        created=str(meta.get("creationTimestamp") or ""),
    )


def _within_cost(rule: TeamRule, limits: Limits, now: float | None, key: str) -> TeamRule | Verdict:
    """The rule, or Invalid naming ``key`` when a MetricRule's query reads more than its
    namespace may (a ClusterMetricRule is the platform's and has no such limit)."""
    if rule.kind != NAMESPACED:
        return rule
    reach = rule.reach
    if now is None:  # an @ pin's reach grows with time: each request measures it
        reach = Reach(reach.longest_range_ms, reach.lookback_ms, reach.smallest_step_ms, None)
    costly = over_cost(reach, limits.cost, now or 0.0)
    return rule if costly is None else Verdict("False", "Invalid", f"{key}: {costly}")


def _backend_refused(kind: str, backend: str, limits: Limits) -> Verdict | None:
    if kind != NAMESPACED or backend in limits.backends:
        return None
    allowed = ", ".join(sorted(b or "default" for b in limits.backends))
    return Verdict(
        "False",
        "NotAllowed",
        f"spec.backend: {backend!r} is not one a MetricRule may use (allowed: {allowed})",
    )


_FILE_KEYS = ("seriesQuery", "seriesFilters", "metricsQuery", "name", "resources", "absent")


def _file_form(
    kind: str, obj: Mapping[str, Any], namespace: str, limits: Limits, now: float | None
) -> TeamRule | Verdict:
    """The rule file's shape (``rules`` for kind Custom, ``externalRules`` for External),
    checked by the rule file's own parser."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    section = "externalRules" if spec.get("kind", "Custom") == "External" else "rules"
    backend = str(spec.get("backend") or "")
    refused = _backend_refused(kind, backend, limits)
    if refused is not None:
        return refused
    size = _size(kind, limits)
    for key in ("seriesQuery", "metricsQuery"):
        if isinstance(spec.get(key), str):
            try:
                check_size(spec[key], size, f"spec.{key}")
            except QueryTooLarge as e:
                return Verdict("False", "Invalid", str(e))
    text = yaml.safe_dump({section: [{k: spec[k] for k in _FILE_KEYS if k in spec}]}, sort_keys=False)
    try:
        # a team's regexps are always searched by RE2: linear in the name, whatever the pattern
        config = parse_config(text, "spec", fast_regexps=False)
        (rule,) = config.external_rules if section == "externalRules" else config.rules
        series_query = str(spec["seriesQuery"])
        selector = confine_selector(series_query, namespace) if kind == NAMESPACED else _checked(series_query)
        trial = TeamRule(kind, namespace, "", "", "", backend, 0, "", rule, selector)
        if trial.custom:  # the template renders and confines
            query, _ = custom_query(
                rule, "promhpa_trial_series", ObjectQuery(PODS, namespace or "default", ("p",), None)
            )
        else:
            query = external_query(rule, "promhpa_trial_series", namespace or None, None)
        check_size(query, size, "spec.metricsQuery, rendered")
        reach = confine_query(query, namespace).reach if kind == NAMESPACED else Reach()
    except ConfigError as e:
        return Verdict("False", "Invalid", str(e).replace(f"{section}[0].", ""))
    except (IsolationError, QueryError, QueryTooLarge) as e:
        return Verdict("False", "Invalid", f"spec: {e}")
    served = TeamRule(kind, namespace, **_identity(meta), metric="", query="", backend=backend, rule=rule,
                      selector=selector, reach=reach)  # fmt: skip
    return _within_cost(served, limits, now, "spec.metricsQuery")


def _checked(query: str) -> str:
    """A ClusterMetricRule's query is the platform's: only parsed, not confined."""
    try:
        promql_parser.parse(query)
    except (ValueError, RuntimeError) as e:
        raise IsolationError(f"not valid PromQL: {e}") from None
    return query
