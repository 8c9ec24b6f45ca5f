"""One proposal per metric spec, and the rule that combines them.

For each entry of ``spec.metrics`` the engine asks the matching metrics API (through
``metric_queries``), runs the replica calculation for its target type, and produces the
``MetricStatus`` upstream reports. A metric that fails yields a Warning event and a
ScalingActive=False condition candidate instead. ``compute_all`` then applies upstream's
safety rule: if every metric failed, or any failed and the rest would scale *down*, the HPA
does not scale at all this round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.quantity import Format, Quantity
from shared.selectors import SelectorError, from_label_selector, go_label_selector_string

from . import metric_queries as q
from . import replica_calculator as rc
from .model import JSON, Event, MetricSpec, Snapshot
from .pods import RequestRules
from .replica_calculator import Calc, CalcError, PodContext, Tolerances

SPEC_ERROR = "spec"
INTERNAL_ERROR = "internal"


@dataclass
class MetricOutcome:
    """What one metric spec proposed, or why it could not."""

    spec: MetricSpec
    replicas: int = 0
    name: str = ""  # upstream's description, e.g. "cpu resource utilization (percentage of request)"
    status: JSON = field(default_factory=lambda: {"type": ""})
    error: str | None = None  # the wrapped error (used in FailedComputeMetricsReplicas)
    reason: str = ""  # the failure's condition/event reason
    condition_message: str = ""
    event_message: str = ""  # upstream emits the unwrapped error as the Warning event
    error_kind: str = INTERNAL_ERROR
    calc: Calc | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class MetricsResult:
    outcomes: list[MetricOutcome]
    replicas: int  # the largest proposal; a negative External total can make it negative
    metric_name: str
    statuses: list[JSON]
    events: list[Event]
    invalid_error: str | None
    condition: tuple[bool, str, str]  # ScalingActive (status, reason, message)
    # no scaling this round: a flag of its own, since -1 is a proposal upstream can make
    # (ceil of a negative External AverageValue total before 1.34) and then scales to min
    failed: bool = False


def _milli(v: int) -> str:
    return str(Quantity.from_milli(v))


def _usage_quantity(snap: Snapshot, resource: str, milli: int) -> str:
    """upstream's buildQuantity (1.34 and later): memory as BinarySI (Ki, Mi, ...), what
    metrics-server reports; 1.33 writes every usage DecimalSI."""
    binary = resource == "memory" and snap.settings.release.memory_binary_si
    return str(Quantity.from_milli(milli, Format.BINARY_SI if binary else Format.DECIMAL_SI))


class _MetricFailedError(Exception):
    def __init__(self, reason: str, inner: str, outer: str, kind: str = INTERNAL_ERROR) -> None:
        super().__init__(outer)
        self.reason, self.inner, self.outer, self.kind = reason, inner, outer, kind


def _request_rules(snap: Snapshot) -> RequestRules:
    rel, gates = snap.settings.release, snap.settings.feature_gates
    return RequestRules(
        pod_level=rel.reads_pod_level_requests and gates.pod_level_resources,
        missing_container_is_error=rel.missing_container_is_error,
        exclude_overhead=rel.pod_level_excludes_overhead,
        sidecars_first=rel.sidecars_first,
    )


def tolerances_for(snap: Snapshot) -> Tolerances:
    t = snap.settings.tolerance
    down = up = t
    if snap.settings.feature_gates.hpa_configurable_tolerance and snap.behavior is not None:
        if snap.behavior.scale_down.tolerance is not None:
            down = snap.behavior.scale_down.tolerance
        if snap.behavior.scale_up.tolerance is not None:
            up = snap.behavior.scale_up.tolerance
    return Tolerances(scale_down=down, scale_up=up)


def _resource(
    snap: Snapshot, ctx: PodContext, spec: MetricSpec, spec_replicas: int, tol: Tolerances, out: MetricOutcome
) -> None:
    container = spec.container if spec.type == "ContainerResource" else ""
    reason = "FailedGetContainerResourceMetric" if container else "FailedGetResourceMetric"
    wrap = (
        f"failed to get {spec.container} container metric value: "
        if container
        else f"failed to get {spec.name} resource metric value: "
    )
    target = spec.target
    try:
        if target is not None and target.average_value is not None:
            try:  # GetRawResourceReplicas: a fetch error and a calculation error, both wrapped
                try:
                    samples = q.resource_metric(snap, spec.name, container)
                except q.MetricFetchError as e:
                    raise CalcError(f"unable to get metrics for resource {spec.name}: {e}") from None
                calc = rc.plain_average(
                    ctx, spec_replicas, target.average_value.milli_value(), samples, spec.name, tol
                )
            except CalcError as e:
                raise CalcError(f"failed to get {spec.name} usage: {e}") from None
            out.name = f"{spec.name} resource"
            current: JSON = {"averageValue": _usage_quantity(snap, spec.name, calc.usage)}
        elif target is None or target.average_utilization is None:
            raise CalcError(
                "invalid resource metric source: neither an average utilization target nor an "
                "average value (usage) target was set"
            )
        else:
            try:
                try:
                    samples = q.resource_metric(snap, spec.name, container)
                except q.MetricFetchError as e:
                    raise CalcError(f"unable to get metrics for resource {spec.name}: {e}") from None
                calc = rc.resource_utilization(
                    ctx,
                    spec_replicas,
                    target.average_utilization,
                    spec.name,
                    container,
                    samples,
                    tol,
                    _request_rules(snap),
                )
            except CalcError as e:
                raise CalcError(f"failed to get {spec.name} utilization: {e}") from None
            out.name = (
                f"{spec.name} container resource utilization (percentage of request)"
                if container
                else f"{spec.name} resource utilization (percentage of request)"
            )
            current = {
                "averageUtilization": calc.usage,
                "averageValue": _usage_quantity(snap, spec.name, calc.raw_usage),
            }
    except CalcError as e:
        raise _MetricFailedError(reason, str(e), wrap + str(e)) from None
    out.calc, out.replicas = calc, calc.replicas
    if container:
        out.status = {
            "type": "ContainerResource",
            "containerResource": {"name": spec.name, "container": spec.container, "current": current},
        }
    else:
        out.status = {"type": "Resource", "resource": {"name": spec.name, "current": current}}


def _metric_id(spec: MetricSpec) -> JSON:
    ident: JSON = {"name": spec.name}
    if spec.selector is not None:
        ident["selector"] = spec.selector
    return ident


def _check_selector(spec: MetricSpec, reason: str, wrap: str) -> None:
    try:
        from_label_selector(spec.selector if spec.selector is not None else {})
    except SelectorError as e:
        raise _MetricFailedError(reason, str(e), f"{wrap}{e}") from None


def _pods(
    snap: Snapshot, ctx: PodContext, spec: MetricSpec, spec_replicas: int, tol: Tolerances, out: MetricOutcome
) -> None:
    wrap = "failed to get pods metric value: "
    _check_selector(spec, "FailedGetPodsMetric", wrap)
    target = spec.target
    try:
        if target is None or target.average_value is None:
            raise CalcError("invalid pods metric source: no average value target was set")
        try:
            samples = q.pods_metric(snap, spec.name)
        except q.MetricFetchError as e:
            raise CalcError(f"unable to get metric {spec.name}: {e}") from None
        calc = rc.plain_average(ctx, spec_replicas, target.average_value.milli_value(), samples, "", tol)
    except CalcError as e:
        raise _MetricFailedError("FailedGetPodsMetric", str(e), wrap + str(e)) from None
    out.calc, out.replicas = calc, calc.replicas
    out.name = f"pods metric {spec.name}"
    out.status = {
        "type": "Pods",
        "pods": {"metric": _metric_id(spec), "current": {"averageValue": _milli(calc.usage)}},
    }


def _object(
    snap: Snapshot,
    ctx: PodContext,
    spec: MetricSpec,
    spec_replicas: int,
    status_replicas: int,
    tol: Tolerances,
    out: MetricOutcome,
) -> None:
    wrap = "failed to get object metric value: "
    rel = snap.settings.release
    _check_selector(spec, "FailedGetObjectMetric", wrap)
    described = spec.described_object or {}
    target = spec.target
    ns = str(snap.hpa.get("metadata", {}).get("namespace", ""))

    def fetch() -> int:
        try:
            return q.object_metric(snap, spec.name, described)
        except q.MetricFetchError as e:
            kind, name = described.get("kind", ""), described.get("name", "")
            if snap.settings.release.object_error_wording == "new":
                raise CalcError(f"unable to get metric {spec.name} on {kind} {ns}/{name}: {e}") from None
            # 1.33-1.36 fill the format's verbs in a shifted order: "metric M: Kind on ns name/error"
            raise CalcError(f"unable to get metric {spec.name}: {kind} on {ns} {name}/{e}") from None

    if target is not None and target.type == "Value" and target.value is not None:
        try:
            usage = fetch()
            ratio = rc.go_fdiv(usage, target.value.milli_value())
            calc = rc.usage_ratio_replicas(
                ctx, spec_replicas, ratio, tol, rc.Calc(spec_replicas, usage), rel.caps_usage_ratio
            )
        except CalcError as e:
            raise _MetricFailedError("FailedGetObjectMetric", str(e), wrap + str(e)) from None
        out.name = f"{described.get('kind', '')} metric {spec.name}"
        out.status = {
            "type": "Object",
            "object": {
                "describedObject": described,
                "metric": _metric_id(spec),
                "current": {"value": _milli(usage)},
            },
        }
    elif target is not None and target.type == "AverageValue" and target.average_value is not None:
        try:
            usage = fetch()
        except CalcError as e:
            inner = str(e)
            raise _MetricFailedError(
                "FailedGetObjectMetric", inner, f"{wrap}failed to get {spec.name} object metric: {inner}"
            ) from None
        calc = rc.per_pod_replicas(
            status_replicas, usage, target.average_value.milli_value(), tol, False, rel
        )
        if rel.object_average_says_kind:
            out.name = f"{described.get('kind', '')} metric {spec.name}"
        else:  # 1.33-1.37's description of this case really says "external metric"
            out.name = f"external metric {spec.name}({go_label_selector_string(spec.selector)})"
        out.status = {
            "type": "Object",
            "object": {
                "describedObject": described,
                "metric": _metric_id(spec),
                "current": {"averageValue": _milli(calc.usage)},
            },
        }
    else:
        msg = "invalid object metric source: neither a value target nor an average value target was set"
        raise _MetricFailedError("FailedGetObjectMetric", msg, wrap + msg)
    out.calc, out.replicas = calc, calc.replicas


def _external(
    snap: Snapshot,
    ctx: PodContext,
    spec: MetricSpec,
    spec_replicas: int,
    status_replicas: int,
    tol: Tolerances,
    out: MetricOutcome,
) -> None:
    wrap = f"failed to get {spec.name} external metric value: "
    rel = snap.settings.release
    target = spec.target
    ns = str(snap.hpa.get("metadata", {}).get("namespace", ""))
    sel_text = go_label_selector_string(spec.selector)

    per_pod = target is not None and target.average_value is not None
    if per_pod:
        total = rc.sum_saturated if rel.caps_external_average else rc.sum_wrapped
    else:
        total = rc.sum_capped if rel.caps_usage_ratio else rc.sum_wrapped

    def fetch() -> int:
        try:
            from_label_selector(spec.selector)
        except SelectorError as e:
            raise CalcError(str(e)) from None
        try:
            return total(q.external_metric(snap, spec.name, spec.selector))
        except q.MetricFetchError as e:
            raise CalcError(f"unable to get external metric {ns}/{spec.name}/{sel_text}: {e}") from None

    if target is not None and target.average_value is not None:
        try:
            usage = fetch()
        except CalcError as e:
            raise _MetricFailedError(
                "FailedGetExternalMetric", str(e), f"{wrap}failed to get {spec.name} external metric: {e}"
            ) from None
        calc = rc.per_pod_replicas(
            status_replicas, usage, target.average_value.milli_value(), tol, rel.caps_external_average, rel
        )
        out.status = {
            "type": "External",
            "external": {"metric": _metric_id(spec), "current": {"averageValue": _milli(calc.usage)}},
        }
    elif target is not None and target.value is not None:
        try:
            usage = fetch()
            ratio = rc.go_fdiv(usage, target.value.milli_value())
            calc = rc.usage_ratio_replicas(
                ctx, spec_replicas, ratio, tol, rc.Calc(spec_replicas, usage), rel.caps_usage_ratio
            )
        except CalcError as e:
            raise _MetricFailedError(
                "FailedGetExternalMetric", str(e), f"{wrap}failed to get external metric {spec.name}: {e}"
            ) from None
        out.status = {
            "type": "External",
            "external": {"metric": _metric_id(spec), "current": {"value": _milli(calc.usage)}},
        }
    else:
        msg = "invalid external metric source: neither a value target nor an average value target was set"
        raise _MetricFailedError("FailedGetExternalMetric", msg, wrap + msg)
    out.name = f"external metric {spec.name}({sel_text})"
    out.calc, out.replicas = calc, calc.replicas


def compute_one(
    snap: Snapshot,
    ctx: PodContext,
    spec: MetricSpec,
    spec_replicas: int,
    status_replicas: int,
    tol: Tolerances,
) -> MetricOutcome:
    out = MetricOutcome(spec)
    try:
        if spec.type in ("Resource", "ContainerResource") and spec.target is not None:
            _resource(snap, ctx, spec, spec_replicas, tol, out)
        elif spec.type == "Resource" or spec.type == "ContainerResource":
            msg = (
                "invalid resource metric source: neither an average utilization target nor an average "
                "value (usage) target was set"
            )
            reason = (
                "FailedGetResourceMetric" if spec.type == "Resource" else "FailedGetContainerResourceMetric"
            )
            raise _MetricFailedError(reason, msg, msg)
        elif spec.type == "Pods":
            _pods(snap, ctx, spec, spec_replicas, tol, out)
        elif spec.type == "Object":
            _object(snap, ctx, spec, spec_replicas, status_replicas, tol, out)
        elif spec.type == "External":
            _external(snap, ctx, spec, spec_replicas, status_replicas, tol, out)
        else:
            msg = f'unknown metric source type "{spec.type}"'
            raise _MetricFailedError("InvalidMetricSourceType", msg, msg, SPEC_ERROR)
    except _MetricFailedError as f:
        out.status = {"type": ""}
        out.replicas = 0
        out.error, out.reason, out.error_kind = f.outer, f.reason, f.kind
        out.condition_message = f"the HPA was unable to compute the replica count: {f.inner}"
        out.event_message = f.inner
    return out


def compute_all(snap: Snapshot, ctx: PodContext, spec_replicas: int, status_replicas: int) -> MetricsResult:
    tol = tolerances_for(snap)
    outcomes = [compute_one(snap, ctx, spec, spec_replicas, status_replicas, tol) for spec in snap.metrics]
    events: list[Event] = []
    replicas, metric = 0, ""
    invalid: list[MetricOutcome] = []
    for o in outcomes:
        if not o.ok:
            events.append(Event("Warning", o.reason, o.event_message))
            invalid.append(o)
            continue
        if replicas == 0 or o.replicas > replicas:
            replicas, metric = o.replicas, o.name
    statuses = [o.status for o in outcomes]
    invalid_error = None
    if invalid:
        invalid_error = (
            f"invalid metrics ({len(invalid)} invalid out of {len(outcomes)}), "
            f"first error is: {invalid[0].error}"
        )
    if invalid and (len(invalid) >= len(outcomes) or replicas < spec_replicas):
        first = invalid[0]
        return MetricsResult(
            outcomes,
            -1,
            "",
            statuses,
            events,
            invalid_error,
            (False, first.reason, first.condition_message),
            failed=True,
        )
    return MetricsResult(
        outcomes,
        replicas,
        metric,
        statuses,
        events,
        invalid_error,
        (
            True,
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {metric}",
        ),
    )
