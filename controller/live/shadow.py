"""Shadow mode (``--dry-run``): decide beside the HPA's real owner and say where we differ.

Beside kube-controller-manager (or another promhpa) the decision is only comparable if our
memory holds what the *owner* did, not what we would have done: a rate-limit policy counts
the scale events of the controller that acts. So in dry-run the scale events come from the
owner's rescales, seen in its status writes -- a write that moves ``lastScaleTime`` carries
``currentReplicas`` (the count before) and ``desiredReplicas`` (after), exactly what
upstream stores -- while the recommendations are our own (they depend only on the metrics,
which both read from the same APIs).

Decisions are paired, and compared only when their inputs were the same. The two
controllers sync at different moments, so between the owner's decision and ours the metrics
may move and the owner may rescale. Each status the owner writes (its decision, seen
through the watch) is paired with our two decisions around it -- the last one before it,
the first one after -- and compared with those that started from the same inputs: the same
``currentReplicas`` and the same ``currentMetrics`` (both statuses carry them). It agrees if
it equals one of them in desired replicas and every condition's status and reason (messages
carry the same values, but are shown, not compared). Time is an input too: the windows of
rate-limit policies and stabilization close at the owner's moments, not ours, and our
recommendations are dated up to a period apart from its own; so a decision of ours that
differs is decided again (the same pure engine, the same snapshot) at the owner's moment
and up to one sync period either side of it -- and, since the owner lists pods at its own
moment, somewhere between our two, once more with the pods as our next reconcile saw them
(the same pods' readiness, then every pod: the ReplicaSet may have created one the owner
already counted and our earlier list had not) -- and, while the inputs were moving, with
the stabilization window as the owner may have filled it, each of its samples between our
two around it (``_sampled_between``) -- and agrees if any of those equals the owner's.
A difference that outlives one sync period is never explained away. It is a difference if
it equals none;
with no pair of equal inputs it is counted as not comparable. An owner that writes nothing
(its decision did not change) is compared directly under the same rules (inputs equal,
time within a period): a difference at two of our reconciles running without a write is
one too.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import structlog

from controller.engine import decide
from controller.engine.behavior import store_scale_event
from controller.engine.model import Behavior, History, Pod, Recommendation, Snapshot
from shared.durations import DurationError, parse_time

from .shadow_diff import Comparison, Key, OwnerRescale, differences, inputs, seen_inputs

log = structlog.get_logger("controller.shadow")
STEADY_SIGHTS = 2  # reconciles without an owner write that must differ to count


class Shadow:
    """The owner's rescales (fed by the HPA informer, on the loop) and the comparisons."""

    def __init__(self, period: float = 15.0) -> None:
        self.period = period
        self._last_scale_time: dict[Key, str | None] = {}
        self._pending: dict[Key, list[OwnerRescale]] = {}
        self._last_status: dict[Key, dict[str, Any]] = {}
        self._writes: dict[Key, list[tuple[datetime, dict[str, Any]]]] = {}
        self._decisions: dict[Key, tuple[datetime, dict[str, Any], Snapshot | None]] = {}
        self.comparisons: dict[Key, Comparison] = {}
        self.differences_total = 0
        self.paired = {"agree": 0, "differ": 0, "not_comparable": 0}

    def observe_hpa(self, kind: str, obj: dict[str, Any], seen_at: datetime) -> None:
        """Note an owner's rescale from a status write.

        Seen as it happens (a watch event), the rescale is dated when we see it: the owner
        stored its event a few milliseconds earlier, while ``lastScaleTime`` is truncated to
        the second and so up to a second early. Seen in the first list (we just started), it
        is dated by ``lastScaleTime``.
        """
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        status = obj.get("status") or {}
        last = status.get("lastScaleTime")
        if kind == "DELETED":
            for d in (self._last_scale_time, self._pending, self._last_status, self._writes):
                d.pop(key, None)
            self._decisions.pop(key, None)
            self.comparisons.pop(key, None)
            return
        if kind == "MODIFIED" and status.get("conditions") and status != self._last_status.get(key):
            self._writes.setdefault(key, []).append((seen_at, status))
        self._last_status[key] = status
        known = key in self._last_scale_time
        previous = self._last_scale_time.get(key)
        self._last_scale_time[key] = last
        if last is None or (known and previous == last):
            return
        current, desired = status.get("currentReplicas"), status.get("desiredReplicas")
        if not isinstance(current, int) or not isinstance(desired, int) or current == desired:
            return
        try:
            at = parse_time(str(last))
        except DurationError:
            return
        if known:
            at = max(at, seen_at)
        self._pending.setdefault(key, []).append(OwnerRescale(desired - current, at))

    def follow_owner(
        self, key: Key, history: History, behavior: Behavior | None, upto: datetime | None = None
    ) -> History:
        """The memory with the owner's rescales since the last reconcile stored as upstream
        stores its own (only with a behavior; the slot of an outdated event is reused).

        Only rescales seen by ``upto`` (the snapshot's clock, read before the scale) count:
        one the owner made while we were reading is not in the scale we read either, and
        waits for the next reconcile."""
        pending = self._pending.pop(key, [])
        rescales = [r for r in pending if upto is None or r.at <= upto]
        later = [r for r in pending if upto is not None and r.at > upto]
        if later:
            self._pending[key] = later
        if behavior is None:
            return history
        ups, downs = history.scale_up_events, history.scale_down_events
        for r in rescales:
            if r.change > 0:
                ups = store_scale_event(ups, behavior.scale_up, r.change, r.at)
            else:
                downs = store_scale_event(downs, behavior.scale_down, -r.change, r.at)
        return replace(history, scale_up_events=ups, scale_down_events=downs)

    def _moments(
        self, snap: Snapshot, at: datetime, later: Snapshot | None, owner: dict[str, Any] | None = None
    ) -> list[tuple[str, Snapshot]]:
        """Our snapshot as the owner may have seen it: at its moment and up to a sync period
        either side, and -- the owner lists pods at its own moment, between our two -- with
        the pods as our next reconcile saw them: our pods' readiness then, and every pod
        then (a pod created after our list may be in the owner's; run beside kcm, a new
        pod of its last rescale was counted by kcm and not yet by us)."""
        p = timedelta(seconds=self.period)
        shifts = (timedelta(0), p / 2, p, -p / 2, -p)
        out = [(f"{s.total_seconds():+g}s", replace(snap, now=at + s)) for s in shifts]
        if later is not None and later is not snap:
            names = {pod.name for pod in snap.pods}
            same = tuple(pod for pod in later.pods if pod.name in names)
            seen: list[tuple[Pod, ...]] = [snap.pods]
            for label, pods in (("pods as seen later", same), ("all pods as seen later", later.pods)):
                if pods not in seen:
                    seen.append(pods)
                    out += [
                        (f"{s.total_seconds():+g}s, {label}", replace(snap, now=at + s, pods=pods))
                        for s in shifts
                    ]
        if owner is not None:
            out += self._sampled_between(snap, at, owner)
        return out

    def _sampled_between(
        self, snap: Snapshot, at: datetime, owner: dict[str, Any]
    ) -> list[tuple[str, Snapshot]]:
        """Our snapshot with the recommendations the owner may have remembered.

        The owner samples once a period too, at its own phase: ``at - snap.now`` after (or
        before) each of ours. Its sample then lies between our two around it -- a
        recommendation moves in steps (a metric point, a pod's readiness) -- so while the
        inputs were moving its stabilization window may hold any value in that range where
        ours holds the ends. Each candidate is a value the owner's window may have peaked
        (or bottomed) at: every remembered recommendation pulled towards it within its
        range, then decided again at the owner's moment. With steady inputs the ranges are
        single values and this is our own memory, moved in time."""
        recs = sorted(snap.history.recommendations or (), key=lambda r: r.timestamp)
        if len(recs) < 2:
            return []
        lag = at - snap.now
        if abs(lag.total_seconds()) >= self.period:
            return []
        ranges: list[tuple[datetime, int, int]] = []
        for i, r in enumerate(recs):
            j = i + 1 if lag >= timedelta(0) else i - 1
            other = recs[j].replicas if 0 <= j < len(recs) else r.replicas
            ranges.append((r.timestamp + lag, min(r.replicas, other), max(r.replicas, other)))
        if all(lo == hi for _, lo, hi in ranges):
            return []
        wanted = owner.get("desiredReplicas")
        candidates = {lo for _, lo, _ in ranges} | {hi for _, _, hi in ranges}
        if isinstance(wanted, int):
            candidates.add(wanted)
        out = []
        for v in sorted(candidates):
            pulled = tuple(Recommendation(min(hi, max(lo, v)), t) for t, lo, hi in ranges)
            history = replace(snap.history, recommendations=pulled)
            out.append(
                (
                    f"owner sampling {lag.total_seconds():+.2f}s from ours, towards {v}",
                    replace(snap, now=at, history=history),
                )
            )
        return out

    def _agrees(
        self,
        ours: tuple[datetime, dict[str, Any], Snapshot | None],
        owner: dict[str, Any],
        at: datetime,
        later: Snapshot | None = None,
    ) -> bool:
        """Our decision equals the owner's, or would have as the owner saw our snapshot
        (``_moments``), decided again by the same pure engine."""
        _, status, snap = ours
        if not differences(status, owner):
            return True
        if snap is None:
            return False
        return any(not differences(decide(s).status, owner) for _, s in self._moments(snap, at, later, owner))

    def _redecided(
        self,
        ours: tuple[datetime, dict[str, Any], Snapshot | None],
        owner: dict[str, Any],
        at: datetime,
        later: Snapshot | None = None,
    ) -> list[str]:
        """What still differed at each moment ``_agrees`` tried (for the warning: enough to
        tell a timing difference from a decision difference without the live process)."""
        snap = ours[2]
        if snap is None:
            return []
        return [
            f"{m}: {differences(decide(s).status, owner)}" for m, s in self._moments(snap, at, later, owner)
        ]

    def compare(
        self,
        key: Key,
        status: dict[str, Any],
        owner_status: dict[str, Any],
        now: datetime,
        snapshot: Snapshot | None = None,
    ) -> Comparison:
        """Our would-be ``status`` (decided ``now``) against the owner's decisions since our
        previous reconcile, paired as the module docstring says."""
        writes = self._writes.pop(key, [])
        before = self._decisions.get(key)
        mine = (now, status, snapshot)
        self._decisions[key] = mine
        previous = self.comparisons.get(key)
        real: list[str] | None = None
        agreed = False
        for at, owner in writes:
            around = [mine] + ([before] if before else [])
            same = [d for d in around if inputs(d[1]) == inputs(owner)]
            if not same:
                self.paired["not_comparable"] += 1
                continue
            if any(self._agrees(d, owner, at, snapshot) for d in same):
                self.paired["agree"] += 1
                agreed = True
                continue
            self.paired["differ"] += 1
            closest = min(same, key=lambda d: abs((d[0] - at).total_seconds()))
            real = differences(closest[1], owner)
            log.warning(
                "shadow decision differs from the owner's",
                hpa=f"{key[0]}/{key[1]}",
                owner_at=at.isoformat(),
                ours_at=closest[0].isoformat(),
                differences=real,
                inputs=str(inputs(owner)),
                redecided=self._redecided(closest, owner, at, snapshot),
                **seen_inputs(closest[2]),
            )
        quiet = 0 if writes else (previous.quiet + 1 if previous else 1)
        shown = differences(status, owner_status) if owner_status.get("conditions") else []
        steady = 0
        if (
            not writes
            and quiet >= 2
            and owner_status.get("conditions")
            and inputs(status) == inputs(owner_status)
        ):
            # its status is its decision of up to a sync period ago: the same time tolerance
            if shown and not self._agrees(mine, owner_status, now):
                steady = (previous.steady_sights if previous else 0) + 1
                if steady >= STEADY_SIGHTS:
                    real = shown
            else:
                agreed = True
        ongoing = previous is not None and previous.persistent
        if real is not None:
            persistent, since = True, previous.differing_since if ongoing and previous else now
            if not ongoing:
                self.differences_total += 1
            shown = real
        elif agreed:
            persistent, since = False, None
        else:  # nothing conclusive since the last reconcile: the state stands
            persistent = ongoing
            since = previous.differing_since if ongoing and previous else None
        c = Comparison(key[0], key[1], now, status, owner_status, shown, since, persistent, quiet, steady)
        self.comparisons[key] = c
        return c
