"""What both processes' lifecycles share: stopping on SIGTERM or SIGINT.

A handler of our own is what makes SIGTERM reach a container's process 1 at all: Linux
delivers no signal to a PID namespace's init for which it has installed no handler, so an
adapter that only parked on an event kept running until the kubelet's SIGKILL, cutting
every request in flight. Both processes install these first thing, so a signal during
start-up stops them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any


def stop_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def until_stopped(work: Coroutine[Any, Any, Any], stop: asyncio.Event) -> bool:
    """Run ``work`` unless ``stop`` is set first (then cancel it): True when it finished."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if task.done():
        task.result()  # its exception, if any
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False
