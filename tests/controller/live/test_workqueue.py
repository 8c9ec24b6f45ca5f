"""The work queue's guarantees (plain asyncio, no I/O)."""

from __future__ import annotations

import asyncio

from controller.live.workqueue import WorkQueue

A = ("ns", "a")


def test_a_key_is_queued_once() -> None:
    async def go() -> int:
        q = WorkQueue()
        q.add(A)
        q.add(A)
        return len(q)

    assert asyncio.run(go()) == 1


def test_a_key_being_processed_is_not_handed_out_again_until_done() -> None:
    async def go() -> tuple[int, int]:
        q = WorkQueue()
        q.add(A)
        key = await q.get()
        q.add(A)  # changed while a worker holds it
        during = len(q)
        q.done(key)
        return during, len(q)

    assert asyncio.run(go()) == (0, 1)


def test_only_one_timer_per_key() -> None:
    async def go() -> int:
        q = WorkQueue()
        for _ in range(5):
            q.add_after(A, 0.01)
        await asyncio.sleep(0.05)
        return len(q)

    assert asyncio.run(go()) == 1


def test_rate_limited_add_keeps_an_earlier_timer() -> None:
    async def go() -> tuple[int, int]:
        q = WorkQueue()
        q.add_after(A, 0.02)
        q.add_rate_limited(A, 10)  # a status write seen: the periodic sync stays as it was
        await asyncio.sleep(0.05)
        first = len(q)
        await q.get()
        q.done(A)
        q.add_rate_limited(A, 0.02)  # nothing pending: it waits the interval, not zero
        now = len(q)
        await asyncio.sleep(0.05)
        return first, now + len(q)

    assert asyncio.run(go()) == (1, 1)


def test_rate_limited_add_of_a_queued_key_changes_nothing() -> None:
    async def go() -> int:
        q = WorkQueue()
        q.add(A)
        q.add_rate_limited(A, 0.01)
        await asyncio.sleep(0.03)
        return len(q)

    assert asyncio.run(go()) == 1


def test_the_wait_from_due_to_taken_is_reported_once_per_take() -> None:
    waits: list[float] = []

    async def go() -> None:
        q = WorkQueue(on_wait=waits.append)
        q.add(A)
        q.add(A)  # already queued: still one wait, from the first add
        await asyncio.sleep(0.05)
        q.done(await q.get())

    asyncio.run(go())
    assert len(waits) == 1
    assert 0.04 <= waits[0] < 1.0
