"""Replica proposals per target type, with upstream's exact arithmetic.

Upstream computes in Go: int64 milli-units, integer division that truncates toward zero,
float64 ratios, ``int32(math.Ceil(x))``. Python floats are IEEE doubles too, so the same
operations in the same order give the same bits; the helpers below supply Go's integer
conversions. Each function returns a ``Calc`` that also records *why* (pod groups, ratios,
tolerance band) for ``decide --explain``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .model import Pod
from .pods import PodGroups, PodSample, RequestRules, calculate_requests, group_pods, ready_pod_count
from .versions import Release

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def go_int32(x: float) -> int:
    """Go's int32(float64) on amd64: truncation; NaN or out of range gives MinInt32."""
    if math.isnan(x) or x >= 2**31 or x <= -(2**31) - 1:
        return INT32_MIN
    return int(x)


def fceil(x: float) -> float:
    """math.Ceil: ±Inf and NaN pass through (Python's math.ceil would raise)."""
    return x if not math.isfinite(x) else float(math.ceil(x))


def ceil_int32(x: float, saturate: bool) -> int:
    """A replica count from a float: 1.38's ceilToInt32 (past a bound, the bound; NaN still
    Go's MinInt32) when ``saturate``, else 1.33-1.37's int32(math.Ceil(x))."""
    c = fceil(x)
    if saturate and c > INT32_MAX:
        return INT32_MAX
    if saturate and c < INT32_MIN:
        return INT32_MIN
    return go_int32(c)


def wrap32(x: int) -> int:
    """Go's int32(int64): the low 32 bits, two's complement."""
    return (x + 2**31) % 2**32 - 2**31


def go_int64(x: float) -> int:
    if math.isnan(x) or x >= 2**63 or x < -(2**63):
        return INT64_MIN
    return int(x)


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero); division by zero is the caller's bug."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_fdiv(a: float, b: float) -> float:
    """Go's float64(a) / float64(b): each operand rounded to a float64 first (Python's int / int
    divides the exact integers, which differs past 2**53), and x/0 is ±Inf (NaN for 0/0)
    instead of an exception."""
    a, b = float(a), float(b)
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a)
    return a / b


@dataclass(frozen=True)
class Tolerances:
    scale_down: float
    scale_up: float

    def within(self, ratio: float) -> bool:
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)

    def band(self) -> str:
        return f"[{1.0 - self.scale_down:.3g}, {1.0 + self.scale_up:.3g}]"


class CalcError(Exception):
    """The metric cannot produce a proposal; str() is upstream's message."""


@dataclass
class Calc:
    """A proposal and how it was reached."""

    replicas: int
    usage: int = 0  # milli-units (or the utilization percentage for Utilization targets)
    raw_usage: int = 0  # per-pod average milli-value for Utilization targets
    ratio: float | None = None
    new_ratio: float | None = None
    groups: PodGroups | None = None
    ready_pods: int | None = None
    notes: list[str] = field(default_factory=list)
    # why the proposal stayed at the current count: "tolerance" (the ratio was within the
    # band) or "direction" (counting missing pods would have reversed or undone the change)
    kept: str = ""


@dataclass(frozen=True)
class PodContext:
    pods: list[Pod]
    cpu_initialization_period: timedelta
    initial_readiness_delay: timedelta
    now: datetime
    release: Release = field(default_factory=Release)


def _utilization_ratio(
    metrics: dict[str, PodSample], requests: dict[str, int], target: int, exact: bool
) -> tuple[float, int, int]:
    """The utilization percentage of the summed requests. ``exact`` (1.38): the sums and the
    percentage exact, the percentage clamped to int32; before, int64 sums that wrap and a
    percentage truncated to its low 32 bits."""
    total = requested = entries = 0
    for name, sample in metrics.items():
        if name not in requests:
            continue  # metrics of pods we do not know are extraneous
        total += sample.value
        requested += requests[name]
        entries += 1
    if not exact:
        total, requested = wrap64(total), wrap64(requested)
    if requested == 0:
        raise CalcError("no metrics returned matched known pods")
    if exact:
        utilization = min(max(go_div(total * 100, requested), INT32_MIN), INT32_MAX)
    else:
        utilization = wrap32(wrap64(go_div(wrap64(total * 100), requested)))
    return go_fdiv(utilization, target), utilization, wrap64(go_div(total, entries))


def _usage_ratio(metrics: dict[str, PodSample], target: int, exact: bool) -> tuple[float, int]:
    total = sum(s.value for s in metrics.values())
    usage = wrap64(go_div(total if exact else wrap64(total), len(metrics)))
    return go_fdiv(usage, target), usage


def _grouped(ctx: PodContext, metrics: dict[str, PodSample], resource: str) -> PodGroups:
    if not ctx.pods:
        raise CalcError("no pods returned by selector while calculating replica count")
    groups = group_pods(
        ctx.pods,
        metrics,
        resource,
        ctx.cpu_initialization_period,
        ctx.initial_readiness_delay,
        ctx.now,
        ignore_succeeded=ctx.release.ignores_succeeded_pods,
    )
    for name in groups.ignored | groups.unready:
        metrics.pop(name, None)
    if not metrics:
        raise CalcError("did not receive metrics for targeted pods (pods might be unready)")
    return groups


