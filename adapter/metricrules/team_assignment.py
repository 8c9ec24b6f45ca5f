"""Who serves which name: the judged MetricRules and ClusterMetricRules collected,
assigned their metrics (the platform first, then the oldest), and each object's verdict
and condition -- plain data in, plain data out (the rules of precedence are
``team_rules``' docstring)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rules.config import GroupResource

from .team_rules import CLUSTER, CLUSTER_SCOPED, NAMESPACED, Key, Limits, TeamRule, Verdict, judge, key_of


@dataclass(frozen=True)
class Served:
    rule: TeamRule
    series: str = ""  # the file form: the series name the metric was discovered as


# What a rule serves under: an external metric's name, or a custom metric's (resource, name)
Name = str | tuple[GroupResource, str]


def show(name: Name) -> str:
    return name if isinstance(name, str) else f"{name[0]}/{name[1]}"


@dataclass
class Assignment:
    """What is served, and each object's verdict."""

    served: dict[tuple[str, Name], Served] = field(default_factory=dict)  # (namespace | "", name)
    verdicts: dict[Key, Verdict] = field(default_factory=dict)

    def lookup(self, namespace: str | None, metric: str) -> Served | None:
        """What serves the external ``metric`` in ``namespace``: the namespace's own rule,
        else a cluster rule."""
        return self.served.get((namespace or "", metric)) or self.served.get(("", metric))

    def lookup_custom(self, namespace: str | None, resource: GroupResource, metric: str) -> Served | None:
        """What serves the custom ``metric`` of ``resource`` objects in ``namespace``."""
        name = (resource, metric)
        return self.served.get((namespace or "", name)) or self.served.get(("", name))

    def metrics(self) -> list[str]:
        return sorted({n for _, n in self.served if isinstance(n, str)})

    def custom_metrics(self) -> list[tuple[GroupResource, str]]:
        return sorted({n for _, n in self.served if not isinstance(n, str)}, key=lambda n: (str(n[0]), n[1]))


@dataclass
class Judged:
    """Every object judged on its own: the rules that may serve (an invalid edit's last valid
    version among them) and the verdicts already final."""

    candidates: dict[Key, TeamRule] = field(default_factory=dict)
    verdicts: dict[Key, Verdict] = field(default_factory=dict)


def judge_all(
    objects: Iterable[tuple[str, Mapping[str, Any]]],
    last_good: Mapping[Key, TeamRule],
    limits: Limits,
    now: float | None = None,
) -> Judged:
    """Every object judged here, in this process (the adapter judges in workers instead:
    ``adapter.metricrules.judging``) and collected."""
    objs = list(objects)
    return collect(objs, {key_of(k, o): judge(k, o, limits, now) for k, o in objs}, last_good)


def collect(
    objects: Iterable[tuple[str, Mapping[str, Any]]],
    judgments: Mapping[Key, TeamRule | Verdict],
    last_good: Mapping[Key, TeamRule],
) -> Judged:
    """Each object's judgment, with an invalid edit's last valid version kept serving."""
    out = Judged()
    for kind, obj in objects:
        key = key_of(kind, obj)
        got = judgments[key]
        if isinstance(got, TeamRule):
            out.candidates[key] = got
            continue
        previous = last_good.get(key)
        if previous is not None:
            out.candidates[key] = previous  # an invalid edit keeps the last valid version serving
            out.verdicts[key] = Verdict(
                "False", got.reason, f"{got.message} (still serving generation {previous.generation})"
            )
        else:
            out.verdicts[key] = got
    return out


def assign(
    objects: Iterable[tuple[str, Mapping[str, Any]]],
    last_good: Mapping[Key, TeamRule],
    file_metrics: Iterable[str],
    limits: Limits,
    discovered: Mapping[Key, Mapping[Any, str]] | None = None,  # Name -> series name
    file_custom: Iterable[tuple[GroupResource, str]] = (),
) -> tuple[Assignment, dict[Key, TeamRule]]:
    """Every object judged, then names given out (module docstring); returns the assignment
    and the last valid version of each object still present."""
    judged = judge_all(objects, last_good, limits)
    return give_out(judged, file_metrics, limits, discovered, file_custom), judged.candidates


