"""The work queue's guarantees (plain asyncio, no I/O)."""

from __future__ import annotations

import asyncio

from controller.live.runner import WorkQueue

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
