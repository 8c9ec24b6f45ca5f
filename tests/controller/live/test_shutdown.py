"""The controller stops cleanly as a container's process 1, and its standby takes over at once.

Both replicas run under ``unshare --pid --fork`` (each is process 1 of its own PID
namespace) and the test signals the leader's process 1 directly, as a container runtime
does. While its endpoints are under steady load and its HPAs reconcile every second, the
leader must finish what it is doing, answer every request it had received, release the
Lease and exit 0 within its grace; the standby must hold the Lease within one retry period.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from localcluster import Cluster
from localcluster import free_port
from localcluster.promhpa import AS_PID_1
from localcluster.promhpa import namespace_init
from tests.support import external_metric_app
from tests.support import leader_identity
from tests.support import start_controller_process
from tests.support import stop_process
from tests.support import wait_until

pytestmark = pytest.mark.slow

NS = "shutdown-test"
LEASE = "promhpa-shutdown-test"
GRACE = 5.0
RETRY = 2.0


def _objects(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for i in range(n):
        out += external_metric_app(NS, f"app-{i}", "shutdown_queue_depth", labels={"shutdown": "true"},
                                   max_replicas=3)  # fmt: skip
    return out


def _holder(cluster: Cluster) -> str:
    out = cluster.kubectl("-n", NS, "get", "lease", LEASE, "-o", "json", check=False)
    return str(json.loads(out.stdout)["spec"].get("holderIdentity") or "") if out.returncode == 0 else ""


def _decided(cluster: Cluster) -> int:
    """HPAs of the test with a status written (conditions) by the leader."""
    items = json.loads(cluster.kubectl("-n", NS, "get", "hpa", "-o", "json").stdout)["items"]
    return sum(1 for h in items if (h.get("status") or {}).get("conditions"))


def _admin_tls(cluster: Cluster) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the controller's self-signed cert
    ctx.load_cert_chain(cluster.pki / "admin.crt", cluster.pki / "admin.key")
    return ctx


async def _scrape(url: str, ctx: ssl.SSLContext, until: float, out: list[tuple[float, float, int]]) -> None:
    """8 loops GETting /metrics (as the admin's client certificate) until ``until``."""

    async def one(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < until:
            sent = time.monotonic()
            try:
                async with session.get(url) as r:
                    await r.read()
                    code = r.status
            except (aiohttp.ClientError, OSError):
                code = 0
            out.append((sent, time.monotonic(), code))
            await asyncio.sleep(0.01 if code else 0.1)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        await asyncio.gather(*(one(session) for _ in range(8)))


def test_sigterm_as_pid_1_hands_the_lease_over_within_one_retry_period(
    cluster: Cluster, tmp_path: Path
) -> None:
    cluster.apply(_objects(10))
    flags = (
        "--leader-elect",
        f"--leader-elect-resource-namespace={NS}",
        f"--leader-elect-resource-name={LEASE}",
        f"--leader-elect-retry-period={RETRY:g}s",
        "--hpa-selector=shutdown",
        "--horizontal-pod-autoscaler-sync-period=1s",
        f"--shutdown-grace-period={GRACE:g}s",
        "--log-format=console",
    )
    leader_port = free_port()
    leader_log, standby_log = tmp_path / "leader.log", tmp_path / "standby.log"
    leader = start_controller_process(
        cluster.kubeconfig, leader_log, *flags, f"--secure-port={leader_port}", prefix=AS_PID_1
    )
    standby = None
    try:
        leader_init = namespace_init(leader)
        wait_until(lambda: _holder(cluster) == leader_identity(leader_log), timeout=60, what="the leader")
        standby = start_controller_process(cluster.kubeconfig, standby_log, *flags, prefix=AS_PID_1)
        standby_id = leader_identity(standby_log)
        wait_until(lambda: _decided(cluster) == 10, timeout=60, what="the leader's reconciles")
        scraped: list[tuple[float, float, int]] = []
        term_at: list[float] = []

        taken_at: list[float] = []

        async def scenario() -> None:
            url = f"https://127.0.0.1:{leader_port}/metrics"
            load = asyncio.create_task(_scrape(url, _admin_tls(cluster), time.monotonic() + 4, scraped))
            await asyncio.sleep(1.5)
            term_at.append(time.monotonic())
            os.kill(leader_init, signal.SIGTERM)
            while time.monotonic() - term_at[0] < RETRY + 5:  # when the standby holds the Lease
                if await asyncio.to_thread(_holder, cluster) == standby_id:
                    taken_at.append(time.monotonic())
                    break
                await asyncio.sleep(0.1)
            await load

        asyncio.run(scenario())
        term = term_at[0]
        assert taken_at, f"the standby did not take the Lease within {RETRY + 5:g}s of SIGTERM"
        took_over = taken_at[0] - term
        code = leader.wait(timeout=GRACE + 5)
    finally:
        stop_process(leader)
        if standby is not None:
            stop_process(standby)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    log = leader_log.read_text()
    before = [s for s in scraped if s[0] < term]
    print(f"standby took over {took_over:.2f}s after SIGTERM; {len(before)} scrapes before it")
    assert code == 0, log[-3000:]
    assert took_over <= RETRY + 1.0, f"the standby took the Lease {took_over:.1f}s after SIGTERM"
    assert before, "not vacuous: the endpoints were under load before SIGTERM"
    assert all(code == 200 for _, _, code in before), [c for *_, c in before if c != 200][:5]
    assert "released the Lease" in log
    assert "were cancelled" not in log  # every reconcile under way finished: no half-written status
    assert "Traceback" not in log
