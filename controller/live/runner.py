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
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from controller.engine.decision import history_to_wire
from controller.engine.model import Settings
from shared.durations import parse_time
from shared.gcpolicy import freeze_startup_heap
from shared.kube.client import Kube
from shared.kube.discovery import RESTMapper
from shared.kube.errors import Forbidden, KubeError, NotFound, Unauthorized
from shared.kube.informer import Informer

from .pod_fields import pod_essentials
from .reconciler import ControllerMetrics, Reconciler
from .shadow import Shadow
from .writer import COMPONENT, EventRecorder

DRY_RUN_COMPONENT = "promhpa"

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


def leader_clock() -> float:
    """Seconds on a clock that keeps counting while the process or its machine is paused
    (CLOCK_BOOTTIME includes suspend; plain monotonic does not), never the wall clock."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


class NotLeader(Exception):  # noqa: N818 - reads as a state, like client-go's "not leader"
    """A write was refused: this process's leadership is not current."""


@dataclass
class LeaderElector:
    """client-go's leader election over a coordination.k8s.io Lease.

    Leadership is judged by time, not by counting failures: this process acts only while
    its last successful renewal *started* less than ``renew_deadline`` ago on
    ``leader_clock``. Another candidate may take the Lease only ``lease_seconds`` after
    that renewal's ``renewTime``, and ``lease_seconds > renew_deadline`` leaves the rest as
    room for clock skew, so a leader that was paused (SIGSTOP, a long GC, a frozen VM)
    knows it is no longer leader before anyone else can be. ``guard`` is called right
    before every write leaves the process.
    """

    kube: Kube
    namespace: str
    name: str
    identity: str
    lease_seconds: int = 15
    renew_deadline: float = 10.0
    retry_seconds: float = 2.0
    clock: Callable[[], float] = leader_clock
    _renewed_at: float | None = None

    def __post_init__(self) -> None:
        if not self.lease_seconds > self.renew_deadline > self.retry_seconds > 0:
            raise ValueError(
                "leader election needs lease duration > renew deadline > retry period > 0 "
                f"(got {self.lease_seconds}s, {self.renew_deadline:g}s, {self.retry_seconds:g}s)"
            )

    def _path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    def is_leader(self) -> bool:
        return self._renewed_at is not None and self.clock() - self._renewed_at < self.renew_deadline

    def guard(self) -> None:
        if not self.is_leader():
            raise NotLeader(
                f"not the leader of {self.namespace}/{self.name}: no renewal within "
                f"{self.renew_deadline:g}s, so another replica may hold the Lease"
            )

    async def try_acquire(self) -> bool:
        """True while this process holds the Lease; a refused request (RBAC) is logged, not raised."""
        started = self.clock()  # a renewal counts from before it was sent, never after
        try:
            ok = await self._try_acquire()
        except KubeError as e:
            if not isinstance(e, Unauthorized | Forbidden):
                raise
            log.error(
                "not allowed to manage the leader-election Lease; grant get, create and update on leases",
                lease=f"{self.namespace}/{self.name}",
                error=str(e),
            )
            return False
        if ok:
            self._renewed_at = started
        return ok

    async def release(self) -> None:
        """Give the Lease up on a clean exit, as client-go's ReleaseOnCancel does: an empty
        holder with a 1s duration, so a standby need not wait out the full lease."""
        self._renewed_at = None  # no write of ours may follow the hand-over
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
            if not isinstance(e, NotFound):
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
                if isinstance(e, Unauthorized | Forbidden):
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
            if isinstance(e, Unauthorized | Forbidden):
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
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_timeout: float = 15.0


