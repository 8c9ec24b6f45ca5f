"""Leadership judged by time since the last renewal, and the write guard (no API needed:
a refused write never leaves the process)."""

from __future__ import annotations

import asyncio
from typing import Any

import kubernetes
import pytest

from controller.live.leader import LeaderElection
from controller.live.leader import LeaderElector
from controller.live.leader import NotLeader
from shared.kube.client import Kube


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(clock: Clock, **kw: Any) -> LeaderElector:
    return LeaderElector(
        Kube(kubernetes.client.ApiClient()), LeaderElection("ns", "lease", **kw), "me", clock=clock
    )


def test_a_fresh_elector_is_not_leader_and_refuses_writes() -> None:
    e = elector(Clock())
    assert not e.is_leader()
    with pytest.raises(NotLeader, match="not the leader of ns/lease"):
        e.guard()


def test_leadership_lapses_at_the_renew_deadline_counted_from_the_renewal_start() -> None:
    clock = Clock()
    e = elector(clock, lease_duration=15, renew_deadline=10, retry_period=2)

    async def acquire() -> bool:
        clock.now += 3  # a slow renewal: it still counts from when it started ...
        return True

    e._try_acquire = acquire  # type: ignore[method-assign]
    assert asyncio.run(e.try_acquire())
    assert e.is_leader()
    clock.now += 6.9  # 9.9 s after the start
    assert e.is_leader()
    clock.now += 0.1  # ... and is worth renew_deadline from its start, however long it took
    assert not e.is_leader()


def test_a_pause_longer_than_the_renew_deadline_ends_leadership_without_any_failed_renewal() -> None:
    clock = Clock()
    e = elector(clock)

    async def acquire() -> bool:
        return True

    e._try_acquire = acquire  # type: ignore[method-assign]
    asyncio.run(e.try_acquire())
    clock.now += 30  # SIGSTOP for 30 s: no renewal was even attempted
    with pytest.raises(NotLeader):
        e.guard()


ORDER = "lease-duration > --leader-elect-renew-deadline > --leader-elect-retry-period"


def test_lease_duration_must_exceed_renew_deadline_which_must_exceed_retry() -> None:
    with pytest.raises(ValueError, match=ORDER):
        elector(Clock(), lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match=ORDER):
        elector(Clock(), lease_duration=15, renew_deadline=2, retry_period=2)


def test_guarded_client_refuses_writes_before_they_leave_the_process() -> None:
    def refuse() -> None:
        raise NotLeader("not the leader")

    kube = Kube(kubernetes.client.ApiClient()).guarded(refuse)
    for call in (kube.put("/api/v1/namespaces/x/events/e", {}), kube.post("/api/v1/namespaces/x/events", {})):
        with pytest.raises(NotLeader):
            asyncio.run(call)
