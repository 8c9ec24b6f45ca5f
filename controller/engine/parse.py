"""Turn a snapshot (already-loaded JSON/YAML data) into the engine's model.

Malformed input -- a wrong type, an unparsable quantity, time or duration -- raises
``SnapshotError`` with the dotted path of the offending field, so that a user can fix the
file. Content the API server would have rejected but which the controller still meets in
practice (an unknown metric type, a target without a type) is *not* an error here: the
engine decides it as upstream does.

The HPA spec is defaulted as the API server does before the controller sees it:
minReplicas 1, the CPU 80% metric when none is given, and behavior's policies/windows.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from shared.jsondoc import json_copy

from .fallback import ANNOTATION, FallbackError, FallbackMemory, parse_spec
from .gates import GATES, resolve
from .knobs import settings_for
from .model import (
    JSON,
    Behavior,
    History,
    MetricError,
    MetricSpec,
    Pod,
    Recommendation,
    Scale,
    ScaleEvent,
    ScalingPolicy,
    ScalingRules,
    Settings,
    Snapshot,
    Target,
)
from .parse_objects import (
    PodSpecParts,
    parse_custom_metric,
    parse_external_metric,
    parse_pod,
    parse_pod_metrics,
    parse_pod_spec,
)
from .reader import SnapshotError, _Reader, _type_name
from .snapshot_keys import unknown_keys
from .versions import SNAPSHOT_DEFAULT, Release, VersionError, nearest, parse_minor

T = TypeVar("T")


__all__ = [
    "PodSpecParts",
    "SnapshotError",
    "observed",
    "parse_pod",
    "parse_pod_spec",
    "parse_snapshot",
    "review_snapshot",
]


def review_snapshot(data: Any) -> tuple[list[str], list[str]]:
    """What ``parse_snapshot`` does not refuse but a user should hear, before deciding: keys
    it does not know (errors: a misspelled ``histroy`` would silently change the decision),
    with the nearest known one; and a ``kubernetesVersion`` outside the supported range
    (a warning naming the release decided as)."""
    errors: list[str] = []
    warnings: list[str] = []
    if not isinstance(data, dict):
        return errors, warnings
    errors.extend(unknown_keys(data))
    settings = data.get("controller")
    version = settings.get("kubernetesVersion") if isinstance(settings, dict) else None
    if isinstance(version, str) and version:
        try:
            _, warning = nearest(parse_minor(version))
        except VersionError:
            warning = None  # parse_snapshot refuses it, with the message
        if warning is not None:
            warnings.append(f"controller.kubernetesVersion: {warning}")
    return errors, warnings


def parse_settings(r: _Reader) -> Settings:
    d = Settings()
    rel = _release(r)
    g = r.obj("featureGates")
    wanted = {name: g.boolean(name, False) for name in GATES if g.has(name)}
    return Settings(
        tolerance=r.number("tolerance", d.tolerance),
        cpu_initialization_period=_nonnull(
            r.duration("cpuInitializationPeriod"), d.cpu_initialization_period
        ),
        initial_readiness_delay=_nonnull(r.duration("initialReadinessDelay"), d.initial_readiness_delay),
        downscale_stabilization_window=_nonnull(
            r.duration("downscaleStabilizationWindow"), d.downscale_stabilization_window
        ),
        scale_up_limit_factor=r.number("scaleUpLimitFactor", d.scale_up_limit_factor),
        scale_up_limit_minimum=r.number("scaleUpLimitMinimum", d.scale_up_limit_minimum),
        # a locked gate set the other way, or one the release does not have, is decided as
        # that release's controller would: without it
        feature_gates=resolve(rel, wanted, strict=False),
        release=rel,
    )


def _release(r: _Reader) -> Release:
    """``kubernetesVersion`` (default: ``SNAPSHOT_DEFAULT``, the release the snapshot
    format's defaults are 1.37.2's): outside 1.33-1.38, the nearest supported release, as
    the live controller chooses."""
    text = r.string("kubernetesVersion")
    if not text:
        return Release(SNAPSHOT_DEFAULT)
    try:
        return nearest(parse_minor(text))[0]
    except VersionError as e:
        raise SnapshotError(r._sub("kubernetesVersion"), str(e)) from None


def _nonnull(v: T | None, default: T) -> T:
    return default if v is None else v


def _target(r: _Reader) -> Target:
    return Target(
        type=r.string("type") or None,
        value=r.quantity("value"),
        average_value=r.quantity("averageValue"),
        average_utilization=r.integer("averageUtilization"),
    )


def _selector(r: _Reader, key: str) -> JSON | None:
    v = r.raw(key)
    if v is None:
        return None
    if not isinstance(v, dict):
        raise SnapshotError(r._sub(key), f"must be a label selector object, got {_type_name(v)}")
    for i, e in enumerate(r.obj(key).items("matchExpressions")):
        e.string("key")
        e.string("operator")
        vals = e.raw("values")
        if vals is not None and not isinstance(vals, list):
            raise SnapshotError(f"{e.path}.values", f"must be a list, got {_type_name(vals)}")
        del i
    r.obj(key).str_map("matchLabels")
    return v


def parse_metric_spec(r: _Reader) -> MetricSpec:
    kind = r.string("type")
    raw = r.data
    if kind == "Resource" and r.has("resource"):
        s = r.obj("resource")
        return MetricSpec(kind, raw, name=s.string("name"), target=_target(s.obj("target")))
    if kind == "ContainerResource" and r.has("containerResource"):
        s = r.obj("containerResource")
        return MetricSpec(
            kind, raw, name=s.string("name"), container=s.string("container"), target=_target(s.obj("target"))
        )
    if kind in ("Pods", "Object", "External") and r.has(kind.lower()):
        s = r.obj(kind.lower())
        m = s.obj("metric")
        described = None
        if kind == "Object":
            d = s.obj("describedObject")
            d.string("kind")
            d.string("name")
            d.string("apiVersion")
            described = d.data
        return MetricSpec(
            kind,
            raw,
            name=m.string("name"),
            target=_target(s.obj("target")),
            selector=_selector(m, "selector"),
            described_object=described,
        )
    # unknown type or missing source: decided (InvalidMetricSourceType / Failed*), not refused
    return MetricSpec(kind, raw)


_DEFAULT_UP = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)), None)
_DEFAULT_DOWN = ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),), None)


def _rules(r: _Reader, key: str, default: ScalingRules) -> ScalingRules:
    """Defaulted as the API server does: only fields that are absent (nil) take defaults."""
    if not r.has(key):
        return default
    s = r.obj(key)
    policies = default.policies
    if s.raw("policies") is not None:  # an explicit empty list stays empty, as in Go
        policies = tuple(
            ScalingPolicy(p.string("type"), p.integer("value", 0) or 0, p.integer("periodSeconds", 0) or 0)
            for p in s.items("policies")
        )
    tol = s.quantity("tolerance")
    return ScalingRules(
        stabilization_window_seconds=s.integer(
            "stabilizationWindowSeconds", default.stabilization_window_seconds
        ),
        select_policy=s.string("selectPolicy") or default.select_policy,
        policies=policies,
        tolerance=tol.as_float() if tol is not None else None,
    )


def _wire_rules(rules: ScalingRules, original: JSON | None) -> JSON:
    out: JSON = dict(original or {})
    if rules.stabilization_window_seconds is not None:
        out["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
    out["selectPolicy"] = rules.select_policy
    out["policies"] = [
        {"type": p.type, "value": p.value, "periodSeconds": p.period_seconds} for p in rules.policies
    ]
    return out


def _events(r: _Reader, key: str) -> tuple[ScaleEvent, ...]:
    out = []
    for e in r.items(key):
        ts = e.time("timestamp")
        if ts is None:
            raise SnapshotError(f"{e.path}.timestamp", "is required")
        out.append(ScaleEvent(e.integer("replicaChange", 0) or 0, ts, e.boolean("outdated", False)))
    return tuple(out)


def parse_history(r: _Reader) -> History:
    recs: tuple[Recommendation, ...] | None = None
    if "recommendations" in r.data and r.raw("recommendations") is not None:
        items = []
        for e in r.items("recommendations"):
            ts = e.time("timestamp")
            if ts is None:
                raise SnapshotError(f"{e.path}.timestamp", "is required")
            items.append(Recommendation(e.integer("replicas", 0) or 0, ts))
        recs = tuple(items)
    fallback = None
    if r.raw("fallback") is not None:
        f = r.obj("fallback")
        fallback = FallbackMemory(f.time("failingSince"), f.integer("lastGood", None), f.time("lastGoodAt"))
    return History(recs, _events(r, "scaleUpEvents"), _events(r, "scaleDownEvents"), fallback)


def parse_snapshot(data: Any) -> Snapshot:
    """Validate and parse one snapshot document: its typed parts here, the API objects it
    records through ``observed``, the very call the live controller decides on."""
    if not isinstance(data, dict):
        raise SnapshotError("", f"a snapshot must be an object, got {_type_name(data)}")
    root = _Reader(data)
    now = root.time("now")
    if now is None:
        raise SnapshotError("now", "is required (the controller's clock for this reconcile)")
    root.obj("hpa", required=True)
    scale_error = root.raw("scaleError")
    if scale_error is not None and not isinstance(scale_error, str):
        raise SnapshotError("scaleError", f"must be a string, got {_type_name(scale_error)}")
    if not root.has("scale") and scale_error is None:
        raise SnapshotError("scale", "is required (or scaleError, when the GET of the scale failed)")
    for key in (*METRIC_READS, "pods"):
        root.items(key)
    update_error = root.raw("scaleUpdateError")
    if update_error is not None and not isinstance(update_error, str):
        raise SnapshotError("scaleUpdateError", f"must be a string, got {_type_name(update_error)}")
    selecting = root.raw("selectingHPAs") or []
    if not isinstance(selecting, list) or not all(isinstance(x, str) for x in selecting):
        raise SnapshotError("selectingHPAs", "must be a list of NAMESPACE/NAME strings")
    return observed(
        now,
        parse_settings(root.obj("controller")),
        data["hpa"],
        data.get("scale"),
        scale_error,
        tuple(parse_pod(p) for p in root.items("pods")),
        data,
        parse_history(root.obj("history")) if "history" in data else History(),
        tuple(selecting),
        update_error,
    )


# where a snapshot records the metrics APIs' answers (and the reads that failed)
METRIC_READS = ("podMetrics", "customMetrics", "externalMetrics", "metricErrors")


def observed(
    now: datetime,
    settings: Settings,
    hpa: Any,
    scale: Any,
    scale_error: str | None,
    pods: tuple[Pod, ...],
    metrics: Mapping[str, Any],
    history: History,
    selecting: tuple[str, ...] = (),
    scale_update_error: str | None = None,
) -> Snapshot:
    """One reconcile's view from what it read: the HPA, its scale (None: ``scale_error``
    says why) and the metrics APIs' answers (``metrics``, keyed as in a snapshot, the lists
    as the APIs sent them), validated and parsed here under the paths a snapshot file gives
    them; the flags, the pods and the HPA's memory typed already. The live controller
    decides on this directly, and ``parse_snapshot`` reads a file into the same call, so a
    saved snapshot replays exactly what was decided."""
    hpa_r = _Reader({"hpa": hpa}).obj("hpa", required=True)
    hpa_doc = json_copy(hpa_r.data)  # defaulted below; the caller's object stays as it was
    spec_r = hpa_r.obj("spec")
    hpa_r.obj("metadata")
    hpa_r.obj("status").items("conditions")
    specs = tuple(parse_metric_spec(m) for m in spec_r.items("metrics"))
    spec = hpa_doc.setdefault("spec", {})
    if not specs:  # SetDefaults_HorizontalPodAutoscaler: CPU at 80% utilization
        default_metric = {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
        spec["metrics"] = [default_metric]
        specs = (parse_metric_spec(_Reader(default_metric, "spec.metrics[0]")),)
    min_replicas = spec_r.integer("minReplicas", 1)
    spec["minReplicas"] = min_replicas
    max_replicas = spec_r.integer("maxReplicas")
    if max_replicas is None:
        raise SnapshotError("hpa.spec.maxReplicas", "is required")
    behavior = None
    if spec_r.has("behavior"):
        b = spec_r.obj("behavior")
        behavior = Behavior(_rules(b, "scaleUp", _DEFAULT_UP), _rules(b, "scaleDown", _DEFAULT_DOWN))
        spec["behavior"] = {
            "scaleUp": _wire_rules(behavior.scale_up, b.raw("scaleUp")),
            "scaleDown": _wire_rules(behavior.scale_down, b.raw("scaleDown")),
        }
    got = None
    if scale is not None:
        s = _Reader({"scale": scale}).obj("scale")
        got = Scale(
            s.obj("spec").integer("replicas", 0) or 0,
            s.obj("status").integer("replicas", 0) or 0,
            s.obj("status").string("selector"),
        )
    reads = _Reader(metrics)
    fallback, fallback_error = None, ""
    annotations = (hpa_doc.get("metadata") or {}).get("annotations") or {}
    if isinstance(annotations, dict) and ANNOTATION in annotations:
        try:
            fallback = parse_spec(annotations)
        except FallbackError as e:
            fallback_error = str(e)
    settings, knobs = settings_for(hpa_doc, settings)  # promhpa's own kind: its spec.controller
    if knobs.fallback is not None:
        fallback, fallback_error = knobs.fallback, ""
    return Snapshot(
        now=now,
        settings=settings,
        hpa=hpa_doc,
        metrics=specs,
        behavior=behavior,
        min_replicas=min_replicas if min_replicas is not None else 1,
        max_replicas=max_replicas,
        scale=got,
        scale_error=scale_error if got is not None else (scale_error or "unknown error"),
        pods=pods,
        pod_metrics=tuple(parse_pod_metrics(p) for p in reads.items("podMetrics")),
        custom_metrics=tuple(parse_custom_metric(m) for m in reads.items("customMetrics")),
        external_metrics=tuple(parse_external_metric(m) for m in reads.items("externalMetrics")),
        metric_errors=tuple(
            MetricError(e.string("source"), e.string("name"), e.string("message"))
            for e in reads.items("metricErrors")
        ),
        history=history,
        scale_update_error=scale_update_error,
        selecting_hpas=selecting,
        fallback=fallback,
        fallback_error=fallback_error,
        paused=knobs.paused,
    )


def parse_history_wire(data: Any) -> History:
    """A ``history`` document on its own (what the live controller's memory endpoint returns)."""
    if not isinstance(data, dict):
        raise SnapshotError("history", f"must be an object, got {_type_name(data)}")
    return parse_history(_Reader(data, "history"))
