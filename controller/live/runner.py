"""Running the controller: informers, a work queue, bounded workers, leader election.

Each HPA is reconciled about once per sync period and promptly after it changes (an
informer event enqueues it; a key already queued is not queued twice). With leader
election only the Lease holder reconciles; a standby takes over within the lease duration
and starts with empty memory, so its first reconcile records the current replica count
before anything else, as upstream does after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from controller.engine.model import Settings
from shared.durations import parse_time
from shared.informer import Informer, without_managed_fields
from shared.kube import Kube, KubeError

from .mapping import RESTMapper
from .reconciler import ControllerMetrics, Reconciler
from .writer import EventRecorder

log = structlog.get_logger("controller")


class WorkQueue:
    """HPA keys to reconcile, with client-go workqueue semantics.

    A key is queued at most once; a key being processed is never handed to a second worker
    (if it changes meanwhile it is queued again when the first is done); each key has at
    most one pending timer, so change events cannot multiply its periodic resyncs.
    """

    def __init__(self) -> None:
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
            self._queue.put_nowait(key)

    def add_after(self, key: tuple[str, str], seconds: float) -> None:
        if (old := self._timers.pop(key, None)) is not None:
            old.cancel()
        self._timers[key] = asyncio.get_running_loop().call_later(seconds, self._fire, key)

    def _fire(self, key: tuple[str, str]) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> tuple[str, str]:
        key = await self._queue.get()
        self._queued.discard(key)
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


@dataclass
class LeaderElector:
    kube: Kube
    namespace: str
    name: str
    identity: str
    lease_seconds: int = 15
    retry_seconds: float = 2.0

    def _path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    async def try_acquire(self) -> bool:
        """True while this process holds the Lease; a refused request (RBAC) is logged, not raised."""
        try:
            return await self._try_acquire()
        except KubeError as e:
            if e.status not in (401, 403):
                raise
            log.error(
                "not allowed to manage the leader-election Lease; grant get, create and update on leases",
                lease=f"{self.namespace}/{self.name}",
                error=str(e),
            )
            return False

    async def release(self) -> None:
        """Give the Lease up on a clean exit, as client-go's ReleaseOnCancel does: an empty
        holder with a 1s duration, so a standby need not wait out the full lease."""
        lease = await self.kube.get(self._path())
        held = lease.get("spec", {})
        if held.get("holderIdentity") != self.identity:
            return
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {**held, "holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": stamp}
        await self.kube.put(self._path(), {**lease, "spec": spec})
        log.info("released the Lease", lease=f"{self.namespace}/{self.name}")

    async def _try_acquire(self) -> bool:
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_seconds,
            "renewTime": stamp,
        }
        try:
            lease = await self.kube.get(self._path())
        except KubeError as e:
            if e.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {**spec, "acquireTime": stamp, "leaseTransitions": 0},
            }
            try:
                await self.kube.post(f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases", body)
                return True
            except KubeError as e:
                if e.status in (401, 403):
                    raise
                return False
        held = lease.get("spec", {})
        holder = held.get("holderIdentity")
        renew = held.get("renewTime")
        expired = (
            renew is None
            or parse_time(renew) + timedelta(seconds=int(held.get("leaseDurationSeconds", 15))) < now
        )
        if holder != self.identity and not expired:
            return False
        new = {**held, **spec}
        if holder != self.identity:
            new["acquireTime"] = stamp
            new["leaseTransitions"] = int(held.get("leaseTransitions", 0)) + 1
        try:
            await self.kube.put(self._path(), {**lease, "spec": new})  # resourceVersion guards the race
            return True
        except KubeError as e:
            if e.status in (401, 403):
                raise
            return False


@dataclass
class Options:
    kubeconfig: str | None
    settings: Settings
    sync_period: float
    workers: int
    hpa_selector: str
    dry_run: bool
    leader_elect: bool
    lease_namespace: str
    lease_name: str
    bind_address: str
    port: int


async def run(opts: Options) -> int:
    from shared.kube import load

    kube = Kube(load(opts.kubeconfig))
    loop = asyncio.get_running_loop()
    queue = WorkQueue()

    def on_hpa(kind: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata", {})
        loop.call_soon_threadsafe(queue.add, (meta.get("namespace", ""), meta.get("name", "")))

    hpas = Informer(kube, "/apis/autoscaling/v2/horizontalpodautoscalers", opts.hpa_selector, on_hpa)
    pods = Informer(kube, "/api/v1/pods", transform=without_managed_fields)
    metrics = ControllerMetrics()
    reconciler = Reconciler(
        kube, RESTMapper(kube), hpas, pods, opts.settings, EventRecorder(kube), metrics, dry_run=opts.dry_run
    )

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def prom(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/healthz", health)
    app.router.add_get("/metrics", prom)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, opts.bind_address, opts.port).start()
    log.info(
        "controller starting",
        dry_run=opts.dry_run,
        hpa_selector=opts.hpa_selector or None,
        sync_period=opts.sync_period,
        workers=opts.workers,
        leader_elect=opts.leader_elect,
    )

    stop = asyncio.Event()  # SIGTERM/SIGINT: finish cleanly and hand the Lease over at once
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    if opts.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        elector = LeaderElector(kube, opts.lease_namespace, opts.lease_name, identity)
        while not await elector.try_acquire():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), elector.retry_seconds)
            if stop.is_set():
                await runner.cleanup()
                return 0
        log.info("became leader", lease=f"{opts.lease_namespace}/{opts.lease_name}", identity=identity)

        async def renew() -> None:
            failures = 0
            while True:
                await asyncio.sleep(elector.retry_seconds)
                try:
                    ok = await elector.try_acquire()
                except KubeError:
                    ok = False
                failures = 0 if ok else failures + 1
                if failures * elector.retry_seconds >= 10:  # renew deadline: stop acting at once
                    log.error("lost leadership; exiting so a fresh process can stand by")
                    os._exit(1)

        renew_task = asyncio.create_task(renew())

    async def worker() -> None:
        while True:
            key = await queue.get()
            try:
                if await reconciler.reconcile(*key) is not None:
                    queue.add_after(key, opts.sync_period)
                else:
                    queue.forget(key)
            except Exception as e:  # one HPA's failure must not stop the others
                log.error("reconcile failed", hpa=f"{key[0]}/{key[1]}", error=str(e))
                queue.add_after(key, opts.sync_period)
            finally:
                queue.done(key)

    workers: list[asyncio.Task[None]] = []
    hpas.start()
    pods.start()
    try:
        for informer in (hpas, pods):  # deciding on an empty cache would be deciding blind
            waited = 0
            while not stop.is_set() and not await asyncio.to_thread(informer.synced.wait, 1):
                waited += 1
                if waited % 10 == 0:
                    log.error("waiting for the first list", path=informer.path, error=informer.error or None)
        if not stop.is_set():
            for obj in hpas.items():
                on_hpa("ADDED", obj)
            workers = [asyncio.create_task(worker()) for _ in range(opts.workers)]
        await stop.wait()
        log.info("stopping")
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if opts.leader_elect:
            renew_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renew_task
            with contextlib.suppress(KubeError):  # no writes follow: a standby may take over now
                await elector.release()
        hpas.stop()
        pods.stop()
        await runner.cleanup()
    return 0
