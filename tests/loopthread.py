"""An event loop on a thread of its own, for tests written as plain functions that drive
loop-bound objects (an informer runs as a task on the loop that started it).

Everything that touches such an object goes through ``call`` or ``run``, so it happens on
the loop's thread, as in the processes: a test never reads a cache while a watch event is
being applied to it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from collections.abc import Coroutine
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from typing import TypeVar

T = TypeVar("T")


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        """``coro``'s result, run on the loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the loop's thread (a running loop, as an informer's start needs)."""

        async def called() -> T:
            return fn(*args)

        return self.run(called())

    def close(self) -> None:
        self.run(asyncio.sleep(0.05))  # what closing scheduled (a socket's close) runs first
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@contextmanager
def loop_thread() -> Iterator[LoopThread]:
    thread = LoopThread()
    try:
        yield thread
    finally:
        thread.close()
