"""The closed loop: recorded load through the exact engine, one sync period at a time (pure).

What was recorded was produced by the replicas that really ran; when the simulated count
differs, the model is that the **total load does not depend on the replica count**: a
per-pod metric (Pods, Resource, ContainerResource) becomes the recorded total spread over
the simulated pods that are ready, an External or Object value stays the recorded value
(with an AverageValue target the engine divides it by the replicas, as upstream does). New
pods are created at the sync that scales up and become ready ``pod_startup`` later; until
then they are running but report no metrics, so upstream's rules for unready and missing
pods (CPU initialization, readiness delay) decide what they count for. A step without a
recorded value (Prometheus had no data) is a failed metric fetch, decided as upstream
decides one. The engine's memory (recommendations, scale events) is carried from step to
step exactly as the live controller carries it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from controller.engine import decide, parse_snapshot
from controller.engine.knobs import settings_for
from controller.engine.model import History, Settings
from shared.durations import format_time

HELD = {"ScaleUpLimit", "ScaleDownLimit", "TooManyReplicas", "TooFewReplicas"}
STABILIZED = {"ScaleUpStabilized", "ScaleDownStabilized"}


@dataclass(frozen=True)
class Step:
    """What the history holds at one sync: per metric of the HPA, the recorded total (None:
    no data), and the replicas that really ran (None: not recorded)."""

    at: datetime
    totals: tuple[float | None, ...]
    real_replicas: int | None = None


@dataclass(frozen=True)
class Outcome:
    at: datetime
    replicas: int  # after this sync's decision
    ready: int  # pods ready when the decision was made
    desired: int
    load: float | None  # the first metric, as the HPA compares it with its target (per pod or total)
    target: float | None
    real_replicas: int | None
    held: str | None  # the condition reason that held the count back, if one did
    rescaled: int  # +n scaled up, -n down, 0 none


@dataclass
class _Pod:
    name: str
    created: datetime
    ready_at: datetime


@dataclass
class Loop:
    """One HPA replayed: its spec, the pods it simulates, the engine's memory."""

    hpa: dict[str, Any]
    settings: Settings
    pod_startup: timedelta
    requests: dict[str, str] = field(default_factory=dict)  # container resource requests
    pods: list[_Pod] = field(default_factory=list)
    history: History | None = None
    serial: int = 0

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.hpa.get("spec") or {})

    def start(self, replicas: int, at: datetime) -> None:
        """The replicas at the start of the range, ready since long before it."""
        self.pods = [self._new(at - timedelta(hours=1), ready=True) for _ in range(max(replicas, 0))]

    def _new(self, at: datetime, ready: bool = False) -> _Pod:
        self.serial += 1
        name = f"{self.spec['scaleTargetRef']['name']}-replay-{self.serial}"
        return _Pod(name, at, at if ready else at + self.pod_startup)

    def step(self, s: Step) -> Outcome:
        ready = [p for p in self.pods if p.ready_at <= s.at]
        snap = self._snapshot(s, ready)
        parsed = parse_snapshot(snap)
        # History() is "never reconciled": the first step records the current count, as live
        # the replay's settings, then those of promhpa's own kind and its spec.controller
        settings = settings_for(self.hpa, self.settings)[0]
        parsed = replace(parsed, settings=settings, history=self.history or History())
        d = decide(parsed)
        self.history = d.history
        self.hpa = {**self.hpa, "status": d.status}
        current = len(self.pods)
        if d.rescale:
            self._resize(d.desired_replicas, s.at)
        load, target = _first_metric(d.status, self.spec)
        return Outcome(
            s.at,
            len(self.pods),
            len(ready),
            d.desired_replicas,
            load,
            target,
            s.real_replicas,
            _held(d.status),
            len(self.pods) - current,
        )

    def _resize(self, replicas: int, at: datetime) -> None:
        while len(self.pods) < replicas:
            self.pods.append(self._new(at))
        if len(self.pods) > replicas:  # a ReplicaSet removes unready, then the newest, first
            self.pods.sort(key=lambda p: (p.ready_at <= at, -p.created.timestamp()), reverse=True)
            self.pods = sorted(self.pods[:replicas], key=lambda p: p.created)

    def _snapshot(self, s: Step, ready: list[_Pod]) -> dict[str, Any]:
        spec, ns = self.spec, self.hpa["metadata"].get("namespace", "default")
        app = spec["scaleTargetRef"]["name"]
        now = format_time(s.at)
        pods, pod_metrics, custom, external, errors = [], [], [], [], []
        for p in self.pods:
            is_ready = p.ready_at <= s.at
            pods.append(
                {
                    "metadata": {
                        "name": p.name,
                        "namespace": ns,
                        "labels": {"app": app},
                        "creationTimestamp": format_time(p.created),
                    },
                    "spec": {"containers": [{"name": "app", "resources": {"requests": dict(self.requests)}}]},
                    "status": {
                        "phase": "Running",
                        "startTime": format_time(p.created),
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "True" if is_ready else "False",
                                "lastTransitionTime": format_time(p.ready_at if is_ready else p.created),
                            }
                        ],
                    },
                }
            )
        for i, m in enumerate(spec.get("metrics") or []):
            total = s.totals[i] if i < len(s.totals) else None
            kind = m.get("type")
            src = m.get({"ContainerResource": "containerResource"}.get(kind, str(kind).lower()), {})
            name = src.get("name") or (src.get("metric") or {}).get("name", "")
            if total is None or (kind in ("Resource", "ContainerResource", "Pods") and not ready):
                errors.append({"source": kind, "name": name, "message": "no data recorded at this step"})
                continue
            share = total / len(ready) if ready else 0.0
            if kind in ("Resource", "ContainerResource"):
                container = src.get("container", "app")
                for p in ready:
                    pod_metrics.append(
                        {
                            "metadata": {"name": p.name, "namespace": ns},
                            "timestamp": now,
                            "window": "30s",
                            "containers": [{"name": container, "usage": {name: _quantity(share)}}],
                        }
                    )
            elif kind == "Pods":
                for p in ready:
                    custom.append(
                        {
                            "describedObject": {"apiVersion": "v1", "kind": "Pod", "name": p.name},
                            "metric": {"name": name},
                            "timestamp": now,
                            "value": _quantity(share),
                        }
                    )
            elif kind == "Object":
                custom.append(
                    {
                        "describedObject": src.get("describedObject", {}),
                        "metric": {"name": name},
                        "timestamp": now,
                        "value": _quantity(total),
                    }
                )
            elif kind == "External":
                labels = dict(((src.get("metric") or {}).get("selector") or {}).get("matchLabels") or {})
                external.append(
                    {"metricName": name, "metricLabels": labels, "timestamp": now, "value": _quantity(total)}
                )
        return {
            "now": now,
            "hpa": self.hpa,
            "scale": {
                "spec": {"replicas": len(self.pods)},
                "status": {"replicas": len(self.pods), "selector": f"app={app}"},
            },
            "pods": pods,
            "podMetrics": pod_metrics,
            "customMetrics": custom,
            "externalMetrics": external,
            "metricErrors": errors,
        }


def _quantity(v: float) -> str:
    """A quantity in milli-units: exact enough for every target, never in exponent form."""
    return f"{round(v * 1000)}m" if math.isfinite(v) else "0"


def _held(status: dict[str, Any]) -> str | None:
    for c in status.get("conditions") or []:
        if c.get("status") == "True" and (c.get("reason") in HELD or c.get("reason") in STABILIZED):
            return str(c["reason"])
    return None


def _first_metric(status: dict[str, Any], spec: dict[str, Any]) -> tuple[float | None, float | None]:
    """The first metric's current value and target, as the HPA compares them."""
    from shared.quantity import parse_quantity

    metrics = spec.get("metrics") or []
    current = (status.get("currentMetrics") or [None])[0]
    if not metrics or not isinstance(current, dict):
        return None, None
    m = metrics[0]
    key = {"ContainerResource": "containerResource"}.get(m["type"], m["type"].lower())
    target = (m.get(key) or {}).get("target") or {}
    cur = (current.get(key) or {}).get("current") or {}
    for name in ("averageUtilization", "averageValue", "value"):
        if name in target and name in cur:
            return parse_quantity(str(cur[name])).as_float(), parse_quantity(str(target[name])).as_float()
    return None, None
