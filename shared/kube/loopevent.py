"""A ``threading.Event`` an event loop can await without holding a thread.

An informer's first list arrives on its own thread, while a request on the serving loop
waits for it; ``asyncio.to_thread(event.wait)`` would hold a worker per waiting request
(a thousand requests at start-up, a thousand threads). Here a waiting loop leaves a
future; ``set`` resolves every one through its loop's ``call_soon_threadsafe``."""

from __future__ import annotations

import asyncio
import threading


class LoopEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def set(self) -> None:
        super().set()
        with self._guard:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    async def wait_async(self, timeout: float | None = None) -> bool:
        """Until set (True), or ``timeout`` seconds (False)."""
        if self.is_set():
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._guard:
            self._waiters.append((loop, future))
        if self.is_set():  # set between the first look and registering
            return True
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(future)
            return True
        except TimeoutError:
            return False
        finally:
            with self._guard:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
