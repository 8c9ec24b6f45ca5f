"""Varied HPA snapshots from a seed: every metric source and target type, missing and
failing metrics, pod phases, readiness and CPU initialization, behaviors with per-direction
tolerance, bounds, scale to zero, history, feature gates and the scale's own failures.

Times are whole seconds at offsets 2 or 3 modulo 5 from ``now``, so no generated time sits exactly on
a boundary (an initialization period, a stabilization window): there upstream compares
against its wall clock, a few milliseconds past ``now``, and ``decide`` against ``now``.
"""

from __future__ import annotations

import random
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NS = "shop"
UNKNOWN_ERROR = 'an error on the server ("unknown") has prevented the request from succeeding'
JSON = dict[str, Any]


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def odd(rng: random.Random, low: int, high: int) -> int:
    """A whole number of seconds that is never a boundary: 2 or 3 modulo 5, while every
    window, period and delay generated is 0 or 1 modulo 5."""
    return rng.randrange(low, high) * 5 + rng.choice([2, 3])


def milli(v: int) -> str:
    return f"{v}m" if v % 1000 else str(v // 1000)


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pod(self, i: int, labels: JSON) -> JSON:
        r = self.rng
        phase = r.choices(["Running", "Pending", "Failed", "Succeeded"], [85, 7, 4, 4])[0]
        started = odd(r, 5, 900)
        ready = r.random() < 0.85
        containers = []
        for c in range(r.choice([1, 1, 2])):
            req: JSON = {}
            if r.random() < 0.93:
                req["cpu"] = milli(r.choice([100, 200, 250, 500, 1000]))
            if r.random() < 0.8:
                req["memory"] = r.choice(["64Mi", "128Mi", "256Mi"])
            containers.append({"name": f"c{c}", "image": "x", "resources": {"requests": req}})
        inits: list[JSON] = []
        if r.random() < 0.1:  # sidecars (read before the containers from 1.38) and a classic init
            sidecar: JSON = {"name": "s0", "image": "x", "restartPolicy": "Always", "resources": {}}
            if r.random() < 0.6:
                sidecar["resources"] = {"requests": {"cpu": milli(r.choice([50, 100]))}}
            inits.append(sidecar)
            if r.random() < 0.5:
                inits.insert(0, {"name": "i0", "image": "x", "resources": {"requests": {"cpu": "2"}}})
        pod: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": NS, "labels": labels},
            "spec": {"containers": containers},
            "status": {"phase": phase},
        }
        if inits:
            pod["spec"]["initContainers"] = inits
        if r.random() < 0.08:  # pod-level requests (read from 1.34, with PodLevelResources)
            pod["spec"]["resources"] = {"requests": {"cpu": milli(r.choice([300, 600, 1500]))}}
        if r.random() < 0.06:  # added to pod-level requests before 1.38, left out from 1.38
            pod["spec"]["overhead"] = {"cpu": milli(r.choice([50, 250])), "memory": "16Mi"}
        if r.random() < 0.97:
            pod["status"]["startTime"] = ts(started)
        if phase == "Running" or r.random() < 0.3:
            transition = min(started, odd(r, 0, 180))
            pod["status"]["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": ts(transition),
                }
            ]
        if r.random() < 0.05:
            pod["metadata"]["deletionTimestamp"] = ts(odd(r, 0, 10))
        return pod

    def pod_metrics(self, pod: JSON) -> JSON | None:
        r = self.rng
        if r.random() < 0.08:
            return None  # missing
        containers = []
        for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            if (
                r.random() < 0.03
                or c.get("restartPolicy", "Always" if c["name"][0] == "c" else "") != "Always"
            ):
                continue  # a container without metrics (or a classic init container, finished)
            containers.append(
                {
                    "name": c["name"],
                    "usage": {"cpu": self.cpu_usage(), "memory": f"{r.randrange(10, 400)}Mi"},
                }
            )
        return {
            "metadata": {"name": pod["metadata"]["name"], "namespace": NS},
            "timestamp": ts(odd(r, 0, 60)),
            "window": r.choice(["30s", "1m", "5m"]),
            "containers": containers,
        }

    def cpu_usage(self) -> str:
        """Mostly ordinary; now and then so large that the utilization percentage passes
        int32 (clamped from 1.38, truncated before) or near MaxInt64, so that two pods' sum
        overflows int64 (exact from 1.38)."""
        r = self.rng
        x = r.random()
        if x < 0.01:
            return "9223372036854775"
        if x < 0.02:
            return str(r.choice([30000000, 5000000000]))
        return milli(r.randrange(0, 2000))

    def target(self, kinds: list[str]) -> JSON:
        r = self.rng
        kind = r.choice(kinds)
        if kind == "Utilization":
            return {"type": "Utilization", "averageUtilization": r.choice([30, 50, 60, 75, 80, 90])}
        if kind == "AverageValue":
            return {
                "type": "AverageValue",
                "averageValue": milli(r.choice([100, 250, 500, 1000, 5000, 20000])),
            }
        return {"type": "Value", "value": milli(r.choice([1000, 5000, 20000, 100000]))}

    def metric(self, names: list[str]) -> JSON:
        r = self.rng
        kind = r.choices(
            ["Resource", "ContainerResource", "Pods", "Object", "External"], [30, 10, 20, 20, 20]
        )[0]
        if kind == "Resource":
            res = r.choice(["cpu", "cpu", "memory"])
            return {
                "type": kind,
                "resource": {"name": res, "target": self.target(["Utilization", "AverageValue"])},
            }
        if kind == "ContainerResource":
            return {
                "type": kind,
                "containerResource": {
                    "name": "cpu",
                    "container": r.choice(["c0", "c1"]),
                    "target": self.target(["Utilization", "AverageValue"]),
                },
            }
        name = r.choice(names)
        ident: JSON = {"name": name}
        if r.random() < 0.2:
            ident["selector"] = {"matchLabels": {"queue": r.choice(["a", "b"])}}
        if kind == "Pods":
            return {"type": kind, "pods": {"metric": ident, "target": self.target(["AverageValue"])}}
        if kind == "Object":
            return {
                "type": kind,
                "object": {
                    "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "front"},
                    "metric": ident,
                    "target": self.target(["Value", "AverageValue"]),
                },
            }
        return {"type": kind, "external": {"metric": ident, "target": self.target(["Value", "AverageValue"])}}

    def rules(self) -> JSON:
        r = self.rng
        rules: JSON = {}
        if r.random() < 0.6:
            rules["stabilizationWindowSeconds"] = r.choice([0, 15, 61, 121, 301])
        if r.random() < 0.5:
            rules["selectPolicy"] = r.choices(["Max", "Min", "Disabled"], [45, 45, 10])[0]
        if r.random() < 0.6:
            rules["policies"] = [
                {
                    "type": r.choice(["Pods", "Percent"]),
                    # a huge Percent takes the scale-up limit past int32 (saturated from 1.38)
                    "value": r.choices([1, 2, 4, 10, 50, 100, 2147483647], [10, 10, 10, 10, 10, 10, 1])[0],
                    "periodSeconds": r.choice([15, 60, 120]),
                }
                for _ in range(r.choice([1, 1, 2]))
            ]
        if r.random() < 0.3:
            rules["tolerance"] = r.choice(["0", "0.01", "0.05", "0.2"])
        return rules

    def history(self, current: int) -> JSON | None:
        r = self.rng
        if r.random() < 0.2:
            return None  # first sight
        recs = [
            {"replicas": max(0, current + r.randrange(-3, 4)), "timestamp": ts(odd(r, 1, 200))}
            for _ in range(r.choice([0, 1, 2, 4]))
        ]
        events = lambda: [  # noqa: E731
            {"replicaChange": r.randrange(1, 4), "timestamp": ts(odd(r, 1, 120))}
            for _ in range(r.choice([0, 0, 1, 2]))
        ]
        return {"recommendations": recs, "scaleUpEvents": events(), "scaleDownEvents": events()}

    def snapshot(self) -> JSON:
        r = self.rng
        labels = {"app": "web"}
        # now and then a large target (of which only a few pods are listed): its scale-up
        # limits pass int32
        current = r.choices([0, 1, 2, 3, 5, 8, 12, 3000], [5, 15, 20, 20, 20, 12, 8, 2])[0]
        names = ["requests", "queue_depth", "latency"]
        metrics = [self.metric(names) for _ in range(r.choice([1, 1, 1, 2, 3]))]
        min_replicas = r.choices([None, 0, 1, 2, 3], [20, 10, 40, 20, 10])[0]
        max_replicas = r.choice([1, 3, 5, 10, 20, 20, 100000] if current > 12 else [1, 3, 5, 10, 20])
        if min_replicas is not None and min_replicas > max_replicas:
            min_replicas = max_replicas
        spec: JSON = {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": max_replicas,
            "metrics": metrics,
        }
        if min_replicas is not None:
            spec["minReplicas"] = min_replicas
        if r.random() < 0.55:
            spec["behavior"] = {k: self.rules() for k in ("scaleUp", "scaleDown") if r.random() < 0.8}
        n_pods = min(current + r.choice([0, 0, 0, 1, -1]), 14) if current else 0
        pods = [self.pod(i, labels) for i in range(n_pods)]
        if r.random() < 0.05:
            pods.append(self.pod(99, {"app": "other"}))
        status: JSON = {"currentReplicas": current, "desiredReplicas": max(0, current + r.randrange(-1, 2))}
        if r.random() < 0.3:
            status["lastScaleTime"] = ts(odd(r, 1, 600))
        conditions = []
        for ctype, reasons in (
            ("AbleToScale", ["SucceededRescale", "ReadyForNewScale", "ScaleDownStabilized"]),
            ("ScalingActive", ["ValidMetricFound", "FailedGetResourceMetric"]),
            ("ScalingLimited", ["DesiredWithinRange", "TooManyReplicas"]),
            ("ScaledToZero", ["ScaledToZero", "NotScaledToZero"]),
        ):
            if r.random() < 0.5:
                reason = r.choice(reasons)
                cond: JSON = {
                    "type": ctype,
                    "status": "True"
                    if reason in ("SucceededRescale", "ReadyForNewScale", "ValidMetricFound", "ScaledToZero")
                    else "False",
                    "lastTransitionTime": ts(odd(r, 1, 900)),
                    "reason": reason,
                    "message": "earlier",
                }
                if r.random() < 0.1:
                    cond["observedGeneration"] = r.randrange(1, 5)
                conditions.append(cond)
        if current == 0 and min_replicas == 0 and r.random() < 0.6:
            conditions = [c for c in conditions if c["type"] != "ScaledToZero"] + [
                {
                    "type": "ScaledToZero",
                    "status": "True",
                    "lastTransitionTime": ts(61),
                    "reason": "ScaledToZero",
                    "message": "x",
                }
            ]
        if conditions:
            status["conditions"] = conditions
        metadata: JSON = {"name": "web", "namespace": NS}
        if r.random() < 0.7:
            metadata["generation"] = r.randrange(1, 9)
            if r.random() < 0.7:
                status["observedGeneration"] = metadata["generation"] - r.choice([0, 0, 1])
        gates = r.choice(
            [
                {},
                {"HPAScaleToZero": True, "HPAGeneration": True, "HPAOptimizedSelectorStore": True},
                {"HPAScaleToZero": False},
                {"HPAGeneration": False},
                {"HPAScaleToZero": False, "HPAGeneration": False, "HPAOptimizedSelectorStore": False},
                # gates of the older releases: an alpha turned on, a beta turned off
                {"HPAScaleToZero": True},
                {"HPAConfigurableTolerance": True},
                {"HPAConfigurableTolerance": False},
                {"PodLevelResources": False},
            ]
        )
        snap: JSON = {
            "now": ts(0),
            "controller": {
                "tolerance": r.choice([0.1, 0.1, 0.05, 0.2]),
                "cpuInitializationPeriod": r.choice(["5m", "2m", "30s"]),
                "initialReadinessDelay": r.choice(["30s", "10s"]),
                "downscaleStabilizationWindow": r.choice(["5m", "1m", "0s"]),
                "featureGates": gates,
            },
            "hpa": {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": metadata,
                "spec": spec,
                "status": status,
            },
            "pods": pods,
        }
        selector = r.choices(
            ["app=web", "app=web,tier!=canary", "app in (web,api)", "app=web,", ""], [80, 8, 6, 3, 3]
        )[0]
        if r.random() < 0.03:
            snap["scaleError"] = 'deployments.apps "web" not found'
        else:
            snap["scale"] = {
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"replicas": current},
                "status": {"replicas": max(0, current + r.choice([0, 0, 0, -1, 1])), "selector": selector},
            }
        if r.random() < 0.04:
            snap["scaleUpdateError"] = "the server is currently unable to handle the request"
        # the metrics APIs answer for the pods the scale's selector picks (app=web), as live
        selected = [p for p in pods if p["metadata"]["labels"].get("app") == "web"]
        snap["podMetrics"] = [m for p in selected if (m := self.pod_metrics(p)) is not None]
        snap["customMetrics"], snap["externalMetrics"], errors = self.metric_values(metrics, selected)
        if errors:
            snap["metricErrors"] = errors
        history = self.history(current)
        if history is not None:
            snap["history"] = history
        if r.random() < 0.04:
            snap["selectingHPAs"] = [f"{NS}/web", f"{NS}/web-canary"]
        return snap

    def external_value(self) -> str:
        """Mostly ordinary; now and then negative, or near MaxInt64 so that two overflow
        (the sums' overflow rules differ between releases)."""
        r = self.rng
        x = r.random()
        if x < 0.03:
            return milli(-r.randrange(1, 5000))
        if x < 0.06:
            return "9223372036854775"
        return milli(r.randrange(0, 100000))

    def metric_values(
        self, metrics: list[JSON], pods: list[JSON]
    ) -> tuple[list[JSON], list[JSON], list[JSON]]:
        r = self.rng
        custom: list[JSON] = []
        external: list[JSON] = []
        errors: list[JSON] = []
        for m in metrics:
            kind = m["type"]
            src = m[
                {
                    "Resource": "resource",
                    "ContainerResource": "containerResource",
                    "Pods": "pods",
                    "Object": "object",
                    "External": "external",
                }[kind]
            ]
            name = src.get("name") or src["metric"]["name"]
            if r.random() < 0.08 and not any(e["source"] == kind and e["name"] == name for e in errors):
                errors.append(
                    {
                        "source": kind,
                        "name": name,
                        "message": r.choice(
                            [
                                "the server could not find the requested resource",
                                UNKNOWN_ERROR,
                            ]
                        ),
                    }
                )
                continue
            if kind == "Pods" and not any(
                c["metric"]["name"] == name and c["describedObject"]["kind"] == "Pod" for c in custom
            ):
                for p in pods:
                    if r.random() < 0.92:
                        custom.append(
                            {
                                "describedObject": {
                                    "kind": "Pod",
                                    "namespace": NS,
                                    "name": p["metadata"]["name"],
                                    "apiVersion": "/v1",
                                },
                                "metric": {"name": name},
                                "timestamp": ts(odd(r, 0, 30)),
                                "value": "9223372036854775"
                                if r.random() < 0.02
                                else milli(r.randrange(0, 40000)),
                            }
                        )
            elif kind == "Object" and not any(
                c["metric"]["name"] == name and c["describedObject"]["kind"] == "Service" for c in custom
            ):
                custom.append(
                    {
                        "describedObject": {
                            "kind": "Service",
                            "namespace": NS,
                            "name": "front",
                            "apiVersion": "/v1",
                        },
                        "metric": {"name": name},
                        "timestamp": ts(odd(r, 0, 30)),
                        # now and then a value whose ratio x pods passes MaxInt32 (capped from 1.35)
                        "value": "5e12" if r.random() < 0.03 else milli(r.randrange(0, 200000)),
                    }
                )
            elif kind == "External" and not any(e["metricName"] == name for e in external):
                for q in range(r.choice([0, 1, 1, 2])):
                    external.append(
                        {
                            "metricName": name,
                            "metricLabels": {"queue": "ab"[q]},
                            "timestamp": ts(odd(r, 0, 30)),
                            "value": self.external_value(),
                        }
                    )
        return custom, external, errors
