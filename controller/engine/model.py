"""The plain data the decision engine reads and returns.

Everything here is a frozen value parsed once from the wire format (see ``parse``), so the
engine's arithmetic never meets a raw string. The HPA itself stays a wire-format dict: its
status is updated in place and written back exactly as the API server would store it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from shared.quantity import Quantity

from .fallback import FallbackMemory, FallbackSpec
from .versions import Release

JSON = dict[str, Any]


@dataclass(frozen=True)
class FeatureGates:
    """The newest release's defaults (``gates.defaults`` gives each release's)."""

    hpa_configurable_tolerance: bool = True
    hpa_scale_to_zero: bool = True
    hpa_generation: bool = True
    hpa_optimized_selector_store: bool = True
    pod_level_resources: bool = True
    # the live controller's read-your-writes rule; no decision of one reconcile depends on it
    stale_controller_consistency_hpa: bool = True


@dataclass(frozen=True)
class Settings:
    """kube-controller-manager's HPA flags, with upstream's defaults, and the release whose
    rules decide (``versions``; its gates' defaults are the caller's to apply)."""

    tolerance: float = 0.1
    cpu_initialization_period: timedelta = timedelta(minutes=5)
    initial_readiness_delay: timedelta = timedelta(seconds=30)
    downscale_stabilization_window: timedelta = timedelta(minutes=5)
    scale_up_limit_factor: float = 2.0
    scale_up_limit_minimum: float = 4.0
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    release: Release = field(default_factory=Release)


@dataclass(frozen=True, slots=True)
class Recommendation:
    replicas: int
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    replica_change: int
    timestamp: datetime
    # upstream marks events older than the longest policy period and reuses their slot
    outdated: bool = False


@dataclass(frozen=True)
class History:
    """What the controller remembers about one HPA between reconciles.

    ``recommendations is None`` means the HPA was never reconciled since the controller
    started, so the first reconcile records the current replica count.
    """

    recommendations: tuple[Recommendation, ...] | None = None
    scale_up_events: tuple[ScaleEvent, ...] = ()
    scale_down_events: tuple[ScaleEvent, ...] = ()
    # only for an HPA with a fallback (``fallback``): when its metrics began failing, the
    # last good proposal
    fallback: FallbackMemory | None = None


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    requests: dict[str, Quantity]


@dataclass(frozen=True, slots=True)
class Pod:
    name: str
    namespace: str
    labels: dict[str, str]
    phase: str
    deleted: bool
    start_time: datetime | None
    # (status, lastTransitionTime) of the first Ready condition, if any
    ready_condition: tuple[str, datetime | None] | None
    containers: tuple[Container, ...]
    # init containers with restartPolicy Always (sidecars) count toward requests
    sidecars: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    pod_requests: dict[str, Quantity] | None
    overhead: dict[str, Quantity] | None

    @property
    def ready(self) -> bool:
        return self.ready_condition is not None and self.ready_condition[0] == "True"


@dataclass(frozen=True)
class PodMetrics:
    name: str
    namespace: str
    timestamp: datetime | None
    window: timedelta
    containers: tuple[tuple[str, dict[str, Quantity]], ...]


@dataclass(frozen=True)
class CustomMetric:
    kind: str
    api_version: str
    name: str
    metric: str
    timestamp: datetime | None
    value: Quantity
    window_seconds: int | None


@dataclass(frozen=True)
class ExternalMetric:
    metric: str
    labels: dict[str, str]
    timestamp: datetime | None
    value: Quantity


@dataclass(frozen=True)
class MetricError:
    source: str
    name: str
    message: str


@dataclass(frozen=True)
class Target:
    type: str | None
    value: Quantity | None
    average_value: Quantity | None
    average_utilization: int | None


@dataclass(frozen=True)
class MetricSpec:
    """One entry of spec.metrics; ``raw`` keeps the wire form for status and messages."""

    type: str
    raw: JSON
    name: str = ""  # resource name or metric name
    container: str = ""
    target: Target | None = None
    selector: JSON | None = None  # metric.selector (a LabelSelector)
    described_object: JSON | None = None


@dataclass(frozen=True)
class ScalingPolicy:
    type: str
    value: int
    period_seconds: int


@dataclass(frozen=True)
class ScalingRules:
    stabilization_window_seconds: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None


@dataclass(frozen=True)
class Behavior:
    scale_up: ScalingRules
    scale_down: ScalingRules


@dataclass(frozen=True)
class Scale:
    spec_replicas: int
    status_replicas: int
    selector: str


@dataclass(frozen=True)
class Snapshot:
    """Everything one reconcile sees (docs/snapshot.md describes the file form)."""

    now: datetime
    settings: Settings
    hpa: JSON  # wire form; spec already defaulted as the API server would
    metrics: tuple[MetricSpec, ...]
    behavior: Behavior | None
    min_replicas: int
    max_replicas: int
    scale: Scale | None
    scale_error: str | None
    pods: tuple[Pod, ...]
    pod_metrics: tuple[PodMetrics, ...]
    custom_metrics: tuple[CustomMetric, ...]
    external_metrics: tuple[ExternalMetric, ...]
    metric_errors: tuple[MetricError, ...]
    history: History
    # a failed write of the scale subresource (live controller: decided, wrote, failed)
    scale_update_error: str | None = None
    # live controller: the HPAs (NAMESPACE/NAME) whose last-seen selectors match any of this
    # HPA's pods, itself included; more than one is upstream's AmbiguousSelector
    selecting_hpas: tuple[str, ...] = ()
    # the HPA's opt-in fallback (annotation promhpa.io/fallback), or why it is not valid
    fallback: FallbackSpec | None = None
    fallback_error: str = ""
    # promhpa's own kind: spec.controller.paused holds the replica count (``knobs``)
    paused: bool = False


@dataclass(frozen=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str

    def to_wire(self) -> JSON:
        return {"type": self.type, "reason": self.reason, "message": self.message}
