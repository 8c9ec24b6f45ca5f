"""The objects a snapshot carries beside its HPA, parsed: pods (with what their spec
contributes to resource requests) and the three metrics APIs' values. Each error names the
dotted path of the field (``SnapshotError``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.quantity import Quantity

from .model import Container, CustomMetric, ExternalMetric, Pod, PodMetrics
from .reader import SnapshotError, _Reader


def _container(r: _Reader) -> Container:
    return Container(r.string("name"), r.obj("resources").quantity_map("requests"))


# what a pod's spec contributes to its Pod: containers, sidecars, other init containers, the
# pod-level requests and the overhead (the same for every pod of one template)
PodSpecParts = tuple[
    tuple[Container, ...],
    tuple[Container, ...],
    tuple[Container, ...],
    dict[str, Quantity] | None,
    dict[str, Quantity] | None,
]


def parse_pod_spec(spec: _Reader) -> PodSpecParts:
    sidecars: list[Container] = []
    inits: list[Container] = []
    for c in spec.items("initContainers"):
        (sidecars if c.string("restartPolicy") == "Always" else inits).append(_container(c))
    return (
        tuple(_container(c) for c in spec.items("containers")),
        tuple(sidecars),
        tuple(inits),
        spec.obj("resources").quantity_map("requests") if spec.has("resources") else None,
        spec.quantity_map("overhead") if spec.has("overhead") else None,
    )


def parse_pod(r: _Reader, spec: PodSpecParts | None = None, labels: dict[str, str] | None = None) -> Pod:
    """``spec`` and ``labels``: already parsed from this very pod's (the live controller's
    ``PodParses`` shares them between the pods of one template)."""
    meta, status = r.obj("metadata"), r.obj("status")
    ready: tuple[str, datetime | None] | None = None
    for c in status.items("conditions"):
        if c.string("type") == "Ready":
            ready = (c.string("status"), c.time("lastTransitionTime"))
            break
    containers, sidecars, inits, pod_requests, overhead = spec or parse_pod_spec(r.obj("spec"))
    return Pod(
        name=meta.string("name"),
        namespace=meta.string("namespace"),
        labels=meta.str_map("labels") if labels is None else labels,
        phase=status.string("phase"),
        deleted=meta.time("deletionTimestamp") is not None,
        start_time=status.time("startTime"),
        ready_condition=ready,
        containers=containers,
        sidecars=sidecars,
        init_containers=inits,
        pod_requests=pod_requests,
        overhead=overhead,
    )


def parse_pod_metrics(r: _Reader) -> PodMetrics:
    meta = r.obj("metadata")
    return PodMetrics(
        name=meta.string("name"),
        namespace=meta.string("namespace"),
        timestamp=r.time("timestamp"),
        window=r.duration("window") or timedelta(0),
        containers=tuple((c.string("name"), c.quantity_map("usage")) for c in r.items("containers")),
    )


def parse_custom_metric(r: _Reader) -> CustomMetric:
    d = r.obj("describedObject")
    metric = r.obj("metric").string("name") or r.string("metricName")  # v1beta2 or v1beta1 shape
    value = r.quantity("value")
    if value is None:
        raise SnapshotError(f"{r.path}.value", "is required")
    return CustomMetric(
        d.string("kind"),
        d.string("apiVersion"),
        d.string("name"),
        metric,
        r.time("timestamp"),
        value,
        r.integer("windowSeconds", bits=64),
    )


def parse_external_metric(r: _Reader) -> ExternalMetric:
    value = r.quantity("value")
    if value is None:
        raise SnapshotError(f"{r.path}.value", "is required")
    return ExternalMetric(r.string("metricName"), r.str_map("metricLabels"), r.time("timestamp"), value)