def resource_utilization(
    ctx: PodContext,
    current: int,
    target: int,
    resource: str,
    container: str,
    metrics: dict[str, PodSample],
    tol: Tolerances,
    rules: RequestRules | None = None,
) -> Calc:
    """Resource/ContainerResource with a Utilization target (percent of request)."""
    metrics = dict(metrics)
    groups = _grouped(ctx, metrics, resource)
    try:
        requests = calculate_requests(ctx.pods, container, resource, rules)
    except ValueError as e:
        raise CalcError(str(e)) from None
    exact, saturate = ctx.release.exact_sums, ctx.release.saturates_int32
    ratio, utilization, raw = _utilization_ratio(metrics, requests, target, exact)
    calc = Calc(current, utilization, raw, ratio=ratio, groups=groups)
    fallback = max(100, target)
    if not _first_pass_decides(calc, current, ratio, groups, tol, saturate):
        _count_conservatively(
            calc,
            metrics,
            groups,
            ratio,
            lambda name: go_div(requests[name] * fallback, 100),
            f"{fallback}% of request",
        )
        new_ratio, _, _ = _utilization_ratio(metrics, requests, target, exact)
        _second_pass(calc, current, ratio, new_ratio, len(metrics), tol, saturate)
    return calc


def _first_pass_decides(
    calc: Calc, current: int, ratio: float, groups: PodGroups, tol: Tolerances, saturate: bool
) -> bool:
    """With no missing pods (and no unready ones on the way up) the first ratio decides alone."""
    if (groups.unready and ratio > 1.0) or groups.missing:
        return False
    if tol.within(ratio):
        calc.kept = "tolerance"
        calc.notes.append(f"ratio {ratio:.4g} is within the tolerance band {tol.band()}: keep {current}")
    else:
        calc.replicas = ceil_int32(ratio * groups.ready_count, saturate)
        calc.notes.append(f"ceil({ratio:.4g} x {groups.ready_count} ready pods) = {calc.replicas}")
    return True


def _count_conservatively(
    calc: Calc,
    metrics: dict[str, PodSample],
    groups: PodGroups,
    ratio: float,
    scale_down_value: Callable[[str], int],
    scale_down_text: str,
) -> None:
    """Fill in the pods the first pass left out, in the direction that dampens the change.

    Scaling down, a pod without metrics is assumed busy (``scale_down_value``); scaling up,
    it and any unready pod are assumed idle. So missing data can only slow a change down.
    """
    if groups.missing:
        if ratio < 1.0:
            for name in groups.missing:
                metrics[name] = PodSample(scale_down_value(name))
            calc.notes.append(
                f"scale-down: {len(groups.missing)} pod(s) without metrics counted at {scale_down_text}"
            )
        elif ratio > 1.0:
            for name in groups.missing:
                metrics[name] = PodSample(0)
            calc.notes.append(f"scale-up: {len(groups.missing)} pod(s) without metrics counted at 0")
    if groups.unready and ratio > 1.0:
        for name in groups.unready:
            metrics[name] = PodSample(0)
        calc.notes.append(f"scale-up: {len(groups.unready)} unready pod(s) counted at 0")


def _second_pass(
    calc: Calc, current: int, ratio: float, new_ratio: float, counted: int, tol: Tolerances, saturate: bool
) -> Calc:
    calc.new_ratio = new_ratio
    if tol.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        why = "within the tolerance band" if tol.within(new_ratio) else "would reverse the direction"
        calc.kept = "tolerance" if tol.within(new_ratio) else "direction"
        calc.notes.append(f"recomputed ratio {new_ratio:.4g} {why} {tol.band()}: keep {current}")
        return calc
    proposal = ceil_int32(new_ratio * counted, saturate)
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        calc.kept = "direction"
        calc.notes.append(
            f"ceil({new_ratio:.4g} x {counted}) = {proposal} would move the wrong way: keep {current}"
        )
        return calc
    calc.replicas = proposal
    calc.notes.append(f"ceil({new_ratio:.4g} x {counted} pods counted) = {proposal}")
    return calc


def plain_average(
    ctx: PodContext,
    current: int,
    target: int,
    metrics: dict[str, PodSample],
    resource: str,
    tol: Tolerances,
) -> Calc:
    """Pods metrics and Resource AverageValue targets: the per-pod average against a value."""
    metrics = dict(metrics)
    groups = _grouped(ctx, metrics, resource)
    exact, saturate = ctx.release.exact_sums, ctx.release.saturates_int32
    ratio, usage = _usage_ratio(metrics, target, exact)
    calc = Calc(current, usage, ratio=ratio, groups=groups)
    if not _first_pass_decides(calc, current, ratio, groups, tol, saturate):
        _count_conservatively(calc, metrics, groups, ratio, lambda _: target, "the target")
        new_ratio, _ = _usage_ratio(metrics, target, exact)
        _second_pass(calc, current, ratio, new_ratio, len(metrics), tol, saturate)
    return calc


