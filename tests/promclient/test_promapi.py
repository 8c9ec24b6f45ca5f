"""The Prometheus interface's pure helpers."""

from __future__ import annotations

import asyncio

import pytest

from promclient.promapi import PrometheusUnavailable
from promclient.promapi import gather_all


def test_gather_all_returns_every_result_in_order() -> None:
    async def value(v: int) -> int:
        await asyncio.sleep(0)
        return v

    assert asyncio.run(gather_all([value(1), value(2), value(3)])) == [1, 2, 3]


def test_gather_all_raises_a_failure_after_the_other_calls_ended() -> None:
    ended: list[str] = []

    async def failing() -> int:
        raise PrometheusUnavailable("down")

    async def slower() -> int:
        await asyncio.sleep(0.01)
        ended.append("slower")
        return 1

    with pytest.raises(PrometheusUnavailable):
        asyncio.run(gather_all([failing(), slower()]))
    assert ended == ["slower"]  # nothing left running unowned


def test_a_cancelled_gather_stays_cancelled_when_a_call_fails_meanwhile() -> None:
    """The discovery loop's stop: a failure landing with the cancellation must not replace it
    (3.11's fail-fast gather raises the failure, and the loop then retried forever)."""

    async def main() -> None:
        async def failing() -> int:
            await asyncio.sleep(0)
            outer.cancel()  # the stop arrives while this call is failing
            raise PrometheusUnavailable("down")

        async def slow() -> int:
            await asyncio.sleep(10)
            return 1

        outer = asyncio.create_task(gather_all([failing(), slow()]))
        with pytest.raises(asyncio.CancelledError):
            await outer

    asyncio.run(main())
