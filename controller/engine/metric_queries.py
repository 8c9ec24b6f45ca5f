"""The engine's view of the three metrics APIs: answers from what the snapshot recorded.

Live, the controller fetches metrics.k8s.io, custom.metrics.k8s.io and
external.metrics.k8s.io before it decides and records the answers (or the errors) in a
snapshot; the engine then reads them here. The error texts are upstream's metrics-client
texts, since they end up in conditions and events users read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from shared.selectors import SelectorError, from_label_selector

from .model import MetricError, Snapshot
from .pods import PodSample
from .replica_calculator import wrap64

DEFAULT_CUSTOM_METRIC_WINDOW = timedelta(minutes=1)


class MetricFetchError(Exception):
    """The query failed; str() is the message upstream's metrics client would give."""


def _failure(snap: Snapshot, source: str, name: str) -> MetricError | None:
    for e in snap.metric_errors:
        if e.source == source and e.name == name:
            return e
    return None


def resource_metric(snap: Snapshot, resource: str, container: str) -> dict[str, PodSample]:
    """Per-pod usage (milli) of a resource, summed over containers or for one container."""
    source = "ContainerResource" if container else "Resource"
    if err := _failure(snap, source, resource):  # a Resource failure is not a ContainerResource one
        raise MetricFetchError(f"unable to fetch metrics from resource metrics API: {err.message}")
    if not snap.pod_metrics:
        raise MetricFetchError("no metrics returned from resource metrics API")
    out: dict[str, PodSample] = {}
    for pm in snap.pod_metrics:
        if container:
            # A pod whose metrics lack the container is simply missing (upstream #127193).
            for name, usage in pm.containers:
                if name == container:
                    if resource in usage:
                        out[pm.name] = PodSample(usage[resource].milli_value(), pm.timestamp, pm.window)
                    break
            continue
        if not pm.containers or any(resource not in usage for _, usage in pm.containers):
            continue
        # summed in Go's int64, which wraps
        total = wrap64(sum(usage[resource].milli_value() for _, usage in pm.containers))
        out[pm.name] = PodSample(total, pm.timestamp, pm.window)
    return out


def pods_metric(snap: Snapshot, metric: str) -> dict[str, PodSample]:
    if err := _failure(snap, "Pods", metric):
        raise MetricFetchError(f"unable to fetch metrics from custom metrics API: {err.message}")
    out: dict[str, PodSample] = {}
    found = False
    for m in snap.custom_metrics:
        if m.kind == "Pod" and m.metric == metric:
            found = True
            window = (
                timedelta(seconds=m.window_seconds)
                if m.window_seconds is not None
                else DEFAULT_CUSTOM_METRIC_WINDOW
            )
            out[m.name] = PodSample(m.value.milli_value(), m.timestamp, window)
    if not found:
        raise MetricFetchError("no metrics returned from custom metrics API")
    return out


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def object_metric(snap: Snapshot, metric: str, described: Mapping[str, Any]) -> int:
    if err := _failure(snap, "Object", metric):
        raise MetricFetchError(f"unable to fetch metrics from custom metrics API: {err.message}")
    kind, name = str(described.get("kind", "")), str(described.get("name", ""))
    group = _group(str(described.get("apiVersion", "")))
    namespace = str(snap.hpa.get("metadata", {}).get("namespace", ""))
    matches = []
    for m in snap.custom_metrics:
        if m.metric != metric or m.kind != kind:
            continue
        if m.api_version and described.get("apiVersion") and _group(m.api_version) != group:
            continue
        # Namespace objects are looked up by the HPA's own namespace, whatever the name says.
        if m.name == name or (kind == "Namespace" and group == "" and m.name == namespace):
            matches.append(m)
    if len(matches) != 1:
        raise MetricFetchError(
            "unable to fetch metrics from custom metrics API: the custom metrics API server "
            f"returned {len(matches)} results when we asked for exactly one"
        )
    return matches[0].value.milli_value()


def external_metric(snap: Snapshot, metric: str, selector: Mapping[str, Any] | None) -> list[int]:
    if err := _failure(snap, "External", metric):
        raise MetricFetchError(f"unable to fetch metrics from external metrics API: {err.message}")
    try:
        # Live, a nil selector is sent as an empty labelSelector: it selects every series.
        sel = from_label_selector(selector if selector is not None else {})
    except SelectorError as e:  # pragma: no cover - validated before the query
        raise MetricFetchError(str(e)) from e
    values = [
        m.value.milli_value() for m in snap.external_metrics if m.metric == metric and sel.matches(m.labels)
    ]
    if not values:
        raise MetricFetchError("no metrics returned from external metrics API")
    return values