def usage_ratio_replicas(
    ctx: PodContext, current: int, ratio: float, tol: Tolerances, calc: Calc, capped: bool = True
) -> Calc:
    """Object/External Value targets: the ratio times the ready pods (or ceil(ratio) from 0);
    ``capped`` (1.35 and later): a product above MaxInt32 is MaxInt32, not Go's wrapped int;
    from 1.38 both paths saturate at either bound."""
    saturate = ctx.release.saturates_int32
    calc.ratio = ratio
    if current != 0:
        if tol.within(ratio):
            calc.replicas = current
            calc.kept = "tolerance"
            calc.notes.append(f"ratio {ratio:.4g} is within the tolerance band {tol.band()}: keep {current}")
            return calc
        if not ctx.pods:
            raise CalcError(
                "unable to calculate ready pods: no pods returned by selector while calculating replica count"
            )
        ready = ready_pod_count(ctx.pods)
        calc.ready_pods = ready
        product = ratio * ready
        if saturate:
            calc.replicas = ceil_int32(product, True)
        else:
            calc.replicas = INT32_MAX if capped and product > INT32_MAX else go_int32(fceil(product))
        calc.notes.append(f"ceil({ratio:.4g} x {ready} ready pods) = {calc.replicas}")
    else:
        calc.replicas = ceil_int32(ratio, saturate)
        calc.notes.append(f"from zero replicas: ceil({ratio:.4g}) = {calc.replicas}")
    return calc


def per_pod_replicas(
    status_replicas: int, usage: int, target: int, tol: Tolerances, capped: bool, rel: Release
) -> Calc:
    """Object/External AverageValue targets: total divided by the per-pod target.
    ``capped`` (External from 1.34): replicas at MaxInt32 and the average at MaxInt64 where
    Go's conversions would wrap; Object AverageValue is never capped before 1.38. From 1.38
    (``rel.per_pod_from_zero``) both saturate, and zero current replicas skip the tolerance
    and report an average of 0 instead of dividing by zero."""
    if rel.per_pod_from_zero:
        return _per_pod_replicas_38(status_replicas, usage, target, tol)
    ratio = go_fdiv(usage, float(target) * float(status_replicas))
    calc = Calc(status_replicas, ratio=ratio)
    if not tol.within(ratio):
        wanted = fceil(go_fdiv(usage, target))
        calc.replicas = INT32_MAX if capped and wanted > INT32_MAX else go_int32(wanted)
        calc.notes.append(
            f"ratio {ratio:.4g} outside {tol.band()}: ceil(total / per-pod target) = {calc.replicas}"
        )
    else:
        calc.kept = "tolerance"
        calc.notes.append(
            f"ratio {ratio:.4g} is within the tolerance band {tol.band()}: keep {status_replicas}"
        )
    if capped and float(usage) >= float(INT64_MAX):
        calc.usage = INT64_MAX
    else:
        avg = go_fdiv(usage, status_replicas)
        calc.usage = go_int64(fceil(avg))
    return calc


def _per_pod_replicas_38(status_replicas: int, usage: int, target: int, tol: Tolerances) -> Calc:
    calc = Calc(status_replicas)
    if status_replicas != 0:  # with none running the ratio is undefined: no tolerance check
        calc.ratio = go_fdiv(usage, float(target) * float(status_replicas))
    if calc.ratio is not None and tol.within(calc.ratio):
        calc.kept = "tolerance"
        calc.notes.append(
            f"ratio {calc.ratio:.4g} is within the tolerance band {tol.band()}: keep {status_replicas}"
        )
    else:
        calc.replicas = ceil_int32(go_fdiv(usage, target), True)
        why = (
            f"ratio {calc.ratio:.4g} outside {tol.band()}" if calc.ratio is not None else "from zero replicas"
        )
        calc.notes.append(f"{why}: ceil(total / per-pod target) = {calc.replicas}")
    if float(usage) >= float(INT64_MAX):
        calc.usage = INT64_MAX
    elif status_replicas == 0:
        calc.usage = 0
    else:
        calc.usage = go_int64(fceil(go_fdiv(usage, status_replicas)))
    return calc


def wrap64(x: int) -> int:
    """Go's int64 arithmetic: two's complement wrap-around."""
    return (x + 2**63) % 2**64 - 2**63


def sum_wrapped(values: list[int]) -> int:
    """Sum of External series as int64 additions (1.33; 1.34's Value targets)."""
    total = 0
    for v in values:
        total = wrap64(total + v)
    return total


def sum_capped(values: list[int]) -> int:
    """Sum of External series for Value targets from 1.35: capped at MaxInt64 on a positive overflow."""
    total = 0
    for v in values:
        if v > 0 and total > INT64_MAX - v:
            return INT64_MAX
        total += v
    return total


def sum_saturated(values: list[int]) -> int:
    """Sum of External series for AverageValue targets from 1.34: upstream takes any
    negative running total for an overflow, so it becomes MaxInt64 (a negative series too)."""
    total = 0
    for v in values:
        total = wrap64(total + v)
        if total < 0:
            return INT64_MAX
    return total
