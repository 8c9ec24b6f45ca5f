"""WritePolicy: what an active, passive or shadow reconcile writes and keeps."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

from controller.engine.model import History
from controller.engine.model import Recommendation
from controller.engine.model import ScaleEvent
from controller.live.write_policy import ACTIVE
from controller.live.write_policy import PASSIVE
from controller.live.write_policy import SHADOW

T = datetime(2024, 1, 1, tzinfo=UTC)
OURS = History((Recommendation(5, T),), (ScaleEvent(2, T),), ())
OWNERS = History((Recommendation(3, T),), (), (ScaleEvent(-1, T),))


def test_only_the_active_policy_writes() -> None:
    assert [p.writes for p in (ACTIVE, PASSIVE, SHADOW)] == [True, False, False]


def test_an_active_reconcile_keeps_its_decisions_memory() -> None:
    assert ACTIVE.kept(OURS, OWNERS) is OURS


def test_a_reconcile_that_does_not_write_keeps_its_recommendations_and_the_owners_events() -> None:
    for policy in (PASSIVE, SHADOW):
        kept = policy.kept(OURS, OWNERS)
        assert kept.recommendations == OURS.recommendations
        assert (kept.scale_up_events, kept.scale_down_events) == ((), (ScaleEvent(-1, T),))


def test_only_a_reconcile_that_does_not_write_marks_its_events() -> None:
    assert ACTIVE.event("SuccessfulRescale", "New size: 4") == ("SuccessfulRescale", "New size: 4")
    assert PASSIVE.event("SuccessfulRescale", "New size: 4")[0] == "DryRunWouldRescale"
