"""One live reconcile: read the world, assemble a snapshot, decide, write.

The decision is ``controller.engine.decide`` on the assembled snapshot -- the very function
``python -m controller decide`` runs offline -- so a snapshot saved from here replays the
same decision anywhere. A failed scale write is decided again with ``scaleUpdateError``
set, which yields upstream's FailedRescale condition and event on the same code path.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from controller.engine import Decision, decide, parse_snapshot
from controller.engine.model import History, Settings
from shared.informer import Informer
from shared.kube import Kube, KubeError
from shared.selectors import SelectorError
from shared.selectors import parse as parse_selector

from . import assemble
from .hpa_selectors import SelectorRegistry
from .mapping import RESTMapper
from .metrics_fetch import fetch
from .writer import EventRecorder, update_status

log = structlog.get_logger("controller")


class ControllerMetrics:
    """Upstream's metric names (subsystem horizontal_pod_autoscaler_controller) plus ours."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        p = "horizontal_pod_autoscaler_controller"
        self.reconciliations = Counter(
            f"{p}_reconciliations_total", "Reconciliations", ["action", "error"], registry=r
        )
        self.reconcile_seconds = Histogram(
            f"{p}_reconciliation_duration_seconds", "Reconciliation duration", ["action", "error"], registry=r
        )
        self.computations = Counter(
            f"{p}_metric_computation_total",
            "Metric computations",
            ["action", "error", "metric_type"],
            registry=r,
        )
        self.computation_seconds = Histogram(
            f"{p}_metric_computation_duration_seconds",
            "Metric computation duration",
            ["action", "error", "metric_type"],
            registry=r,
        )
        self.desired = Gauge(
            "promhpa_controller_desired_replicas",
            "Desired replicas per HPA",
            ["namespace", "name"],
            registry=r,
        )


@dataclass
class Reconciler:
    kube: Kube
    mapper: RESTMapper
    hpas: Informer
    pods: Informer
    settings: Settings
    recorder: EventRecorder
    metrics: ControllerMetrics
    dry_run: bool = False
    metrics_timeout: float = 15.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    memory: dict[tuple[str, str], History] = field(default_factory=dict)
    selectors: SelectorRegistry = field(default_factory=SelectorRegistry)

    async def _scale(self, hpa: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None, str | None]:
        ref = hpa.get("spec", {}).get("scaleTargetRef") or {}
        try:
            mapping = await asyncio.to_thread(
                self.mapper.mapping, ref.get("apiVersion", ""), ref.get("kind", "")
            )
            path = mapping.scale_path(hpa["metadata"]["namespace"], ref.get("name", ""))
            return await self.kube.get(path), None, path
        except KubeError as e:
            return None, str(e).split(": ", 1)[-1], None

    async def snapshot(self, namespace: str, name: str) -> tuple[dict[str, Any], dict[str, Any], str | None]:
        """The live snapshot of one HPA (and the HPA object and scale path it came from)."""
        hpa = self.hpas.get(namespace, name) or await self.kube.get(
            f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}"
        )
        now = self.clock()
        scale, scale_error, path = await self._scale(hpa)
        selector = (scale or {}).get("status", {}).get("selector", "")
        try:  # only the pods the engine would select, found through the informer's label index
            chosen = parse_selector(selector) if selector else None
        except SelectorError:
            chosen = None  # the engine reports the bad selector itself
        pods = self.pods.select(namespace, chosen)
        selecting: list[str] = []
        if chosen is not None:
            self.selectors.put((namespace, name), chosen)
            selecting = self.selectors.selecting(namespace, pods)
        metrics: dict[str, list[Any]] = {}
        if scale is not None and selector:
            metrics = await fetch(self.kube, self.mapper, hpa, selector, self.metrics_timeout)
        snap = assemble.snapshot(
            now, self.settings, hpa, scale, scale_error, pods, metrics, self.memory.get((namespace, name))
        )
        if len(selecting) > 1:
            snap["selectingHPAs"] = selecting
        return snap, hpa, path

    async def reconcile(self, namespace: str, name: str) -> Decision | None:
        key = (namespace, name)
        if self.hpas.get(namespace, name) is None:
            self.memory.pop(key, None)  # deleted: forget it and its selector, as upstream does
            self.selectors.remove(key)
            return None
        start = time.monotonic()
        snap, hpa, scale_path = await self.snapshot(namespace, name)
        decision = decide(parse_snapshot(snap))
        if decision.rescale and not self.dry_run and scale_path is not None:
            scale = {
                **snap["scale"],
                "spec": {**snap["scale"].get("spec", {}), "replicas": decision.desired_replicas},
            }
            try:
                await self.kube.put(scale_path, scale)
            except KubeError as e:
                snap["scaleUpdateError"] = str(e).split(": ", 1)[-1]
                decision = decide(parse_snapshot(snap))
        self.memory[key] = decision.history
        for event in decision.events:
            try:
                await self.recorder.record(hpa, event.type, event.reason, event.message)
            except KubeError as e:
                log.warning(
                    "event not recorded", hpa=f"{namespace}/{name}", reason=event.reason, error=str(e)
                )
        if not self.dry_run:
            try:
                await update_status(self.kube, hpa, decision.status)
            except KubeError as e:
                log.error("status not written", hpa=f"{namespace}/{name}", error=str(e))
                with contextlib.suppress(KubeError):
                    await self.recorder.record(
                        hpa, "Warning", "FailedUpdateStatus", str(e).split(": ", 1)[-1]
                    )
        self._observe(namespace, name, decision, time.monotonic() - start)
        return decision

    def _observe(self, namespace: str, name: str, d: Decision, seconds: float) -> None:
        self.metrics.reconciliations.labels(d.action, d.error).inc()
        self.metrics.reconcile_seconds.labels(d.action, d.error).observe(seconds)
        self.metrics.desired.labels(namespace, name).set(d.desired_replicas)
        if d.metrics is not None:
            for o in d.metrics.outcomes:
                action = "none"
                if o.ok and d.current_replicas is not None:
                    action = (
                        "scale_up"
                        if o.replicas > d.current_replicas
                        else "scale_down"
                        if o.replicas < d.current_replicas
                        else "none"
                    )
                err = "none" if o.ok else o.error_kind
                self.metrics.computations.labels(action, err, o.spec.type).inc()
        log.info(
            "reconciled",
            hpa=f"{namespace}/{name}",
            current=d.current_replicas,
            desired=d.desired_replicas,
            rescale=d.rescale,
            dry_run=self.dry_run,
            reason=d.rescale_reason or None,
            seconds=round(seconds, 4),
        )
