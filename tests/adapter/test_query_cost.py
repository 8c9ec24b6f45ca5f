"""The cost limits checked on a team's query before it is served (pure)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from adapter.metricrules.isolation import confine_query
from adapter.metricrules.query_cost import CostLimits
from adapter.metricrules.query_cost import over_cost

LIMITS = CostLimits()
NOW = 1_800_000_000.0


def problem(query: str, now: float = NOW, limits: CostLimits = LIMITS) -> str | None:
    return over_cost(confine_query(query, "team-a").reach, limits, now)


def test_an_ordinary_query_is_within_every_limit() -> None:
    assert problem("sum(rate(http_requests_total[5m]))") is None
    assert problem("max_over_time(sum(rate(x[1m]))[30m:1m] offset 1h)") is None


@pytest.mark.parametrize(
    ("query", "flag"),
    [
        ("rate(x[2h])", "--team-rule-max-range"),
        ("max_over_time(x[1d:1m])", "--team-rule-max-range"),
        ("max_over_time(x[10m:1s])", "--team-rule-min-subquery-step"),
        ("x offset 7h", "--team-rule-max-lookback"),
        ("rate(x[1h] offset 5h30m)", "--team-rule-max-lookback"),
        ("max_over_time((rate(x[1h] offset 3h))[1h:1m] offset 2h)", "--team-rule-max-lookback"),
        (f"x @ {NOW - 7 * 3600:.0f}", "--team-rule-max-lookback"),
    ],
)
def test_a_query_over_a_cost_limit_names_the_flag(query: str, flag: str) -> None:
    got = problem(query)
    assert got is not None
    assert flag in got, got


def test_an_at_pin_is_measured_from_now() -> None:
    pinned = f"x @ {NOW - 3600:.0f}"
    assert problem(pinned) is None
    assert problem(pinned, now=NOW + 6 * 3600) is not None


def test_at_end_and_a_forward_offset_reach_no_further_back() -> None:
    assert problem("x @ end()") is None
    assert problem("x offset -1d") is None


def test_the_limits_are_the_ones_given() -> None:
    assert problem("rate(x[2h])", limits=CostLimits(max_range=timedelta(hours=3))) is None
