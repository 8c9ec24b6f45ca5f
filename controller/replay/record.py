"""What Prometheus recorded, read through the adapter's own rule file.

Each metric of the HPA is found the way the adapter finds it -- the rule's discovery, then
the query the adapter would run -- so a replay reads exactly the numbers the live HPA read,
only over a range: per-pod metrics for every pod of the workload (names matching
``pod_regex``) summed into the total load, Object and External values as served. The real
replica count comes from kube-state-metrics (``kube_deployment_status_replicas`` or a
query given) when Prometheus has it.

This is the one replay module with I/O; it reuses the adapter's rule translation and
Prometheus client (the import contracts allow exactly these edges).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from promclient.prometheus import Prometheus, PrometheusSettings
from rules import admission
from rules.config import Config, ConfigError, GroupResource, Rule
from rules.naming import PODS
from rules.queries import ObjectQuery, container_query, custom_query, external_query
from rules.series import index_series
from shared.kube.resources import by_kind
from shared.selectors import from_label_selector

from .simulate import Step


class RecordError(Exception):
    """A metric of the HPA that no rule serves, or a query Prometheus refused."""


@dataclass(frozen=True)
class Series:
    """One metric over the range: per step, the recorded total (None: no data)."""

    query: str
    totals: dict[float, float]
    reporting: dict[float, int]  # pods with a sample, per step (per-pod metrics only)


Progress = Callable[[str], None]


def rules(path: str) -> Config:
    """The adapter's rule file (``-``: standard input), with the adapter's own validation
    (errors name file:line)."""
    try:
        return admission.load(path)  # the bounded loader, and the adapter's own verdict
    except ConfigError as e:
        raise RecordError(str(e)) from None


def prometheus(url: str, timeout: float, **auth: Any) -> Prometheus:
    """The history's Prometheus, authenticated as the adapter's flags say (``auth_flags``)."""
    return Prometheus(PrometheusSettings(url, timeout=timeout, **auth), cache_ttl=0)


def _progress(text: str) -> None:
    """One line on a terminal, rewritten as the range queries go; nothing in a log."""
    if sys.stderr.isatty():
        print(f"\r{text:<78}", end="" if text else "\r", file=sys.stderr, flush=True)


async def _find(
    prom: Prometheus, rules: tuple[Rule, ...], want: Callable[[Any, str], bool], max_age: timedelta
) -> tuple[Rule, str, Any]:
    for rule in rules:
        series = await prom.series(rule.series_query, max_age)
        custom, external = index_series(rule, series)
        for gr, metric, name in custom:
            if want(gr, metric):
                return rule, name, gr
        for metric, name in external:
            if want(None, metric):
                return rule, name, None
    raise RecordError("no rule serves it")


async def record(
    hpa: dict[str, Any],
    config: Config,
    prom: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    pod_regex: str | None = None,
    real_replicas_query: str | None = None,
    progress: Progress = _progress,
) -> list[Step]:
    spec, ns = hpa["spec"], hpa["metadata"].get("namespace", "default")
    target = spec["scaleTargetRef"]["name"]
    pods = re.compile(pod_regex or default_pod_regex(target))
    max_age = (datetime.now(start.tzinfo) - start) + timedelta(minutes=10)
    metrics = spec.get("metrics") or []
    recorded: list[Series] = []
    for i, m in enumerate(metrics):
        progress(f"replay: querying Prometheus for metric {i + 1} of {len(metrics)} ({m.get('type')})")
        try:
            recorded.append(await _metric(m, config, prom, ns, pods, start, end, step, max_age))
        except RecordError as e:
            raise RecordError(f"spec.metrics[{i}] ({m.get('type')}): {e}") from None
    progress("replay: querying Prometheus for the real replica count")
    real_q = real_replicas_query or (
        f'kube_deployment_status_replicas{{namespace="{ns}",deployment="{target}"}}'
        if spec["scaleTargetRef"].get("kind") == "Deployment"
        else None
    )
    real: dict[float, float] = {}
    if real_q:
        for _, values in await prom.query_range(real_q, start, end, step):
            for t, v in values:
                real[t] = real.get(t, 0.0) + v
    if not real and recorded and recorded[0].reporting:  # no kube-state-metrics: pods reporting
        real = {t: float(n) for t, n in recorded[0].reporting.items()}
    progress("")
    steps = []
    at = start
    while at <= end:
        ts = round(at.timestamp(), 3)
        steps.append(
            Step(at, tuple(s.totals.get(ts) for s in recorded), int(real[ts]) if ts in real else None)
        )
        at += step
    return steps


async def _metric(
    m: dict[str, Any],
    config: Config,
    prom: Prometheus,
    ns: str,
    pods: re.Pattern[str],
    start: datetime,
    end: datetime,
    step: timedelta,
    max_age: timedelta,
) -> Series:
    kind = m.get("type")
    per_pod = False
    pod_label: str | None = None
    if kind in ("Resource", "ContainerResource"):
        src = m["resource" if kind == "Resource" else "containerResource"]
        rr = config.resource_rules
        q = None
        if rr is not None:
            q = {"cpu": rr.cpu, "memory": rr.memory}.get(src["name"])
        if q is None:
            raise RecordError(f"no resourceRules for {src['name']!r} in the rule file")
        query, pod_label, container_label = container_query(q, ns, None)
        per_pod = True
        container = src.get("container") if kind == "ContainerResource" else None

        def keep(labels: dict[str, str]) -> bool:
            ours = bool(pods.match(labels.get(pod_label or "", "")))
            return ours and (container is None or labels.get(container_label) == container)

    elif kind == "Pods":
        name = m["pods"]["metric"]["name"]
        rule, series, _ = await _find(
            prom, config.rules, lambda gr, metric: gr == PODS and metric == name, max_age
        )
        query, pod_label = custom_query(rule, series, ObjectQuery(PODS, ns, ()))
        per_pod = True

        def keep(labels: dict[str, str]) -> bool:
            return bool(pods.match(labels.get(pod_label or "", "")))

    elif kind == "Object":
        src = m["object"]
        obj = src["describedObject"]
        group = obj.get("apiVersion", "v1").rpartition("/")[0] if "/" in obj.get("apiVersion", "") else ""
        known = by_kind(group, obj["kind"])
        gr = GroupResource(group, known.plural if known else obj["kind"].lower() + "s")
        name = src["metric"]["name"]
        rule, series, _ = await _find(
            prom, config.rules, lambda g, metric: g == gr and metric == name, max_age
        )
        query, _label = custom_query(rule, series, ObjectQuery(gr, ns, (obj["name"],)))

        def keep(labels: dict[str, str]) -> bool:
            return True

    elif kind == "External":
        src = m["external"]["metric"]
        name = src["name"]
        rule, series, _ = await _find(
            prom, config.external_rules, lambda g, metric: g is None and metric == name, max_age
        )
        sel = src.get("selector")
        selector = from_label_selector(sel) if sel else None
        query = external_query(rule, series, ns, selector)

        def keep(labels: dict[str, str]) -> bool:
            return True

    else:
        raise RecordError(f"metric type {kind!r} cannot be replayed")
    totals: dict[float, float] = {}
    reporting: dict[float, int] = {}
    for labels, values in await prom.query_range(query, start, end, step):
        if not keep(labels):
            continue
        for t, v in values:
            t = round(t, 3)
            totals[t] = totals.get(t, 0.0) + v
            if per_pod:
                reporting[t] = reporting.get(t, 0) + 1
    return Series(query, totals, reporting)


async def pod_startup(
    prom: Prometheus, namespace: str, pod_regex: str, start: datetime, end: datetime
) -> tuple[timedelta, int] | None:
    """How long the workload's pods took from creation to ready, from kube-state-metrics
    (``kube_pod_status_ready_time - kube_pod_created``): the median over the pods seen in the
    range, and how many there were. None when Prometheus has neither metric.

    One evaluation at ``end`` over the whole range (``max_over_time``) sees every pod with a
    sample in it, however short its life: evaluating on a grid of steps missed the pods that
    came and went between two steps (a 50-step grid over a day is half an hour a step)."""
    sel = f'namespace="{namespace}"'
    window = f"{max(1, math.ceil((end - start).total_seconds() * 1000))}ms"
    query = (
        f"max_over_time(kube_pod_status_ready_time{{{sel}}}[{window}])"
        f" - on(namespace, pod) max_over_time(kube_pod_created{{{sel}}}[{window}])"
    )
    latest: dict[str, float] = {}
    pods = re.compile(pod_regex)
    for labels, values in await prom.query_range(query, end, end, timedelta(seconds=1)):
        if values and pods.match(labels.get("pod", "")):
            latest[labels["pod"]] = values[-1][1]
    ordered = sorted(v for v in latest.values() if v >= 0)
    if not ordered:
        return None
    return timedelta(seconds=ordered[len(ordered) // 2]), len(ordered)


def default_pod_regex(target: str) -> str:
    """A Deployment's pods: <name>-<ReplicaSet hash>-<id>."""
    return f"^{re.escape(target)}-[a-z0-9]+(-[a-z0-9]+)?$"