def give_out(
    judged: Judged,
    file_metrics: Iterable[str],
    limits: Limits,
    discovered: Mapping[Key, Mapping[Any, str]] | None = None,  # Name -> series name
    file_custom: Iterable[tuple[GroupResource, str]] = (),
) -> Assignment:
    """Names given out among the judged rules. ``discovered``: for each file-form rule, the
    metrics its seriesQuery found (metric -> series name)."""
    out = Assignment(verdicts=dict(judged.verdicts))
    candidates = list(judged.candidates.values())
    held: set[Name] = {*file_metrics, *file_custom}
    found = discovered or {}
    order = sorted(candidates, key=lambda r: (r.kind != CLUSTER, r.created, r.namespace, r.name))
    per_namespace: dict[str, int] = {}
    for rule in order:
        if rule.kind == NAMESPACED and per_namespace.get(rule.namespace, 0) >= limits.per_namespace:
            out.verdicts[rule.key] = Verdict(
                "False",
                "NotAllowed",
                f"namespace {rule.namespace} already has {limits.per_namespace} served MetricRules "
                "(the adapter's --team-rules-per-namespace)",
            )
            continue
        names: dict[Name, str] = {rule.metric: ""} if rule.rule is None else dict(found.get(rule.key, {}))
        if rule.kind == NAMESPACED:  # a namespace's rule serves only its namespace's objects
            names = {n: v for n, v in names.items() if isinstance(n, str) or n[0] not in CLUSTER_SCOPED}
        taken: dict[Name, str] = {}  # name -> who holds it
        for metric, series in sorted(names.items(), key=lambda kv: show(kv[0])):
            problem = _held_by(out, held, rule.namespace, metric)
            if problem:
                taken[metric] = problem
            else:
                out.served[(rule.namespace, metric)] = Served(rule, series)
        if rule.rule is None and taken:
            out.verdicts[rule.key] = Verdict("False", "Conflict", taken[rule.metric])
            continue
        if rule.kind == NAMESPACED:
            per_namespace[rule.namespace] = per_namespace.get(rule.namespace, 0) + 1
        out.verdicts.setdefault(rule.key, _served_verdict(rule, names, taken))
    return out


def _held_by(out: Assignment, held: set[Name], namespace: str, metric: Name) -> str:
    """Who already holds ``metric`` for ``namespace`` (words for a status), or ""."""
    if metric in held:
        return f"{show(metric)!r} is served by the adapter's rule file"
    holder = out.served.get((namespace, metric)) or (out.served.get(("", metric)) if namespace else None)
    return f"{show(metric)!r} is served by {holder.rule.describe()}" if holder is not None else ""


def _served_verdict(rule: TeamRule, names: Mapping[Name, str], taken: Mapping[Name, str]) -> Verdict:
    if rule.rule is None:
        return Verdict("True", "Served", f"served as the external metric {rule.metric!r}")
    mine = sorted(show(n) for n in set(names) - set(taken))
    if not names:
        return Verdict(
            "True", "Served", "no series match spec.seriesQuery yet (looked for again every resync)"
        )
    what = "custom" if rule.custom else "external"
    text = f"serving {len(mine)} {what} metric(s): {', '.join(mine[:10])}" + ("..." if len(mine) > 10 else "")
    if taken:
        text += "; not served, held elsewhere: " + "; ".join(list(taken.values())[:5])
    return Verdict("True", "Served", text)


def condition(
    verdict: Verdict,
    generation: int,
    now: str,
    previous: Mapping[str, Any] | None,
    type_: str = "Accepted",
) -> dict[str, Any]:
    """The condition for a verdict (its transition time kept while its status holds)."""
    since = now
    if (
        previous is not None
        and previous.get("status") == verdict.status
        and previous.get("lastTransitionTime")
    ):
        since = str(previous["lastTransitionTime"])
    return {
        "type": type_,
        "status": verdict.status,
        "reason": verdict.reason,
        "message": verdict.message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }
