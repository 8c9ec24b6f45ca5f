"""Stabilization, rate policies and scale-event history, at their edges."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

from controller.engine.behavior import normalize_legacy
from controller.engine.behavior import normalize_with_behavior
from controller.engine.behavior import replicas_changed_in_period
from controller.engine.behavior import scale_down_limit
from controller.engine.behavior import scale_up_limit
from controller.engine.behavior import store_scale_event
from controller.engine.model import Recommendation
from controller.engine.model import ScaleEvent
from controller.engine.model import ScalingPolicy
from controller.engine.model import ScalingRules

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def ago(seconds: int) -> datetime:
    return NOW - timedelta(seconds=seconds)


def rules(*policies: tuple[str, int, int], select: str = "Max", window: int | None = 0) -> ScalingRules:
    return ScalingRules(window, select, tuple(ScalingPolicy(*p) for p in policies), None)


def test_percent_scale_up_rounds_up() -> None:
    assert scale_up_limit(10, (), (), rules(("Percent", 15, 60)), NOW) == 12  # ceil(11.5)


def test_percent_scale_down_rounds_down() -> None:
    assert scale_down_limit(10, (), (), rules(("Percent", 15, 60)), NOW) == 8  # int(8.5)


def test_percent_scale_up_follows_float64_rounding() -> None:
    # 100 * 1.1 is 110.00000000000001 in float64, so upstream allows 111, not 110
    assert scale_up_limit(100, (), (), rules(("Percent", 10, 60)), NOW) == 111


def test_event_exactly_at_period_start_is_not_counted() -> None:
    events = (ScaleEvent(5, ago(60)), ScaleEvent(2, ago(59)))
    assert replicas_changed_in_period(60, events, NOW) == 2


def test_period_start_undoes_recent_changes() -> None:
    ups = (ScaleEvent(4, ago(30)),)
    downs = (ScaleEvent(1, ago(10)),)
    # 10 now, +4 and -1 within the period: it started at 7, so Pods 4 allows 11
    assert scale_up_limit(10, ups, downs, rules(("Pods", 4, 60)), NOW) == 11


def test_select_min_picks_the_smallest_change() -> None:
    r = rules(("Pods", 2, 60), ("Percent", 50, 60), select="Min")
    assert scale_up_limit(10, (), (), r, NOW) == 12
    assert scale_down_limit(10, (), (), r, NOW) == 8


def test_select_disabled_allows_no_change() -> None:
    r = rules(("Pods", 2, 60), select="Disabled")
    assert scale_up_limit(10, (), (), r, NOW) == 10
    assert scale_down_limit(10, (), (), r, NOW) == 10


def test_legacy_window_keeps_a_recommendation_exactly_at_the_cutoff() -> None:
    recs = (Recommendation(8, ago(300)),)
    n = normalize_legacy(10, 4, 1, 20, recs, NOW, timedelta(minutes=5), 2.0, 4.0)
    assert (n.replicas, n.able_reason) == (8, "ScaleDownStabilized")


def test_legacy_window_drops_and_reuses_an_older_recommendation() -> None:
    recs = (Recommendation(8, ago(301)), Recommendation(5, ago(60)))
    n = normalize_legacy(10, 4, 1, 20, recs, NOW, timedelta(minutes=5), 2.0, 4.0)
    assert n.replicas == 5
    assert n.recommendations == (Recommendation(4, NOW), Recommendation(5, ago(60)))


def test_legacy_scale_up_limit_is_factor_times_current_or_minimum() -> None:
    n = normalize_legacy(3, 50, 1, 100, (), NOW, timedelta(minutes=5), 2.0, 4.0)
    assert (n.replicas, n.limit_reason) == (6, "ScaleUpLimit")
    n = normalize_legacy(1, 50, 1, 100, (), NOW, timedelta(minutes=5), 2.0, 4.0)
    assert n.replicas == 4


def test_legacy_clamps_to_min_with_too_few_replicas() -> None:
    n = normalize_legacy(5, 1, 3, 10, (), NOW, timedelta(minutes=5), 2.0, 4.0)
    assert (n.replicas, n.limited, n.limit_reason) == (3, True, "TooFewReplicas")


def test_behavior_window_excludes_a_recommendation_exactly_at_the_cutoff() -> None:
    up, down = rules(("Pods", 100, 15)), rules(("Percent", 100, 15), window=300)
    n = normalize_with_behavior(
        10, 4, 1, 20, up, down, timedelta(minutes=5), (Recommendation(9, ago(300)),), (), (), NOW
    )
    assert n.replicas == 4


def test_behavior_scale_up_window_takes_the_lowest_recent_recommendation() -> None:
    up, down = rules(("Pods", 100, 15), window=120), rules(("Percent", 100, 15), window=0)
    n = normalize_with_behavior(
        2, 9, 1, 20, up, down, timedelta(minutes=5), (Recommendation(5, ago(60)),), (), (), NOW
    )
    assert (n.replicas, n.able_reason) == (5, "ScaleUpStabilized")


def test_behavior_default_downscale_window_comes_from_the_controller_setting() -> None:
    up, down = rules(("Pods", 100, 15)), rules(("Percent", 100, 15), window=None)
    n = normalize_with_behavior(
        10, 4, 1, 20, up, down, timedelta(minutes=2), (Recommendation(9, ago(100)),), (), (), NOW
    )
    assert n.replicas == 9
    n = normalize_with_behavior(
        10, 4, 1, 20, up, down, timedelta(minutes=1), (Recommendation(9, ago(100)),), (), (), NOW
    )
    assert n.replicas == 4


def test_behavior_rate_limit_below_max_is_scale_up_limit() -> None:
    up, down = rules(("Pods", 4, 60)), rules(("Percent", 100, 15))
    n = normalize_with_behavior(10, 30, 1, 20, up, down, timedelta(minutes=5), (), (), (), NOW)
    assert (n.replicas, n.limit_reason) == (14, "ScaleUpLimit")


def test_stored_event_reuses_the_slot_of_an_outdated_one() -> None:
    r = rules(("Pods", 4, 60))
    events = (ScaleEvent(3, ago(120)), ScaleEvent(2, ago(30)))
    out = store_scale_event(events, r, 5, NOW)
    assert out == (ScaleEvent(5, NOW), ScaleEvent(2, ago(30)))


def test_stored_event_appends_when_none_is_outdated() -> None:
    r = rules(("Pods", 4, 60))
    out = store_scale_event((ScaleEvent(2, ago(30)),), r, 1, NOW)
    assert out == (ScaleEvent(2, ago(30)), ScaleEvent(1, NOW))
