"""The live state of one HPA, as a snapshot (pure): what ``decide`` reads offline too."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controller.engine.gates import gates_to_wire
from controller.engine.model import History, Settings
from controller.engine.reconcile import history_to_wire
from shared.durations import format_duration, format_time


def settings_to_wire(s: Settings) -> dict[str, Any]:
    return {
        "tolerance": s.tolerance,
        "cpuInitializationPeriod": format_duration(s.cpu_initialization_period),
        "initialReadinessDelay": format_duration(s.initial_readiness_delay),
        "downscaleStabilizationWindow": format_duration(s.downscale_stabilization_window),
        "scaleUpLimitFactor": s.scale_up_limit_factor,
        "scaleUpLimitMinimum": s.scale_up_limit_minimum,
        "featureGates": gates_to_wire(s.feature_gates, s.release),
        "kubernetesVersion": str(s.release),
    }


def snapshot(
    now: datetime,
    settings: Settings,
    hpa: dict[str, Any],
    scale: dict[str, Any] | None,
    scale_error: str | None,
    pods: list[dict[str, Any]],
    metrics: dict[str, list[Any]],
    history: History | None,
) -> dict[str, Any]:
    """The snapshot document of one reconcile's reads (``parse_snapshot`` reads it back
    into the view the live controller decided on)."""
    snap: dict[str, Any] = {
        "now": format_time(now) if now.microsecond == 0 else now.isoformat().replace("+00:00", "Z"),
        "controller": settings_to_wire(settings),
        "hpa": {k: hpa[k] for k in ("apiVersion", "kind", "metadata", "spec", "status") if k in hpa},
        "pods": pods,
        **metrics,
    }
    if scale is not None:
        snap["scale"] = scale
    else:
        snap["scaleError"] = scale_error or "unknown error"
    if history is not None:
        snap["history"] = history_to_wire(history)
    return snap
