"""The per-namespace limits on MetricRule queries as they are sent (the rate's clock is an
argument; the live tests against a real Prometheus are in test_team_limits_live.py)."""

from __future__ import annotations

import asyncio

import pytest

from adapter.metricrules.query_cost import CostLimits
from adapter.metricrules.team_gate import TeamGate
from adapter.metricrules.team_gate import TeamLimitError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def send(gate: TeamGate, namespace: str) -> None:
    async with gate.slot(namespace):
        pass


def test_a_namespace_past_its_burst_is_told_when_to_retry() -> None:
    clock = Clock()
    gate = TeamGate(CostLimits(queries_per_second=2, burst=3), clock)
    for _ in range(3):
        asyncio.run(send(gate, "a"))
    with pytest.raises(TeamLimitError) as e:
        asyncio.run(send(gate, "a"))
    assert (e.value.code, e.value.reason) == (429, "TooManyRequests")
    assert e.value.retry_after == pytest.approx(0.5)
    assert "--team-rule-queries-per-second" in str(e.value)


def test_tokens_come_back_at_the_rate() -> None:
    clock = Clock()
    gate = TeamGate(CostLimits(queries_per_second=2, burst=1), clock)
    asyncio.run(send(gate, "a"))
    clock.now = 0.5
    asyncio.run(send(gate, "a"))


def test_one_namespaces_rate_is_not_anothers() -> None:
    gate = TeamGate(CostLimits(queries_per_second=1, burst=1), Clock())
    asyncio.run(send(gate, "a"))
    asyncio.run(send(gate, "b"))


def test_no_more_than_the_limit_run_at_once_in_a_namespace() -> None:
    gate = TeamGate(CostLimits(max_concurrent=2, queries_per_second=0))
    running = most = 0

    async def one(namespace: str) -> None:
        nonlocal running, most
        async with gate.slot(namespace):
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1

    async def main() -> None:
        await asyncio.gather(*(one("a") for _ in range(6)))

    asyncio.run(main())
    assert most == 2


def test_an_answer_over_the_series_limit_is_refused_not_truncated() -> None:
    gate = TeamGate(CostLimits(max_series=10))
    gate.check_series("MetricRule a/r", 10)
    with pytest.raises(TeamLimitError, match=r"11 series.*--team-rule-max-series") as e:
        gate.check_series("MetricRule a/r", 11)
    assert e.value.code == 422
