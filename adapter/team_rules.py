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

This release serves the direct form (``metric`` + ``query``, an external metric); the file
form is accepted by the schema and answered ``Unsupported`` until the adapter serves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .isolation import IsolationError, confine

GROUP, VERSION = "promhpa.io", "v1alpha1"
NAMESPACED, CLUSTER = "MetricRule", "ClusterMetricRule"
PATHS = {
    NAMESPACED: f"/apis/{GROUP}/{VERSION}/metricrules",
    CLUSTER: f"/apis/{GROUP}/{VERSION}/clustermetricrules",
}
_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:.-]*")
Key = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True)
class Limits:
    per_namespace: int = 50
    backends: frozenset[str] = frozenset({""})  # "" is the adapter's --prometheus-url


@dataclass(frozen=True)
class TeamRule:
    """One valid rule, as served."""

    kind: str
    namespace: str  # "" for a ClusterMetricRule
    name: str
    metric: str
    query: str  # as sent: confined to ``namespace`` for a MetricRule
    backend: str
    generation: int
    created: str

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


@dataclass
class Assignment:
    """What is served, and each object's verdict."""

    served: dict[tuple[str, str], TeamRule] = field(default_factory=dict)  # (namespace | "", metric)
    verdicts: dict[Key, Verdict] = field(default_factory=dict)

    def lookup(self, namespace: str | None, metric: str) -> TeamRule | None:
        """The rule serving ``metric`` in ``namespace``: the namespace's own, else a cluster rule."""
        return self.served.get((namespace or "", metric)) or self.served.get(("", metric))

    def metrics(self) -> list[str]:
        return sorted({m for _, m in self.served})


def key_of(kind: str, obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def judge(kind: str, obj: Mapping[str, Any], limits: Limits) -> TeamRule | Verdict:
    """One object on its own: its served form, or why it cannot be served."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    namespace = str(meta.get("namespace") or "") if kind == NAMESPACED else ""
    if "query" not in spec:
        return Verdict(
            "False",
            "Unsupported",
            "the file form (seriesQuery/metricsQuery) is not served by this adapter yet: "
            "use the direct form (metric + query), or put the rule in the adapter's rule file",
        )
    metric, query = spec.get("metric"), spec.get("query")
    if not isinstance(metric, str) or not _METRIC.fullmatch(metric):
        return Verdict("False", "Invalid", f"spec.metric: {metric!r} is not a metric name")
    if not isinstance(query, str) or not query.strip():
        return Verdict("False", "Invalid", "spec.query: empty")
    backend = str(spec.get("backend") or "")
    if kind == NAMESPACED and backend not in limits.backends:
        allowed = ", ".join(sorted(b or "default" for b in limits.backends))
        return Verdict(
            "False",
            "NotAllowed",
            f"spec.backend: {backend!r} is not one a MetricRule may use (allowed: {allowed})",
        )
    try:
        sent = confine(query, namespace) if kind == NAMESPACED else _checked(query)
    except IsolationError as e:
        return Verdict("False", "Invalid", f"spec.query: {e}")
    return TeamRule(
        kind,
        namespace,
        str(meta.get("name") or ""),
        metric,
        sent,
        backend,
        int(meta.get("generation") or 0),
        str(meta.get("creationTimestamp") or ""),
    )


def _checked(query: str) -> str:
    """A ClusterMetricRule's query is the platform's: only parsed, not confined."""
    import promql_parser

    try:
        promql_parser.parse(query)
    except (ValueError, RuntimeError) as e:
        raise IsolationError(f"not valid PromQL: {e}") from None
    return query


def assign(
    objects: Iterable[tuple[str, Mapping[str, Any]]],
    last_good: Mapping[Key, TeamRule],
    file_metrics: Iterable[str],
    limits: Limits,
) -> tuple[Assignment, dict[Key, TeamRule]]:
    """Every object judged, then names given out (module docstring); returns the assignment
    and the last valid version of each object still present."""
    out = Assignment()
    good: dict[Key, TeamRule] = {}
    candidates: list[TeamRule] = []
    for kind, obj in objects:
        key = key_of(kind, obj)
        got = judge(kind, obj, limits)
        if isinstance(got, TeamRule):
            good[key] = got
            candidates.append(got)
            continue
        previous = last_good.get(key)
        if previous is not None:
            good[key] = previous  # an invalid edit keeps the last valid version serving
            candidates.append(previous)
            out.verdicts[key] = Verdict(
                "False", got.reason, f"{got.message} (still serving generation {previous.generation})"
            )
        else:
            out.verdicts[key] = got
    held = set(file_metrics)
    order = sorted(candidates, key=lambda r: (r.kind != CLUSTER, r.created, r.namespace, r.name))
    per_namespace: dict[str, int] = {}
    for rule in order:
        where = (rule.namespace, rule.metric)
        holder = out.served.get(where) or (out.served.get(("", rule.metric)) if rule.namespace else None)
        if rule.metric in held:
            problem = Verdict("False", "Conflict", f"{rule.metric!r} is served by the adapter's rule file")
        elif holder is not None:
            problem = Verdict("False", "Conflict", f"{rule.metric!r} is served by {holder.describe()}")
        elif rule.kind == NAMESPACED and per_namespace.get(rule.namespace, 0) >= limits.per_namespace:
            problem = Verdict(
                "False",
                "NotAllowed",
                f"namespace {rule.namespace} already has {limits.per_namespace} served MetricRules "
                "(the adapter's --team-rules-per-namespace)",
            )
        else:
            out.served[where] = rule
            if rule.kind == NAMESPACED:
                per_namespace[rule.namespace] = per_namespace.get(rule.namespace, 0) + 1
            out.verdicts.setdefault(
                rule.key, Verdict("True", "Served", f"served as the external metric {rule.metric!r}")
            )
            continue
        out.verdicts[rule.key] = problem
    return out, good


def condition(
    verdict: Verdict, generation: int, now: str, previous: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The Accepted condition for a verdict (its transition time kept while its status holds)."""
    since = now
    if (
        previous is not None
        and previous.get("status") == verdict.status
        and previous.get("lastTransitionTime")
    ):
        since = str(previous["lastTransitionTime"])
    return {
        "type": "Accepted",
        "status": verdict.status,
        "reason": verdict.reason,
        "message": verdict.message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }
