"""From a metric proposal to the replica count: stabilization, rate limits, min/max.

Two paths, as upstream:

* legacy (no ``spec.behavior``): the highest recommendation of the downscale window, then
  min/max and the scale-up limit ``max(factor x current, minimum)``;
* behavior: scale-up and scale-down stabilization windows over the recommendations, then
  the rate policies over the scale events of each policy's period, then min/max.

History is a value: each function takes the recommendations/events and returns the new
ones, so a reconcile can be replayed and chained offline. Boundary details are upstream's:
the legacy window keeps a recommendation stamped exactly at the cutoff, the behavior
windows do not; an event counts toward a period only when strictly newer than its start.
Upstream reads its clock again for each cutoff, so with a zero window a recommendation
stamped ``now`` (recorded earlier in the same round) is already older than the cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from .model import Recommendation, ScaleEvent, ScalingPolicy, ScalingRules
from .replica_calculator import INT32_MAX, INT32_MIN, ceil_int32, go_int32, wrap32


@dataclass
class Normalized:
    replicas: int
    able_reason: str
    able_message: str
    limited: bool
    limit_reason: str
    limit_message: str
    recommendations: tuple[Recommendation, ...]
    stabilized: int
    notes: list[str] = field(default_factory=list)


READY = ("ReadyForNewScale", "recommended size matches current size")
DOWN_STABILIZED = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
)
UP_STABILIZED = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
WITHIN = ("DesiredWithinRange", "the desired count is within the acceptable range")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")


def _record(
    recs: list[Recommendation], old_index: int | None, rec: Recommendation
) -> tuple[Recommendation, ...]:
    """Reuse the slot of the last expired recommendation, else append (upstream's memory)."""
    if old_index is not None:
        recs[old_index] = rec
    else:
        recs.append(rec)
    return tuple(recs)


def normalize_legacy(
    current: int,
    proposal: int,
    min_replicas: int,
    max_replicas: int,
    recommendations: tuple[Recommendation, ...],
    now: datetime,
    window: timedelta,
    factor: float,
    minimum: float,
) -> Normalized:
    cutoff = now - window
    stabilized = proposal
    old_index: int | None = None
    recs = list(recommendations)
    for i, rec in enumerate(recs):
        if _older(rec.timestamp, cutoff, window == timedelta(0)):
            old_index = i
        elif rec.replicas > stabilized:
            stabilized = rec.replicas
    new_recs = _record(recs, old_index, Recommendation(proposal, now))
    able = DOWN_STABILIZED if stabilized != proposal else READY
    notes = []
    if stabilized != proposal:
        notes.append(
            f"downscale stabilization ({_secs(window)} window): "
            f"the highest recent recommendation is {stabilized}"
        )
    scale_up_limit = go_int32(max(factor * float(current), minimum))
    if max_replicas > scale_up_limit:
        maximum, limit = scale_up_limit, UP_LIMIT
    else:
        maximum, limit = max_replicas, TOO_MANY
    if stabilized < min_replicas:
        desired, reason = min_replicas, TOO_FEW
    elif stabilized > maximum:
        desired, reason = maximum, limit
    else:
        desired, reason = stabilized, WITHIN
    if desired != stabilized:
        notes.append(
            f"{reason[0]}: {stabilized} -> {desired} (min {min_replicas}, max {max_replicas}, "
            f"scale-up limit max({factor:g} x {current}, {minimum:g}) = {scale_up_limit})"
        )
    return Normalized(desired, *able, desired != stabilized, *reason, new_recs, stabilized, notes)


def _older(timestamp: datetime, cutoff: datetime, zero_window: bool) -> bool:
    """Go's ``timestamp.Before(time.Now() - window)``: with a zero window the cutoff is a
    later reading of the clock than any timestamp this round recorded."""
    return timestamp < cutoff or (zero_window and timestamp <= cutoff)


def _secs(d: timedelta) -> str:
    return f"{int(d.total_seconds())}s"


def stabilize_with_behavior(
    current: int,
    proposal: int,
    up_window_s: int,
    down_window_s: int,
    recommendations: tuple[Recommendation, ...],
    now: datetime,
) -> tuple[int, tuple[str, str], tuple[Recommendation, ...]]:
    up_cutoff = now - timedelta(seconds=up_window_s)
    down_cutoff = now - timedelta(seconds=down_window_s)
    up = down = proposal
    old_index: int | None = None
    recs = list(recommendations)
    for i, rec in enumerate(recs):
        if rec.timestamp > up_cutoff:
            up = min(rec.replicas, up)
        if rec.timestamp > down_cutoff:
            down = max(rec.replicas, down)
        if _older(rec.timestamp, up_cutoff, up_window_s == 0) and _older(
            rec.timestamp, down_cutoff, down_window_s == 0
        ):
            old_index = i
    result = current
    if result < up:
        result = up
    if result > down:
        result = down
    new_recs = _record(recs, old_index, Recommendation(proposal, now))
    reason = UP_STABILIZED if proposal >= current else DOWN_STABILIZED
    return result, reason, new_recs


def replicas_changed_in_period(period_seconds: int, events: tuple[ScaleEvent, ...], now: datetime) -> int:
    """The net change of the events inside the period, in Go's int32 (it wraps)."""
    cutoff = now - timedelta(seconds=period_seconds)
    return wrap32(sum(e.replica_change for e in events if e.timestamp > cutoff))


Events = tuple[ScaleEvent, ...]
Notes = list[str] | None  # where an explanation goes, line by line (None: not asked for)


def _period_start(
    current: int, period: int, ups: tuple[ScaleEvent, ...], downs: tuple[ScaleEvent, ...], now: datetime
) -> int:
    return wrap32(
        current
        - replicas_changed_in_period(period, ups, now)
        + replicas_changed_in_period(period, downs, now)
    )


def scale_up_limit(
    current: int,
    ups: Events,
    downs: Events,
    rules: ScalingRules,
    now: datetime,
    notes: Notes = None,
    saturate: bool = True,
) -> int:
    """upstream's calculateScaleUpLimitWithScalingRules: the ceiling the policies allow;
    ``saturate`` (1.38): a Percent policy's limit past int32 is MaxInt32."""
    return _policy_limit(current, ups, downs, rules, now, notes, up=True, saturate=saturate)


def scale_down_limit(
    current: int, ups: Events, downs: Events, rules: ScalingRules, now: datetime, notes: Notes = None
) -> int:
    """upstream's calculateScaleDownLimitWithBehaviors: the floor the policies allow."""
    return _policy_limit(current, ups, downs, rules, now, notes, up=False)


def _policy_limit(
    current: int,
    ups: Events,
    downs: Events,
    rules: ScalingRules,
    now: datetime,
    notes: Notes,
    up: bool,
    saturate: bool = False,
) -> int:
    if rules.select_policy == "Disabled":
        return current
    # selectPolicy Min picks the least change: going up the lowest ceiling, going down the
    # highest floor; Max the most
    lowest = (rules.select_policy == "Min") == up
    result = INT32_MAX if lowest else INT32_MIN
    for p in rules.policies:
        start = _period_start(current, p.period_seconds, ups, downs, now)
        proposed = _proposal(p, start, up, saturate)
        _note(notes, p, start, current, proposed)
        result = min(result, proposed) if lowest else max(result, proposed)
    return result


def _proposal(p: ScalingPolicy, start: int, up: bool, saturate: bool) -> int:
    if p.type == "Pods":
        return wrap32(start + p.value if up else start - p.value)  # int32 arithmetic, as upstream
    if p.type == "Percent":
        if up:  # rounded up, or a small percentage could never add a replica
            return ceil_int32(float(start) * (1 + float(p.value) / 100), saturate)
        return go_int32(float(start) * (1 - float(p.value) / 100))
    return 0  # upstream leaves an unknown policy type's proposal at its zero value


def _note(notes: list[str] | None, p: ScalingPolicy, start: int, current: int, proposed: int) -> None:
    if notes is not None:
        notes.append(
            f"  policy {p.type} {p.value} per {p.period_seconds}s: {start} replicas at the period's "
            f"start (net change since: {current - start:+d}) -> limit {proposed}"
        )


def normalize_with_behavior(
    current: int,
    proposal: int,
    min_replicas: int,
    max_replicas: int,
    up: ScalingRules,
    down: ScalingRules,
    down_window_default: timedelta,
    recommendations: tuple[Recommendation, ...],
    ups: tuple[ScaleEvent, ...],
    downs: tuple[ScaleEvent, ...],
    now: datetime,
    saturate: bool = True,
) -> Normalized:
    down_window = down.stabilization_window_seconds
    if down_window is None:  # the controller's --horizontal-pod-autoscaler-downscale-stabilization
        down_window = int(down_window_default.total_seconds())
    up_window = up.stabilization_window_seconds or 0
    stabilized, stab_reason, new_recs = stabilize_with_behavior(
        current, proposal, up_window, down_window, recommendations, now
    )
    able = stab_reason if stabilized != proposal else READY
    notes = []
    if stabilized != proposal:
        notes.append(
            f"stabilization (up window {up_window}s, down window {down_window}s): {proposal} -> {stabilized}"
        )
    desired, reason = stabilized, WITHIN
    if stabilized > current:
        policy_notes: list[str] = []
        limit = max(scale_up_limit(current, ups, downs, up, now, policy_notes, saturate), current)
        maximum, cause = (limit, UP_LIMIT) if max_replicas > limit else (max_replicas, TOO_MANY)
        notes.append(f"scale-up rate limit (selectPolicy {up.select_policy}): at most {limit}")
        notes.extend(policy_notes)
        if stabilized > maximum:
            desired, reason = maximum, cause
    elif stabilized < current:
        policy_notes = []
        limit = min(scale_down_limit(current, ups, downs, down, now, policy_notes), current)
        minimum, cause = (limit, DOWN_LIMIT) if min_replicas < limit else (min_replicas, TOO_FEW)
        notes.append(f"scale-down rate limit (selectPolicy {down.select_policy}): at least {limit}")
        notes.extend(policy_notes)
        if stabilized < minimum:
            desired, reason = minimum, cause
    if desired != stabilized:
        notes.append(f"{reason[0]}: {stabilized} -> {desired} (min {min_replicas}, max {max_replicas})")
    return Normalized(desired, *able, desired != stabilized, *reason, new_recs, stabilized, notes)


def _longest_period(rules: ScalingRules) -> int:
    return max((p.period_seconds for p in rules.policies), default=0)


def store_scale_event(
    events: tuple[ScaleEvent, ...],
    rules: ScalingRules,
    change: int,
    now: datetime,
) -> tuple[ScaleEvent, ...]:
    """Record a rescale, reusing the slot of the last event older than the longest period."""
    cutoff = now - timedelta(seconds=_longest_period(rules))
    marked = [replace(e, outdated=True) if e.timestamp < cutoff else e for e in events]
    old_index = None
    for i, e in enumerate(marked):
        if e.outdated:
            old_index = i
    new = ScaleEvent(change, now)
    if old_index is not None:
        marked[old_index] = new
    else:
        marked.append(new)
    return tuple(marked)
