"""Fallback on an outage, opt-in per HPA: what to decide while its metrics cannot be read.

Upstream (to 1.37) never scales on a failed metric: FailedComputeMetricsReplicas, and the
count stays where it is. That is safe against a scale-down, but a workload stuck small
during a Prometheus outage is an outage too. KEP-5679 proposes a fixed replica count once
an External metric has failed for ``failureDurationSeconds``; promhpa offers that for every
source type, and two policies that follow what the metrics last said instead:

* ``Static`` -- the failing metrics propose ``replicas`` (KEP-5679's fallback);
* ``HoldHigher`` -- they propose the larger of the last good proposal and the current count;
* ``HoldLower`` -- the smaller of the two.

A last good proposal older than ``maxStalenessSeconds`` is not used (the current count is).
A fallback proposal is never below 1, so an outage never scales a workload to zero; it is
one more proposal beside those of the metrics that still answer, and then goes through
stabilization, policies and min/max like any other. Without the annotation nothing here
runs, and decisions are upstream's exactly.

The HPA carries it as an annotation (``promhpa.io/fallback``), a JSON object::

    promhpa.io/fallback: '{"policy": "Static", "replicas": 6, "failureDurationSeconds": 60}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

ANNOTATION = "promhpa.io/fallback"
CONDITION = "FallbackActive"
POLICIES = ("Static", "HoldHigher", "HoldLower")
_KEYS = {"policy", "replicas", "failureDurationSeconds", "maxStalenessSeconds"}


@dataclass(frozen=True)
class FallbackSpec:
    policy: str
    replicas: int | None  # Static
    failure_duration: timedelta  # how long the metrics must have failed before it decides
    max_staleness: timedelta | None  # Hold*: how old a last good proposal may be


@dataclass(frozen=True)
class FallbackMemory:
    """What the controller remembers for it between reconciles (in the snapshot's history)."""

    failing_since: datetime | None = None
    last_good: int | None = None  # the largest proposal of the last reconcile with every metric read
    last_good_at: datetime | None = None


class FallbackError(ValueError):
    """The annotation is not a valid fallback; the message names the key."""


def parse_spec(annotations: dict[str, Any]) -> FallbackSpec | None:
    """The annotation's fallback (None: not set); FallbackError when it is invalid."""
    raw = annotations.get(ANNOTATION)
    if raw is None:
        return None
    try:
        data = json.loads(str(raw))
    except ValueError as e:
        raise FallbackError(f"{ANNOTATION}: not JSON: {e}") from None
    return fallback_from(data, ANNOTATION)


def fallback_from(data: Any, where: str) -> FallbackSpec:
    """A fallback object -- the annotation's JSON, or ``spec.controller.fallback`` of
    promhpa's own kind -- with errors naming ``where`` and the key."""
    if not isinstance(data, dict):
        raise FallbackError(f'{where}: must be an object such as {{"policy": "Static", "replicas": 4}}')
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise FallbackError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    policy = data.get("policy", "Static")
    if policy not in POLICIES:
        raise FallbackError(f"{where}.policy: {policy!r} is not one of {', '.join(POLICIES)}")
    replicas = data.get("replicas")
    if policy == "Static":
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            raise FallbackError(f"{where}.replicas: Static needs a replica count of at least 1")
    elif replicas is not None:
        raise FallbackError(f"{where}.replicas: only the Static policy takes a replica count")
    return FallbackSpec(
        policy,
        replicas,
        timedelta(seconds=_seconds(data, where, "failureDurationSeconds", 60, minimum=0)),
        timedelta(seconds=_seconds(data, where, "maxStalenessSeconds", 0, minimum=1))
        if "maxStalenessSeconds" in data
        else None,
    )


def _seconds(data: dict[str, Any], where: str, key: str, default: int, minimum: int) -> int:
    v = data.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise FallbackError(f"{where}.{key}: must be a whole number of seconds, at least {minimum}")
    return v


def remember(mem: FallbackMemory, all_read: bool, largest: int, now: datetime) -> FallbackMemory:
    """After computing the metrics: when the failure began, or the last good proposal."""
    if all_read:
        return FallbackMemory(None, largest, now)
    return FallbackMemory(mem.failing_since or now, mem.last_good, mem.last_good_at)


def propose(spec: FallbackSpec, mem: FallbackMemory, current: int, now: datetime) -> tuple[int | None, str]:
    """The failing metrics' proposal, and what decided it; None while the failure is younger
    than failureDurationSeconds (upstream's behaviour holds until then)."""
    since = mem.failing_since or now
    failed_for = now - since
    if failed_for < spec.failure_duration:
        return None, ""
    seconds = f"{failed_for.total_seconds():g}s"
    if spec.policy == "Static":
        assert spec.replicas is not None
        return max(spec.replicas, 1), f"Static: metrics unavailable for {seconds}, proposing {spec.replicas}"
    fresh = (
        mem.last_good is not None
        and mem.last_good_at is not None
        and (spec.max_staleness is None or now - mem.last_good_at <= spec.max_staleness)
    )
    good = mem.last_good if fresh else None
    if good is None:
        why = "no last good proposal" if mem.last_good is None else "the last good proposal is stale"
        held = max(current, 1)
        return held, f"{spec.policy}: metrics unavailable for {seconds}, {why}: holding {held}"
    pick = max(good, current) if spec.policy == "HoldHigher" else min(good, current)
    pick = max(pick, 1)
    return pick, (
        f"{spec.policy}: metrics unavailable for {seconds}, last good proposal {good}, "
        f"current {current}: proposing {pick}"
    )


def memory_to_wire(mem: FallbackMemory) -> dict[str, Any]:
    from shared.durations import format_time

    out: dict[str, Any] = {}
    if mem.failing_since is not None:
        out["failingSince"] = format_time(mem.failing_since)
    if mem.last_good is not None:
        out["lastGood"] = mem.last_good
    if mem.last_good_at is not None:
        out["lastGoodAt"] = format_time(mem.last_good_at)
    return out
