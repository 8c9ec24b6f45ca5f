"""From HPA events to reconciles: the cadence of the queue, and the workers that drain it.

Each HPA is reconciled about once per sync period and promptly after its spec changes (an
informer event enqueues it; a key already queued is not queued twice). Workers stop the
way a rollout needs: ``drain`` lets each finish the reconcile it is in -- scale and status
are written together or not at all -- takes no new key, and cancels what is still running
after the grace period.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import structlog

from .consistency import StaleReadError
from .leader import LeaderElector, NotLeader
from .reconciler import Reconciler
from .workqueue import WorkQueue

log = structlog.get_logger("controller")


class Workers:
    def __init__(
        self,
        reconciler: Reconciler,
        *,
        sync_period: float,
        count: int,
        dry_run: bool,
        generation_gate: bool,
        elector: LeaderElector | None,
        enqueues_immediately: bool = True,
    ) -> None:
        self.reconciler, self.sync_period, self.count = reconciler, sync_period, count
        self.dry_run, self.generation_gate, self.elector = dry_run, generation_gate, elector
        # 1.37 reconciles an added HPA (and a spec change) at once; up to 1.36 every add
        # and update waits for the sync period (AddRateLimited), the first list's too
        self.enqueues_immediately = enqueues_immediately
        self.queue = WorkQueue(on_wait=reconciler.metrics.observe_queue_wait)
        self._generations: dict[tuple[str, str], object] = {}
        self._started = False
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def on_hpa(self, kind: str, obj: dict[str, Any]) -> None:
        """The HPA informer's callback (on the loop). Upstream's cadence: an added or
        deleted HPA, or a spec change (its generation moved), is reconciled now; any other
        update -- our own status write coming back through the watch -- waits for the sync
        period, as client-go's AddRateLimited does."""
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        generation = meta.get("generation")
        previous = self._generations.get(key)
        if kind == "DELETED":
            self._generations.pop(key, None)
        else:
            self._generations[key] = generation
        known = previous is not None or kind == "MODIFIED"  # a relist re-reports what we know
        same_spec = previous == generation or not self.generation_gate
        if self.dry_run:
            self.reconciler.shadow.observe_hpa(kind, obj, datetime.now(UTC))
        if not self._started:
            return  # before start (the first list is replayed then)
        if kind != "DELETED" and ((known and same_spec) or not self.enqueues_immediately):
            self.queue.add_rate_limited(key, self._period(key))
        else:
            self.queue.add(key)

    def start(self, hpas: list[dict[str, Any]]) -> None:
        """Every HPA listed so far, now; then ``count`` workers."""
        self._started = True
        for obj in hpas:
            meta = obj.get("metadata", {})
            key = (meta.get("namespace", ""), meta.get("name", ""))
            if self.enqueues_immediately:
                self.queue.add(key)
            else:
                self.queue.add_rate_limited(key, self._period(key))
        self._tasks = [asyncio.create_task(self._work()) for _ in range(self.count)]

    def _period(self, key: tuple[str, str]) -> float:
        """The key's sync period: its own (promhpa's kind, ``spec.controller.syncPeriod``)
        or the controller's."""
        own = self.reconciler.sync_period_of(key)
        return self.sync_period if own is None else own

    async def _next(self) -> tuple[str, str] | None:
        """The next key, or None once draining has begun."""
        get = asyncio.ensure_future(self.queue.get())
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if get.done():
            return get.result()
        get.cancel()  # a cancelled get takes nothing off the queue
        return None

    async def _work(self) -> None:
        while not self._stopping.is_set():
            key = await self._next()
            if key is None:
                return
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: tuple[str, str]) -> None:
        elector = self.elector
        try:
            if elector is not None and not elector.is_leader():
                self.queue.add_after(key, self._period(key))  # the renew loop is about to exit
            elif await self.reconciler.reconcile(*key) is not None:
                self.queue.add_after(key, self._period(key))
            else:
                self.queue.forget(key)
        except NotLeader as e:
            log.error("write refused: not the leader", hpa=f"{key[0]}/{key[1]}", error=str(e))
        except StaleReadError as e:  # the cache has not shown our last write yet: not an error
            log.info("sync skipped: stale HPA cache", hpa=f"{key[0]}/{key[1]}", reason=str(e))
            self.queue.add_after(key, self._period(key))
        except Exception as e:  # one HPA's failure must not stop the others
            log.error("reconcile failed", hpa=f"{key[0]}/{key[1]}", error=str(e), exc_info=e)
            self.queue.add_after(key, self._period(key))

    async def drain(self, grace: float) -> int:
        """Stop taking keys; wait up to ``grace`` seconds for the reconciles under way; cancel
        the rest. How many were cancelled."""
        self._stopping.set()
        if not self._tasks:
            return 0
        _, pending = await asyncio.wait(self._tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return len(pending)
