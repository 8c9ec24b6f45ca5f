"""500 connections at once: probes answered by a process the load cannot hold up, excess requests
get a clean 429, nothing fails. How fast the probes stay is measured by ``benchmarks.probes``."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support import ROOT
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.slow

CONFIG = external_rules("overload_queue")
PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/overload_queue"
CONNECTIONS, SECONDS, INFLIGHT = 500, 8, 50


@pytest.fixture(scope="module")
def loaded(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AdapterProcess, dict[str, object]]]:
    exporter.set('overload_queue{namespace="default",queue="q"}', 3)
    wait_until(lambda: prometheus.query("overload_queue") != [], what="first scrape")
    flags = ("--query-cache-ttl=0s", f"--max-requests-inflight={INFLIGHT}")
    a = start_adapter(tmp_path_factory.mktemp("overload"), prometheus.url, CONFIG, *flags)
    try:
        loader = subprocess.Popen(
            [sys.executable, "-m", "tests.loadgen", a.url, PATH, str(CONNECTIONS), str(SECONDS)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        answers = probe_while(loader, a.health_port)  # from this process, as a kubelet would
        out, _ = loader.communicate(timeout=60)
        assert loader.returncode == 0
        yield a, {"codes": json.loads(out), "healthz": answers}
    finally:
        stop_adapter(a)


def probe_while(loader: subprocess.Popen[str], port: int) -> list[tuple[int, float]]:
    """GET /healthz on a fresh connection every 50 ms while the load runs: (status, seconds)."""
    answers: list[tuple[int, float]] = []
    time.sleep(1)  # every load connection open and busy first
    while loader.poll() is None:
        start = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        conn.close()
        answers.append((response.status, time.monotonic() - start))
        time.sleep(0.05)
    return answers[:-2]  # the last ones may fall after the load ended


def test_every_probe_during_the_load_is_answered_ok(loaded: tuple[AdapterProcess, dict[str, object]]) -> None:
    """How fast is a benchmark's question (benchmarks.probes); here: answered, and healthy."""
    _, result = loaded
    answers = result["healthz"]
    assert isinstance(answers, list)
    assert len(answers) >= 10
    print(f"healthz on the probe port: n={len(answers)} max {max(s for _, s in answers) * 1000:.1f} ms")
    assert {code for code, _ in answers} == {200}


def test_probes_are_answered_while_the_serving_process_is_stopped(
    loaded: tuple[AdapterProcess, dict[str, object]],
) -> None:
    """The probe process does not depend on the serving loop running, only on its heartbeat."""
    adapter, _ = loaded
    os.kill(adapter.proc.pid, signal.SIGSTOP)  # the serving process only, not its probe child
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{adapter.health_port}/healthz", timeout=10) as r:
            assert (r.status, r.read()) == (200, b"ok")
        with pytest.raises((TimeoutError, urllib.error.URLError)):  # the serving port cannot answer
            urllib.request.urlopen(adapter.url + "/healthz", timeout=1, context=adapter.ctx)
    finally:
        os.kill(adapter.proc.pid, signal.SIGCONT)
    assert adapter.get(PATH)[0] == 200


def test_every_request_is_answered_200_or_429(loaded: tuple[AdapterProcess, dict[str, object]]) -> None:
    _, result = loaded
    codes = result["codes"]
    assert isinstance(codes, dict)
    assert set(codes) <= {"200", "429"}, codes
    assert codes.get("200", 0) > 0


def test_requests_past_the_inflight_limit_get_a_too_many_requests_status(
    loaded: tuple[AdapterProcess, dict[str, object]],
) -> None:
    adapter, result = loaded
    codes = result["codes"]
    assert isinstance(codes, dict)
    assert codes.get("429", 0) > 0, codes
    assert adapter.proc.poll() is None  # and it is still serving
    code, body = adapter.get(PATH)
    assert code == 200, body


def test_readyz_on_the_probe_port_reports_discovery(loaded: tuple[AdapterProcess, dict[str, object]]) -> None:
    adapter, _ = loaded
    with urllib.request.urlopen(f"http://127.0.0.1:{adapter.health_port}/readyz", timeout=5) as r:
        assert (r.status, r.read()) == (200, b"ok")


def test_request_past_the_limit_gets_429_status_with_retry_after() -> None:
    """One request held in flight with a limit of one: the next is refused at once."""
    import asyncio

    import aiohttp
    from aiohttp import web

    from adapter.serving.health import inflight_limiter

    async def scenario() -> tuple[int, str | None, dict[str, object], int]:
        release = asyncio.Event()

        async def slow(_: web.Request) -> web.Response:
            await release.wait()
            return web.Response(text="done")

        app = web.Application(middlewares=[inflight_limiter(1)])
        app.router.add_get("/apis/x", slow)

        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        app.router.add_get("/healthz", ok)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as s:
                first = asyncio.create_task(s.get(f"http://127.0.0.1:{port}/apis/x"))
                await asyncio.sleep(0.2)
                async with s.get(f"http://127.0.0.1:{port}/apis/x") as r:
                    code, retry, body = r.status, r.headers.get("Retry-After"), await r.json()
                async with s.get(f"http://127.0.0.1:{port}/healthz") as h:  # probes are never limited
                    health = h.status
                release.set()
                (await first).release()
        finally:
            await runner.cleanup()
        return code, retry, body, health

    code, retry, body, health = asyncio.run(scenario())
    assert (code, retry, health) == (429, "1", 200)
    assert body["kind"] == "Status"
    assert body["reason"] == "TooManyRequests"
    assert body["code"] == 429
