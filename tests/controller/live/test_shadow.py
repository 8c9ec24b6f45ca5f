"""Shadow mode's memory and comparison (plain data, no I/O)."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.model import Behavior
from controller.engine.model import History
from controller.engine.model import ScaleEvent
from controller.engine.model import ScalingPolicy
from controller.engine.model import ScalingRules
from controller.live.shadow import Shadow
from controller.live.shadow_diff import differences
from controller.live.write_policy import dry_run_event
from localcluster.manifests import hpa_manifest
from localcluster.manifests import object_metric
from shared.durations import format_time

T0 = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
KEY = ("ns", "web")
RULES = ScalingRules(0, "Max", (ScalingPolicy("Pods", 1, 60),), None)
BEHAVIOR = Behavior(RULES, RULES)


def hpa(current: int, desired: int, last_scale: str | None, conditions: Any = None) -> dict[str, Any]:
    status: dict[str, Any] = {"currentReplicas": current, "desiredReplicas": desired}
    if last_scale is not None:
        status["lastScaleTime"] = last_scale
    if conditions is not None:
        status["conditions"] = conditions
    return {"metadata": {"namespace": "ns", "name": "web"}, "status": status}


def status(desired: int, *conds: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "desiredReplicas": desired,
        "conditions": [{"type": t, "status": s, "reason": r, "message": "m"} for t, s, r in conds],
    }


def test_owner_rescale_seen_in_a_watch_is_a_scale_event_dated_when_seen() -> None:
    sh = Shadow()
    sh.observe_hpa("ADDED", hpa(2, 2, None), T0)
    seen = T0 + timedelta(seconds=30, milliseconds=20)
    sh.observe_hpa("MODIFIED", hpa(2, 3, "2026-11-23T12:00:30Z"), seen)
    h = sh.follow_owner(KEY, History(), BEHAVIOR)
    assert h.scale_up_events == (ScaleEvent(1, seen),)
    assert h.scale_down_events == ()


def test_owner_rescale_in_the_first_list_is_dated_by_last_scale_time() -> None:
    sh = Shadow()
    sh.observe_hpa("ADDED", hpa(5, 3, "2026-11-23T11:59:00Z"), T0)
    h = sh.follow_owner(KEY, History(), BEHAVIOR)
    assert h.scale_down_events == (ScaleEvent(2, T0 - timedelta(minutes=1)),)


def test_a_later_status_write_of_the_same_rescale_is_not_counted_again() -> None:
    sh = Shadow()
    sh.observe_hpa("ADDED", hpa(2, 2, None), T0)
    sh.observe_hpa("MODIFIED", hpa(2, 4, "2026-11-23T12:00:10Z"), T0 + timedelta(seconds=10))
    sh.observe_hpa("MODIFIED", hpa(4, 4, "2026-11-23T12:00:10Z"), T0 + timedelta(seconds=25))
    h = sh.follow_owner(KEY, History(), BEHAVIOR)
    assert [e.replica_change for e in h.scale_up_events] == [2]
    assert sh.follow_owner(KEY, h, BEHAVIOR) == h  # handed over once


def test_without_a_behavior_no_scale_event_is_kept_as_upstream() -> None:
    sh = Shadow()
    sh.observe_hpa("ADDED", hpa(2, 2, None), T0)
    sh.observe_hpa("MODIFIED", hpa(2, 3, "2026-11-23T12:00:30Z"), T0 + timedelta(seconds=30))
    assert sh.follow_owner(KEY, History(), None) == History()


def test_owner_events_reuse_an_outdated_slot_as_upstream_stores_its_own() -> None:
    sh = Shadow()
    old = History(scale_up_events=(ScaleEvent(1, T0 - timedelta(minutes=5)),))
    sh.observe_hpa("ADDED", hpa(3, 3, "2026-11-23T11:55:00Z"), T0)
    sh.observe_hpa("MODIFIED", hpa(3, 4, "2026-11-23T12:00:00Z"), T0)
    assert sh.follow_owner(KEY, old, BEHAVIOR).scale_up_events == (ScaleEvent(1, T0),)


def test_differences_name_desired_replicas_and_condition_reasons() -> None:
    ours = status(4, ("AbleToScale", "True", "ReadyForNewScale"), ("ScalingLimited", "True", "ScaleUpLimit"))
    owner = status(
        3, ("AbleToScale", "True", "ReadyForNewScale"), ("ScalingLimited", "False", "DesiredWithinRange")
    )
    assert differences(ours, owner) == [
        "desiredReplicas: promhpa 4, owner 3",
        "ScalingLimited: promhpa True/ScaleUpLimit, owner False/DesiredWithinRange",
    ]
    assert differences(ours, ours) == []


def owner_writes(sh: Shadow, st: dict[str, Any], at: datetime) -> None:
    sh.observe_hpa("MODIFIED", {"metadata": {"namespace": "ns", "name": "web"}, "status": st}, at)


def decided(current: int, desired: int, load: str = "30", reason: str = "ReadyForNewScale") -> dict[str, Any]:
    """A status as a decision writes it: what it started from, what it decided."""
    return {
        "currentReplicas": current,
        "desiredReplicas": desired,
        "currentMetrics": [
            {"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {"averageValue": load}}}
        ],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": reason, "message": "m"}],
    }


def up(current: int, desired: int, load: str = "30") -> dict[str, Any]:
    return decided(current, desired, load, "SucceededRescale")


def test_during_a_ramp_the_owners_decision_pairs_with_ours_from_the_same_inputs() -> None:
    sh = Shadow()
    ramp = (1, 2, 4, 6)
    sh.compare(KEY, up(1, 2), {}, T0)
    for i in range(1, len(ramp)):  # the owner acts 200 ms after each of our reconciles
        owner_writes(sh, up(ramp[i - 1], ramp[i]), T0 + timedelta(seconds=2 * i - 2, milliseconds=200))
        ours = up(ramp[i], ramp[i + 1]) if i + 1 < len(ramp) else decided(6, 6)
        c = sh.compare(KEY, ours, up(ramp[i - 1], ramp[i]), T0 + timedelta(seconds=2 * i))
        assert c.persistent is False, c.differences
    assert sh.paired == {"agree": 3, "differ": 0, "not_comparable": 0}
    assert sh.differences_total == 0


def test_an_owner_decision_from_inputs_neither_of_ours_saw_is_not_comparable() -> None:
    sh = Shadow()
    sh.compare(KEY, decided(2, 2, load="10"), decided(2, 2, load="10"), T0)
    owner_writes(sh, up(2, 4, load="95"), T0 + timedelta(seconds=1))  # the load jumped between
    c = sh.compare(KEY, up(4, 5, load="95"), up(2, 4, load="95"), T0 + timedelta(seconds=2))
    assert (c.persistent, sh.paired["not_comparable"]) == (False, 1)


def test_an_owner_decision_from_our_inputs_that_equals_none_of_ours_is_a_difference_until_they_agree() -> (
    None
):
    sh = Shadow()
    sh.compare(KEY, up(4, 5), decided(4, 4), T0)
    owner_writes(sh, up(4, 6), T0 + timedelta(milliseconds=500))  # e.g. a rate limit counted apart
    first = sh.compare(KEY, decided(6, 6), up(4, 6), T0 + timedelta(seconds=2))
    assert first.persistent
    assert first.differing_since == T0 + timedelta(seconds=2)
    assert first.differences == ["desiredReplicas: promhpa 5, owner 6"]
    owner_writes(sh, decided(6, 6, load="31"), T0 + timedelta(seconds=3))  # not comparable: stands
    second = sh.compare(KEY, decided(6, 6), decided(6, 6, load="31"), T0 + timedelta(seconds=4))
    assert (second.persistent, second.differing_since) == (True, first.differing_since)
    assert sh.differences_total == 1  # one episode
    owner_writes(sh, decided(6, 6), T0 + timedelta(seconds=5))
    healed = sh.compare(KEY, decided(6, 6), decided(6, 6), T0 + timedelta(seconds=6))
    assert (healed.persistent, healed.differing_since) == (False, None)


def test_a_quiet_owner_is_compared_directly_and_differs_at_the_second_quiet_sight() -> None:
    sh = Shadow()
    persistent = [
        sh.compare(KEY, up(3, 4), decided(3, 3), T0 + timedelta(seconds=2 * i)).persistent for i in range(4)
    ]
    assert persistent == [False, False, True, True]  # quiet from the first reconcile on
    assert sh.differences_total == 1


def test_a_quiet_owner_whose_inputs_differ_from_ours_is_not_judged() -> None:
    sh = Shadow()
    for i in range(4):
        c = sh.compare(KEY, up(3, 4, load="40"), decided(3, 3, load="30"), T0 + timedelta(seconds=2 * i))
        assert c.persistent is False


def test_no_owner_status_is_not_a_difference() -> None:
    sh = Shadow()
    c = sh.compare(KEY, status(3, ("AbleToScale", "True", "SucceededRescale")), {}, T0)
    assert (c.differences, c.persistent) == ([], False)


def test_dry_run_events_say_so_and_never_claim_a_rescale() -> None:
    reason, message = dry_run_event(
        "SuccessfulRescale", "New size: 4; reason: pods metric requests above target"
    )
    assert reason == "DryRunWouldRescale"
    assert (
        message
        == "would rescale (dry run, nothing written): New size: 4; reason: pods metric requests above target"
    )
    assert dry_run_event("FailedGetPodsMetric", "unable to get") == (
        "DryRunFailedGetPodsMetric",
        "unable to get",
    )


def test_a_rescale_seen_after_the_snapshot_clock_waits_for_the_next_reconcile() -> None:
    sh = Shadow()
    sh.observe_hpa("ADDED", hpa(3, 3, None), T0)
    sh.observe_hpa(
        "MODIFIED", hpa(3, 4, "2026-11-23T12:00:13Z"), T0 + timedelta(seconds=13, milliseconds=150)
    )
    snapshot_clock = T0 + timedelta(seconds=13, milliseconds=75)  # the scale was read before it
    assert sh.follow_owner(KEY, History(), BEHAVIOR, snapshot_clock) == History()
    later = sh.follow_owner(KEY, History(), BEHAVIOR, T0 + timedelta(seconds=15))
    assert [e.replica_change for e in later.scale_up_events] == [1]


def object_snapshot(
    ready: int,
    replicas: int = 5,
    at: datetime = T0,
    listed: int | None = None,
    remembered: tuple[tuple[datetime, int], ...] = (),
) -> Any:
    """An Object (Value 100) HPA at 150 on ``replicas`` pods of which ``ready`` are ready
    (``listed``: how many of them the pod list holds yet, default all; ``remembered``: the
    recommendations of earlier reconciles, under a 10 s downscale window)."""
    when = T0 - timedelta(minutes=10)

    def pod(i: int) -> dict[str, Any]:
        ok = i < ready
        started = when if ok else T0 - timedelta(seconds=1)
        return {
            "metadata": {"name": f"web-{i}", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c"}]},
            "status": {
                "phase": "Running",
                "startTime": format_time(started),
                "conditions": [
                    {"type": "Ready", "status": str(ok), "lastTransitionTime": format_time(started)}
                ],
            },
        }

    service = {"apiVersion": "v1", "kind": "Service", "name": "frontend"}
    return parse_snapshot(
        {
            "now": f"{at:%Y-%m-%dT%H:%M:%S.%fZ}",
            "hpa": {
                **hpa_manifest(
                    "ns", "web", object_metric("rps", "Service", "frontend", "100"), max_replicas=6
                ),
                "status": {"currentReplicas": replicas, "desiredReplicas": replicas},
            },
            "scale": {
                "spec": {"replicas": replicas},
                "status": {"replicas": replicas, "selector": "app=web"},
            },
            "pods": [pod(i) for i in range(replicas if listed is None else listed)],
            "customMetrics": [
                {
                    "describedObject": service,
                    "metric": {"name": "rps"},
                    "timestamp": format_time(at),
                    "value": "150",
                }
            ],
            "history": {
                "recommendations": [
                    {"timestamp": f"{t:%Y-%m-%dT%H:%M:%S.%fZ}", "replicas": n} for t, n in remembered
                ],
                "scaleUpEvents": [],
                "scaleDownEvents": [],
            },
            "controller": {"downscaleStabilizationWindow": "10s"},
        }
    )


def test_the_owner_seeing_new_pods_ready_before_we_did_is_not_a_difference() -> None:
    # we saw 3 of 5 pods ready (ceil(1.5 x 3) = 5: hold); the owner, listing pods a moment
    # later, saw all 5 (ceil(1.5 x 5) = 8, capped at 6) -- the same engine on its pods
    ours = object_snapshot(ready=3)
    owner = decide(object_snapshot(ready=5)).status
    assert decide(ours).status["desiredReplicas"] == 5
    assert owner["desiredReplicas"] == 6
    sh = Shadow(period=2)
    sh.compare(KEY, decide(ours).status, {}, T0, ours)
    owner_writes(sh, owner, T0 + timedelta(seconds=1))
    later = object_snapshot(ready=5, replicas=5, at=T0 + timedelta(seconds=2))
    sh.compare(KEY, decide(later).status, owner, T0 + timedelta(seconds=2), later)
    assert sh.paired == {"agree": 1, "differ": 0, "not_comparable": 0}


def test_an_owner_decision_no_readiness_of_ours_explains_is_still_a_difference() -> None:
    ours = object_snapshot(ready=3)
    owner = decide(object_snapshot(ready=5)).status
    sh = Shadow(period=2)
    sh.compare(KEY, decide(ours).status, {}, T0, ours)
    owner_writes(sh, owner, T0 + timedelta(seconds=1))
    later = object_snapshot(ready=3, replicas=5, at=T0 + timedelta(seconds=2))  # still 3 ready
    sh.compare(KEY, decide(later).status, owner, T0 + timedelta(seconds=2), later)
    assert sh.paired["differ"] == 1


def test_the_owner_counting_a_pod_our_earlier_list_had_not_is_not_a_difference() -> None:
    # the owner scaled to 2; we read scale 2 while the ReplicaSet had created one pod
    # (ceil(1.5 x 1) = 2: hold); the owner, listing a moment later, counted both (3)
    ours = object_snapshot(ready=1, replicas=2, listed=1)
    owner = decide(object_snapshot(ready=2, replicas=2)).status
    assert decide(ours).status["desiredReplicas"] == 2
    assert owner["desiredReplicas"] == 3
    sh = Shadow(period=2)
    sh.compare(KEY, decide(ours).status, {}, T0, ours)
    owner_writes(sh, owner, T0 + timedelta(seconds=1))
    later = object_snapshot(ready=2, replicas=3, listed=2, at=T0 + timedelta(seconds=2))
    sh.compare(KEY, decide(later).status, owner, T0 + timedelta(seconds=2), later)
    assert sh.paired == {"agree": 1, "differ": 0, "not_comparable": 0}


def at_s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_an_owner_that_sampled_a_falling_load_between_our_samples_is_not_a_difference() -> None:
    # the ready pods fell from 6 to 0 while both sampled every 2 s, the owner 190 ms after
    # us: its window holds 2 (sampled between our 5 and 0) where ours holds 5
    ours_seen = ((at_s(1.125), 8), (at_s(3.14), 5), (at_s(5.18), 0), (at_s(7.19), 0), (at_s(9.2), 0))
    owner_seen = ((at_s(1.315), 6), (at_s(3.33), 2), (at_s(5.37), 0), (at_s(7.38), 0), (at_s(9.39), 0))
    ours = object_snapshot(ready=0, replicas=6, at=at_s(11.213), remembered=ours_seen)
    owner = decide(object_snapshot(ready=0, replicas=6, at=at_s(11.4), remembered=owner_seen)).status
    assert (decide(ours).status["desiredReplicas"], owner["desiredReplicas"]) == (5, 2)
    sh = Shadow(period=2)
    sh.compare(KEY, decide(ours).status, {}, at_s(11.213), ours)
    owner_writes(sh, owner, at_s(11.4))
    later = object_snapshot(ready=0, replicas=2, at=at_s(13.22), remembered=ours_seen)
    sh.compare(KEY, decide(later).status, owner, at_s(13.22), later)
    assert sh.paired == {"agree": 1, "differ": 0, "not_comparable": 0}


def test_an_owner_window_outside_what_our_steady_samples_allow_is_still_a_difference() -> None:
    # our samples held 5 throughout: any sample of the owner's between them is 5 as well
    ours_seen = tuple((at_s(1.125 + 2 * i), 5) for i in range(5))
    owner_seen = ((at_s(1.315), 6), (at_s(3.33), 2), (at_s(5.37), 0), (at_s(7.38), 0), (at_s(9.39), 0))
    ours = object_snapshot(ready=0, replicas=6, at=at_s(11.213), remembered=ours_seen)
    owner = decide(object_snapshot(ready=0, replicas=6, at=at_s(11.4), remembered=owner_seen)).status
    sh = Shadow(period=2)
    sh.compare(KEY, decide(ours).status, {}, at_s(11.213), ours)
    owner_writes(sh, owner, at_s(11.4))
    later = object_snapshot(ready=0, replicas=2, at=at_s(13.22), remembered=ours_seen)
    sh.compare(KEY, decide(later).status, owner, at_s(13.22), later)
    assert sh.paired["differ"] == 1
