"""The controller's work queue: HPA keys to reconcile, with client-go workqueue semantics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class WorkQueue:
    """HPA keys to reconcile, with client-go workqueue semantics.

    A key is queued at most once; a key being processed is never handed to a second worker
    (if it changes meanwhile it is queued again when the first is done); each key has at
    most one pending timer, so change events cannot multiply its periodic resyncs.
    """

    def __init__(self, on_wait: Callable[[float], None] | None = None) -> None:
        """``on_wait``: told, when a worker takes a key, how long it waited in the queue since
        it became due (client-go's workqueue_queue_duration_seconds: the sync lag)."""
        self._on_wait = on_wait
        self._since: dict[tuple[str, str], float] = {}
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str]] = set()
        self._processing: set[tuple[str, str]] = set()
        self._dirty: set[tuple[str, str]] = set()
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def add(self, key: tuple[str, str]) -> None:
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            if self._on_wait is not None:
                self._since[key] = time.monotonic()
            self._queue.put_nowait(key)

    def add_after(self, key: tuple[str, str], seconds: float) -> None:
        if (old := self._timers.pop(key, None)) is not None:
            old.cancel()
        self._timers[key] = asyncio.get_running_loop().call_later(seconds, self._fire, key)

    def add_rate_limited(self, key: tuple[str, str], seconds: float) -> None:
        """client-go's AddRateLimited with the HPA's fixed-interval limiter: ready in
        ``seconds`` unless it is already due sooner (queued, or an earlier timer)."""
        if key in self._queued or key in self._dirty:
            return
        old = self._timers.get(key)
        if old is not None and old.when() <= asyncio.get_running_loop().time() + seconds:
            return
        self.add_after(key, seconds)

    def _fire(self, key: tuple[str, str]) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> tuple[str, str]:
        key = await self._queue.get()
        self._queued.discard(key)
        since = self._since.pop(key, None)
        if since is not None and self._on_wait is not None:
            self._on_wait(time.monotonic() - since)
        self._processing.add(key)
        return key

    def done(self, key: tuple[str, str]) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def forget(self, key: tuple[str, str]) -> None:
        if (old := self._timers.pop(key, None)) is not None:
            old.cancel()

    def __len__(self) -> int:
        return self._queue.qsize()
