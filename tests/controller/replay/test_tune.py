"""``replay --tune`` and ``--check`` on plain data: the search, its bound, its determinism."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

from controller.engine.model import Settings
from controller.replay.report import summarize
from controller.replay.tune import Knobs
from controller.replay.tune import apply
from controller.replay.tune import check
from controller.replay.tune import minutes_above
from controller.replay.tune import spec_diff
from controller.replay.tune import tune
from controller.replay.variants import replay

from .test_simulate import SYNC
from .test_simulate import curve
from .test_simulate import hpa

LOAD = curve((20, 10), (65, 20), (30, 15), (8, 30), (40, 10), (8, 30))


def run(h: dict[str, Any]) -> list[Any]:
    return replay(h, LOAD, Settings(), timedelta(seconds=6), {}, 1)


@functools.cache
def tuned(budget: int = 30, seed: int = 1, bound: float | None = None) -> Any:
    return tune(hpa(window=300), run, SYNC, budget=budget, seed=seed, max_minutes_above=bound,
                tolerance_field=True)  # fmt: skip


def test_the_recommended_spec_costs_fewer_pod_hours_within_todays_minutes_above_target() -> None:
    t = tuned()
    assert t.best.cost < t.current.cost
    assert t.best.above <= t.current.above == t.bound


def test_the_recommendation_replays_to_what_the_search_reported() -> None:
    t = tuned()
    out = run({**hpa(window=300), "spec": t.best.spec})
    assert summarize("x", out, SYNC, 8).pod_hours == t.best.cost


def test_the_search_is_deterministic_for_a_seed_and_budget() -> None:
    assert tuned(seed=7).best.knobs == tuned(seed=7).best.knobs


def test_the_budget_bounds_the_replays() -> None:
    assert tuned(budget=5).evaluated == 5


def test_a_tighter_bound_never_gives_more_minutes_above_target() -> None:
    loose, tight = tuned(bound=1000.0), tuned(bound=0.0)
    assert tight.best.above <= loose.best.above
    assert loose.best.cost <= tight.best.cost


def test_apply_scales_every_target_and_sets_one_policy_per_direction() -> None:
    spec = apply(hpa()["spec"], Knobs(target_factor=1.5, up_window=0, down_percent=25, tolerance=0.05), True)
    assert spec["metrics"][0]["pods"]["target"]["averageValue"] == "15"
    assert spec["behavior"]["scaleUp"] == {"stabilizationWindowSeconds": 0, "tolerance": "0.05"}
    assert spec["behavior"]["scaleDown"]["policies"] == [
        {"type": "Percent", "value": 25, "periodSeconds": 60}
    ]
    assert "policies" not in spec["behavior"]["scaleUp"]


def test_the_diff_names_the_changed_fields() -> None:
    before = hpa()["spec"]
    diff = spec_diff(before, apply(before, Knobs(target_factor=2.0), True))
    assert "-        averageValue: '10'" in diff
    assert "+        averageValue: '20'" in diff


def test_check_fails_a_change_that_costs_more_pod_hours_and_passes_one_that_costs_fewer() -> None:
    today, goal = run(hpa()), 10.0
    costly, cheaper = run(hpa(target="5")), run(hpa(target="20"))
    a = summarize("A", today, SYNC, 8)

    def verdict(b: list[Any], pct: float = 0, minutes: float = 1000) -> Any:
        above = minutes_above(today, goal, SYNC), minutes_above(b, goal, SYNC)
        return check(a, summarize("B", b, SYNC, 8), *above, pod_hours_pct=pct, minutes_above=minutes)

    assert verdict(costly).worse
    assert verdict(cheaper).worse == []
    assert verdict(costly, pct=1000).worse == []


def test_check_fails_a_change_with_more_minutes_above_todays_target() -> None:
    today, lax = run(hpa()), run(hpa(target="20"))
    v = check(summarize("A", today, SYNC, 8), summarize("B", lax, SYNC, 8), minutes_above(today, 10.0, SYNC),
              minutes_above(lax, 10.0, SYNC), pod_hours_pct=0, minutes_above=0)  # fmt: skip
    assert any("minutes above today's target" in w for w in v.worse)
