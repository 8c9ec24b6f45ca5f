"""The adapter stops cleanly as a container's process 1: SIGTERM under load loses nothing.

The adapter runs under ``unshare --pid --fork``, so it is process 1 of a PID namespace of
its own, and the test signals that process directly, as a container runtime does. The
kernel delivers no signal to such a process unless it installed a handler: an adapter
without one kept running until SIGKILL and cut every request in flight.

Prometheus answers through a proxy that holds each answer 300 ms (a slow link), so at the
moment of SIGTERM every client of the steady load has a request in flight at the adapter.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from localcluster.promhpa import AS_PID_1
from localcluster.promhpa import namespace_init
from tests.netproxy import Proxy
from tests.support import ROOT
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import insecure_tls
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import stop_process
from tests.support import wait_until

pytestmark = pytest.mark.slow

CONFIG = external_rules("shutdown_queue", by="")
PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/shutdown_queue"
GRACE = 5.0
CLIENTS = 16


@dataclass
class Outcome:
    sent: float
    done: float
    ok: bool
    error: str = ""


async def _load(url: str, ctx: ssl.SSLContext, stop_at: float, outcomes: list[Outcome]) -> None:
    """CLIENTS loops, each on its own kept-alive connection, until ``stop_at``."""

    async def one(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < stop_at:
            sent = time.monotonic()
            try:
                async with session.get(url) as r:
                    body = await r.read()
                    ok, error = r.status == 200, "" if r.status == 200 else f"{r.status} {body[:200]!r}"
            except (aiohttp.ClientError, OSError) as e:
                ok, error = False, f"{type(e).__name__}: {e}"
            outcomes.append(Outcome(sent, time.monotonic(), ok, error))
            if not ok:
                await asyncio.sleep(0.05)  # refused after shutdown: do not spin

    connector = aiohttp.TCPConnector(ssl=ctx, limit=CLIENTS)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one(session) for _ in range(CLIENTS)))


@pytest.fixture
def slow_prometheus(exporter: Exporter, prometheus: PrometheusProcess) -> Iterator[str]:
    exporter.set('shutdown_queue{queue="q"}', 7)
    wait_until(lambda: prometheus.query("shutdown_queue") != [], what="the series scraped")
    proxy = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    proxy.delay = 0.3
    yield f"http://127.0.0.1:{proxy.port}"
    proxy.close()


def test_sigterm_as_pid_1_drains_requests_in_flight_and_exits_0(slow_prometheus: str, tmp_path: Path) -> None:
    adapter = start_adapter(
        tmp_path,
        slow_prometheus,
        CONFIG,
        "--query-cache-ttl=0s",
        f"--shutdown-grace-period={GRACE:g}s",
        prefix=AS_PID_1,
    )
    try:
        init = namespace_init(adapter.proc)
        outcomes: list[Outcome] = []
        term_at: list[float] = []

        async def scenario() -> None:
            load = asyncio.create_task(
                _load(adapter.url + PATH, insecure_tls(), time.monotonic() + 6, outcomes)
            )
            await asyncio.sleep(2.0)  # steady state: every client mid-request most of the time
            term_at.append(time.monotonic())
            os.kill(init, signal.SIGTERM)
            await load

        asyncio.run(scenario())
        code = adapter.proc.wait(timeout=GRACE + 5)
        exited = time.monotonic()
    finally:
        stop_adapter(adapter)
    log = adapter.log.read_text()
    term = term_at[0]
    in_flight = [o for o in outcomes if o.sent < term < o.done]
    before = [o for o in outcomes if o.sent < term]
    failed = [o for o in before if not o.ok]
    print(
        f"{len(before)} requests sent before SIGTERM, {len(in_flight)} in flight at it, {len(failed)} failed"
    )
    assert code == 0, log[-3000:]
    assert exited - term < GRACE + 2, f"exited {exited - term:.1f}s after SIGTERM"
    assert len(in_flight) >= CLIENTS // 2, "not vacuous: requests were in flight at SIGTERM"
    assert failed == [], [o.error for o in failed][:5]
    assert all(o.ok for o in in_flight)
    assert "stopping: draining requests in flight" in log
    assert "Traceback" not in log


def test_during_the_shutdown_delay_it_is_not_ready_yet_serves_new_connections(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    """After SIGTERM, for ``--shutdown-delay``: /readyz fails (the endpoint leaves every
    kube-proxy) while a new connection is still accepted and answered (one kube-proxy has
    not heard yet); then the listeners close and it exits 0."""
    exporter.set('shutdown_queue{queue="q"}', 7)
    wait_until(lambda: prometheus.query("shutdown_queue") != [], what="the series scraped")
    delay = 3.0
    adapter = start_adapter(tmp_path, prometheus.url, CONFIG, f"--shutdown-delay={delay:g}s", prefix=AS_PID_1)
    try:
        os.kill(namespace_init(adapter.proc), signal.SIGTERM)
        term = time.monotonic()
        wait_until(lambda: _status(f"http://127.0.0.1:{adapter.health_port}/readyz") == 503, timeout=2,
                   what="/readyz failing at once")  # fmt: skip
        served = _status(adapter.url + PATH, insecure_tls())  # a new connection, inside the delay
        inside = time.monotonic() - term < delay
        code = adapter.proc.wait(timeout=delay + GRACE + 5)
        ended = time.monotonic() - term
    finally:
        stop_adapter(adapter)
    assert inside, "the request was not sent within the delay: the test proves nothing"
    assert served == 200
    assert code == 0
    assert ended >= delay, f"it stopped {ended:.1f}s after SIGTERM, before its {delay:g}s delay ended"


def _status(url: str, context: ssl.SSLContext | None = None) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def test_sigterm_before_the_first_discovery_stops_it(prometheus: PrometheusProcess, tmp_path: Path) -> None:
    """A signal that arrives while the first discovery is still unanswered (Prometheus is
    cut off: a frozen link) ends the adapter too, with 0."""
    blackhole = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    blackhole.freeze()
    (tmp_path / "adapter.yaml").write_text(CONFIG)
    log = tmp_path / "adapter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*AS_PID_1, sys.executable, "-m", "adapter", "--insecure-skip-auth", "--bind-address=127.0.0.1",
             "--secure-port=0", "--health-port=0", f"--prometheus-url=http://127.0.0.1:{blackhole.port}",
             f"--config={tmp_path / 'adapter.yaml'}", f"--cert-dir={tmp_path / 'certs'}",
             "--log-format=console"],
            stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        init = namespace_init(proc)
        wait_until(lambda: "serving" in log.read_text(), timeout=30, what="the adapter serving")
        os.kill(init, signal.SIGTERM)
        code = proc.wait(timeout=10)
    finally:
        stop_process(proc)  # the namespace's process 1 too, not only unshare
        blackhole.close()
    text = log.read_text()
    assert code == 0, text[-2000:]
    assert "Traceback" not in text


def test_sigterm_while_the_program_is_still_importing_exits_0(
    prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    """The first act of each program is a SIGTERM handler (shared.entry): a signal that
    arrives while the libraries are still being imported -- a second or more on a busy
    node -- ends it with 0 instead of being ignored by process 1 (which would then go on to
    serve until SIGKILL)."""
    (tmp_path / "adapter.yaml").write_text(CONFIG)
    log = tmp_path / "adapter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*AS_PID_1, sys.executable, "-X", "importtime", "-m", "adapter", "--insecure-skip-auth",
             "--bind-address=127.0.0.1", "--secure-port=0", "--health-port=0",
             f"--prometheus-url={prometheus.url}", f"--config={tmp_path / 'adapter.yaml'}",
             f"--cert-dir={tmp_path / 'certs'}", "--log-format=console"],
            stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        init = namespace_init(proc)
        # -X importtime names each module as its import completes: adapter.commandline, the
        # program's first own package, comes right after the handler, with the rest of the
        # imports (aiohttp, the kubernetes client) still ahead; aiohttp's first modules left
        # too little margin on a warm cache for a 0.25 s poll (serving had begun)
        wait_until(
            lambda: re.search(r"\|\s+adapter\.commandline$", log.read_text(), re.M),
            timeout=30,
            what="the imports under way",
        )
        os.kill(init, signal.SIGTERM)
        code = proc.wait(timeout=10)
    finally:
        stop_process(proc)  # the namespace's process 1 too, not only unshare
    text = log.read_text()
    assert code == 0, text[-2000:]
    # it ended there and then, not after starting up (the "serving" event, not the package)
    assert not re.search(r"\]\s+serving\b", text)
