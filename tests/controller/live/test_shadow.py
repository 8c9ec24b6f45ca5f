"""Shadow mode's memory and comparison (plain data, no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controller.engine.model import Behavior, History, ScaleEvent, ScalingPolicy, ScalingRules
from controller.live.reconciler import dry_run_event
from controller.live.shadow import Shadow, differences

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


def test_a_difference_is_real_only_at_its_third_sight_and_counted_once() -> None:
    sh = Shadow()
    agree = status(2, ("AbleToScale", "True", "ReadyForNewScale"))
    ahead = status(3, ("AbleToScale", "True", "SucceededRescale"))
    first = sh.compare(KEY, ahead, agree, T0)
    assert (first.persistent, first.differing_since) == (False, T0)
    second = sh.compare(KEY, ahead, agree, T0 + timedelta(seconds=15))
    third = sh.compare(KEY, ahead, agree, T0 + timedelta(seconds=30))
    fourth = sh.compare(KEY, ahead, agree, T0 + timedelta(seconds=45))
    assert (second.persistent, third.persistent, third.differing_since, fourth.persistent) == (
        False,
        True,
        T0,
        True,
    )
    assert sh.differences_total == 1
    healed = sh.compare(KEY, agree, agree, T0 + timedelta(seconds=60))
    assert (healed.persistent, healed.differing_since, healed.differences) == (False, None, [])


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
