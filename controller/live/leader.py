"""Leader election over a coordination.k8s.io Lease, as client-go's leaderelection does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog

from shared.durations import parse_time
from shared.kube.client import Kube
from shared.kube.errors import Forbidden, KubeError, NotFound, Unauthorized

log = structlog.get_logger("controller")


def leader_clock() -> float:
    """Seconds on a clock that keeps counting while the process or its machine is paused
    (CLOCK_BOOTTIME includes suspend; plain monotonic does not), never the wall clock."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


class NotLeader(Exception):  # noqa: N818 - reads as a state, like client-go's "not leader"
    """A write was refused: this process's leadership is not current."""


@dataclass(frozen=True)
class LeaderElection:
    """The Lease and its timing, as kube-controller-manager's --leader-elect-* flags spell
    them: one object from the command line to the elector, checked when made."""

    namespace: str
    name: str
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline "
                "> --leader-elect-retry-period > 0 (the gap between the first two absorbs clock skew; "
                f"got {self.lease_duration}s, {self.renew_deadline:g}s, {self.retry_period:g}s)"
            )


@dataclass
class LeaderElector:
    """client-go's leader election over a coordination.k8s.io Lease.

    Leadership is judged by time, not by counting failures: this process acts only while
    its last successful renewal *started* less than ``renew_deadline`` ago on
    ``leader_clock``. Another candidate may take the Lease only ``lease_duration`` after
    that renewal's ``renewTime``, and ``lease_duration > renew_deadline`` leaves the rest as
    room for clock skew, so a leader that was paused (SIGSTOP, a long GC, a frozen VM)
    knows it is no longer leader before anyone else can be. ``guard`` is called right
    before every write leaves the process.
    """

    kube: Kube
    lease: LeaderElection
    identity: str
    clock: Callable[[], float] = leader_clock
    _renewed_at: float | None = None

    def _path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.lease.namespace}/leases/{self.lease.name}"

    def is_leader(self) -> bool:
        return self._renewed_at is not None and self.clock() - self._renewed_at < self.lease.renew_deadline

    def guard(self) -> None:
        if not self.is_leader():
            raise NotLeader(
                f"not the leader of {self.lease.key}: no renewal within "
                f"{self.lease.renew_deadline:g}s, so another replica may hold the Lease"
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
                lease=self.lease.key,
                error=str(e),
            )
            return False
        if ok:
            self._renewed_at = started
        return ok

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Try every retry period until the Lease is ours (True) or ``stop`` is set (False)."""
        while not await self.try_acquire():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.lease.retry_period):  # cancellable, unlike 3.11's wait_for
                    await stop.wait()
            if stop.is_set():
                return False
        log.info("became leader", lease=self.lease.key, identity=self.identity)
        return True

    async def keep_renewing(self) -> None:
        """Renew every retry period; a leader whose last renewal is ``renew_deadline`` old
        exits the process at once (a fresh one stands by), as client-go's OnStoppedLeading."""
        while True:
            await asyncio.sleep(self.lease.retry_period if self.is_leader() else 0)
            if self.is_leader():
                with contextlib.suppress(KubeError):
                    await self.try_acquire()
            if not self.is_leader():  # judged by the time since the last renewal, not by retries
                log.error(
                    "lost leadership; exiting so a fresh process can stand by",
                    lease=self.lease.key,
                    renew_deadline=self.lease.renew_deadline,
                )
                os._exit(1)

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
        log.info("released the Lease", lease=self.lease.key)

    async def _try_acquire(self) -> bool:
        now = datetime.now(UTC)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease.lease_duration,
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
                "metadata": {"name": self.lease.name, "namespace": self.lease.namespace},
                "spec": {**spec, "acquireTime": stamp, "leaseTransitions": 0},
            }
            try:
                await self.kube.post(
                    f"/apis/coordination.k8s.io/v1/namespaces/{self.lease.namespace}/leases", body
                )
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