async def run(opts: Options) -> int:
    from shared.kube.client import load

    # scale, metrics and status calls from the event loop (shared.kube.http): the threaded
    # client's transport was most of a reconcile's CPU
    lease_kube = Kube(load(opts.kubeconfig)).on_loop()
    elector: LeaderElector | None = None
    kube = lease_kube
    if opts.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        elector = LeaderElector(
            lease_kube,
            opts.lease_namespace,
            opts.lease_name,
            identity,
            lease_seconds=opts.lease_duration,
            renew_deadline=opts.renew_deadline,
            retry_seconds=opts.retry_period,
        )
        kube = lease_kube.guarded(elector.guard)  # every scale, status and event write
    loop = asyncio.get_running_loop()
    queue = WorkQueue()

    generations: dict[tuple[str, str], object] = {}

    def on_hpa(kind: str, obj: dict[str, Any]) -> None:
        """Upstream's cadence: an added or deleted HPA, or a spec change (its generation
        moved), is reconciled now; any other update -- our own status write coming back
        through the watch -- waits for the sync period, as client-go's AddRateLimited does."""
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        generation = meta.get("generation")
        previous = generations.get(key)
        if kind == "DELETED":
            generations.pop(key, None)
        else:
            generations[key] = generation
        known = previous is not None or kind == "MODIFIED"  # a relist re-reports what we know
        same_spec = previous == generation or not opts.settings.feature_gates.hpa_generation
        if opts.dry_run:
            reconciler.shadow.observe_hpa(kind, obj, datetime.now(UTC))
        if kind != "DELETED" and known and same_spec:
            loop.call_soon_threadsafe(queue.add_rate_limited, key, opts.sync_period)
        else:
            loop.call_soon_threadsafe(queue.add, key)

    hpas = Informer(kube, "/apis/autoscaling/v2/horizontalpodautoscalers", opts.hpa_selector, on_hpa)
    pods = Informer(kube, "/api/v1/pods", transform=pod_essentials)
    metrics = ControllerMetrics()
    reconciler = Reconciler(
        kube,
        RESTMapper(kube),
        hpas,
        pods,
        opts.settings,
        EventRecorder(kube, component=DRY_RUN_COMPONENT if opts.dry_run else COMPONENT),
        metrics,
        dry_run=opts.dry_run,
        metrics_timeout=opts.metrics_timeout,
        shadow=Shadow(opts.sync_period),
    )

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def prom(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()

    async def memory(request: web.Request) -> web.Response:
        """What this controller remembers of one HPA (recommendations, scale events): the
        `history` of its next snapshot, so `snapshot --controller-url` reproduces a live
        decision exactly. 404 when it has not reconciled the HPA (yet)."""
        key = (request.match_info["namespace"], request.match_info["name"])
        history = reconciler.memory.get(key)
        if history is None:
            return web.json_response(
                {"message": f"{key[0]}/{key[1]} has not been reconciled here"}, status=404
            )
        return web.json_response(history_to_wire(history))

    async def shadow(request: web.Request) -> web.Response:
        """Dry run: each HPA's would-be status beside its owner's, and where they differ
        (`python -m controller compare` reads this). 404 when not in dry run."""
        if not opts.dry_run:
            return web.json_response({"message": "this controller is not running with --dry-run"}, status=404)
        ns, name = request.match_info.get("namespace"), request.match_info.get("name")
        items = [
            c.to_wire()
            for key, c in sorted(reconciler.shadow.comparisons.items())
            if ns is None or key == (ns, name)
        ]
        if ns is not None and not items:
            return web.json_response({"message": f"{ns}/{name} has not been reconciled here"}, status=404)
        return web.json_response(
            {
                "syncPeriodSeconds": opts.sync_period,
                "differencesTotal": reconciler.shadow.differences_total,
                "ownerDecisionsCompared": dict(reconciler.shadow.paired),
                "items": items,
            }
        )

    app.router.add_get("/healthz", health)
    app.router.add_get("/debug/shadow", shadow)
    app.router.add_get("/debug/shadow/{namespace}/{name}", shadow)
    app.router.add_get("/metrics", prom)
    app.router.add_get("/debug/history/{namespace}/{name}", memory)
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

    if elector is not None:
        while not await elector.try_acquire():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(elector.retry_seconds):  # cancellable, unlike 3.11's wait_for
                    await stop.wait()
            if stop.is_set():
                await runner.cleanup()
                await lease_kube.aclose()
                return 0
        log.info(
            "became leader", lease=f"{opts.lease_namespace}/{opts.lease_name}", identity=elector.identity
        )

        async def renew(e: LeaderElector) -> None:
            while True:
                await asyncio.sleep(e.retry_seconds if e.is_leader() else 0)
                if e.is_leader():
                    with contextlib.suppress(KubeError):
                        await e.try_acquire()
                if not e.is_leader():  # judged by the time since the last renewal, not by retries
                    log.error(
                        "lost leadership; exiting so a fresh process can stand by",
                        lease=f"{e.namespace}/{e.name}",
                        renew_deadline=e.renew_deadline,
                    )
                    os._exit(1)

        renew_task = asyncio.create_task(renew(elector))

    async def worker() -> None:
        while True:
            key = await queue.get()
            try:
                if elector is not None and not elector.is_leader():
                    queue.add_after(key, opts.sync_period)  # the renew loop is about to exit
                elif await reconciler.reconcile(*key) is not None:
                    queue.add_after(key, opts.sync_period)
                else:
                    queue.forget(key)
            except NotLeader as e:
                log.error("write refused: not the leader", hpa=f"{key[0]}/{key[1]}", error=str(e))
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
            # libraries and the first lists: out of every GC pass (shared.gcpolicy)
            log.info("caches synced", gc_frozen_objects=freeze_startup_heap())
            for obj in hpas.items():
                on_hpa("ADDED", obj)
            workers = [asyncio.create_task(worker()) for _ in range(opts.workers)]
        await stop.wait()
        log.info("stopping")
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if elector is not None:
            renew_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renew_task
            with contextlib.suppress(KubeError):  # no writes follow: a standby may take over now
                await elector.release()
        hpas.stop()
        pods.stop()
        await runner.cleanup()
        await lease_kube.aclose()
    return 0
