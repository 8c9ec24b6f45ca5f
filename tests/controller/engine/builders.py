"""Concise snapshot builders for engine tests: plain dicts in the wire format."""

from __future__ import annotations

from typing import Any

NOW = "2026-01-01T12:00:00Z"
LONG_AGO = "2026-01-01T11:00:00Z"


def pod(
    name: str,
    cpu_request: str | None = "1",
    phase: str = "Running",
    ready: str | None = "True",
    start: str | None = LONG_AGO,
    transition: str | None = LONG_AGO,
    deleted: bool = False,
    labels: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels or {"app": "web"}}
    if deleted:
        meta["deletionTimestamp"] = LONG_AGO
    if containers is None:
        req = {"cpu": cpu_request} if cpu_request is not None else {}
        containers = [{"name": "app", "resources": {"requests": req}}]
    status: dict[str, Any] = {"phase": phase}
    if start:
        status["startTime"] = start
    if ready is not None:
        cond: dict[str, Any] = {"type": "Ready", "status": ready}
        if transition:
            cond["lastTransitionTime"] = transition
        status["conditions"] = [cond]
    return {"metadata": meta, "spec": {"containers": containers}, "status": status}


def pod_metrics(
    name: str, cpu: str, timestamp: str = NOW, window: str = "1m0s", container: str = "app"
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "timestamp": timestamp,
        "window": window,
        "containers": [{"name": container, "usage": {"cpu": cpu}}],
    }


def pods_metric(name: str, value: str, metric: str = "qps") -> dict[str, Any]:
    return {
        "describedObject": {"kind": "Pod", "name": name, "apiVersion": "v1"},
        "metric": {"name": metric},
        "timestamp": NOW,
        "value": value,
    }


def cpu_metric(utilization: int) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


def external_metric(
    name: str = "qps", value: str | None = None, average: str | None = None
) -> dict[str, Any]:
    target: dict[str, Any] = (
        {"type": "Value", "value": value} if value else {"type": "AverageValue", "averageValue": average}
    )
    return {"type": "External", "external": {"metric": {"name": name, "selector": {}}, "target": target}}


def snapshot(
    current: int = 3,
    metrics: list[dict[str, Any]] | None = None,
    pods: list[dict[str, Any]] | None = None,
    pod_metrics_: list[dict[str, Any]] | None = None,
    min_replicas: int | None = 1,
    max_replicas: int = 10,
    behavior: dict[str, Any] | None = None,
    history: dict[str, Any] | None = None,
    external: list[tuple[str, str]] | None = None,
    custom: list[dict[str, Any]] | None = None,
    status_replicas: int | None = None,
    controller: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": max_replicas,
        "metrics": metrics if metrics is not None else [cpu_metric(50)],
    }
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    if behavior is not None:
        spec["behavior"] = behavior
    status: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": current}
    if conditions:
        status["conditions"] = conditions
    snap: dict[str, Any] = {
        "now": NOW,
        "controller": controller or {"cpuInitializationPeriod": "2m", "initialReadinessDelay": "10s"},
        "hpa": {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": spec,
            "status": status,
        },
        "scale": {
            "spec": {"replicas": current},
            "status": {
                "replicas": current if status_replicas is None else status_replicas,
                "selector": "app=web",
            },
        },
        "pods": pods if pods is not None else [pod(f"web-{i}") for i in range(current)],
        "podMetrics": pod_metrics_ or [],
        "customMetrics": custom or [],
        "externalMetrics": [
            {"metricName": n, "metricLabels": {}, "timestamp": NOW, "value": v} for n, v in (external or [])
        ],
        "history": history if history is not None else {"recommendations": []},
    }
    snap.update(extra)
    return snap
