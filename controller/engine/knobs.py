"""``spec.controller``: kube-controller-manager's HPA flags, set per object of promhpa's kind.

Managed clusters (EKS, GKE, AKS) let nobody set kube-controller-manager's flags, so the
sync period, the CPU initialization period, the initial readiness delay, the default
tolerance and the default scale-down stabilization window are the same for every HPA there.
An object of promhpa's own kind (``autoscaling.promhpa.io/v2``) carries them itself, beside
the release to decide as, ``paused`` and a fallback. Each knob left out is the controller's
own value (kube-controller-manager's default unless its flags say otherwise), so an object
without the block decides exactly as a built-in HPA would.

A built-in HPA never has the block (the API server drops unknown fields), so reading it
here, where every snapshot is parsed, serves the live controller and the offline commands
(``decide``, ``replay``) alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from .fallback import FallbackError, FallbackSpec, fallback_from
from .gates import resolve
from .model import Settings
from .reader import SnapshotError, _Reader
from .versions import VersionError, nearest, parse_minor

PAUSED_REASON = "ScalingPaused"
OWN_API_VERSION = "autoscaling.promhpa.io/v2"  # shared.kube.resources.OWN_HPA's
# the block's keys, in the order docs and the CRD list them
KEYS = (
    "syncPeriod",
    "tolerance",
    "cpuInitializationPeriod",
    "initialReadinessDelay",
    "downscaleStabilizationWindow",
    "release",
    "paused",
    "fallback",
)


@dataclass(frozen=True)
class Knobs:
    """What the block sets beside the decision settings."""

    sync_period: timedelta | None = None  # None: the controller's --horizontal-pod-autoscaler-sync-period
    paused: bool = False
    fallback: FallbackSpec | None = None


def own_kind_settings(settings: Settings) -> Settings:
    """The settings an object of promhpa's kind starts from: the controller's, with
    ``minReplicas: 0`` honoured whatever the cluster's HPAScaleToZero gate says (the kind is
    promhpa's API, not the cluster's)."""
    return replace(settings, feature_gates=replace(settings.feature_gates, hpa_scale_to_zero=True))


def settings_for(hpa: Any, settings: Settings) -> tuple[Settings, Knobs]:
    """What an HPA document decides with: promhpa's own kind (by its apiVersion) starts from
    ``own_kind_settings``; its ``spec.controller`` then applies. A built-in HPA: ``settings``."""
    if isinstance(hpa, dict) and hpa.get("apiVersion") == OWN_API_VERSION:
        settings = own_kind_settings(settings)
    return parse_knobs(hpa.get("spec") if isinstance(hpa, dict) else None, settings)


def parse_knobs(spec: Any, settings: Settings, path: str = "hpa.spec") -> tuple[Settings, Knobs]:
    """The settings this object decides with, and its other knobs. SnapshotError names the
    field of a bad value (the CRD's schema refuses those before they are stored)."""
    r = _Reader(spec, path).obj("controller")
    if not r.data:
        return settings, Knobs()
    unknown = sorted(set(r.data) - set(KEYS))
    if unknown:
        raise SnapshotError(r._sub(unknown[0]), f"unknown field (known: {', '.join(KEYS)})")
    if r.has("release"):
        text = r.string("release")
        try:
            release, outside = nearest(parse_minor(text))
        except VersionError as e:
            raise SnapshotError(r._sub("release"), str(e)) from None
        if outside is not None:  # a per-object choice is explicit: no silent nearest release
            raise SnapshotError(r._sub("release"), f"{text!r}: {outside.split(';')[0]}")
        gates = resolve(release, {}, strict=False)
        settings = replace(
            settings,
            release=release,
            feature_gates=replace(gates, hpa_scale_to_zero=settings.feature_gates.hpa_scale_to_zero),
        )
    tolerance = r.number("tolerance", settings.tolerance)
    if tolerance < 0:
        raise SnapshotError(r._sub("tolerance"), "must be greater than or equal to 0")
    settings = replace(
        settings,
        tolerance=tolerance,
        cpu_initialization_period=_duration(r, "cpuInitializationPeriod", settings.cpu_initialization_period),
        initial_readiness_delay=_duration(r, "initialReadinessDelay", settings.initial_readiness_delay),
        downscale_stabilization_window=_duration(
            r, "downscaleStabilizationWindow", settings.downscale_stabilization_window
        ),
    )
    sync = _duration(r, "syncPeriod", None)
    if sync is not None and sync < timedelta(seconds=1):
        raise SnapshotError(r._sub("syncPeriod"), "must be at least 1s")
    fallback = None
    if r.has("fallback"):
        try:
            fallback = fallback_from(r.raw("fallback"), r._sub("fallback"))
        except FallbackError as e:
            raise SnapshotError("", str(e)) from None  # the message names the field
    return settings, Knobs(sync, r.boolean("paused", False), fallback)


def _duration(r: _Reader, key: str, default: timedelta | None) -> Any:
    v = r.duration(key)
    if v is None:
        return default
    if v < timedelta(0):
        raise SnapshotError(r._sub(key), "must not be negative")
    return v
