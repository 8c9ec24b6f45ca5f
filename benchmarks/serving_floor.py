"""The least an adapter on promhpa's serving stack can do per request, beside raw Prometheus.

    python -m benchmarks.serving_floor [--rounds 3] [--requests 6000] [--seconds 4]

Why: ``make bench-adapter`` compares promhpa with the same PromQL sent straight to Prometheus
(``promhpa / raw``). That ratio has a ceiling set by the machine and the stack, not by what
promhpa does: on two shared cores every request costs Prometheus and the client their CPU in
both measurements, and the adapter its own on top. This measures the ceiling itself.

The *forwarder* here is the floor of the stack promhpa serves on -- aiohttp's low-level
server over TLS on uvloop, one distinct instant query per request to Prometheus over
promhpa's kept-alive connections (``shared.httpclient``), Prometheus' bytes returned
unchanged. No authentication, no parsing of the request or of the answer, no metrics API
shape, no cache: anything that serves the metrics APIs does at least this. Its rate over the
raw rate, for the external-metrics query of ``benchmarks.side_by_side`` (one series per
answer), is the most an adapter on this stack can reach on this machine.

Both are driven by the Go load generator (``benchmarks/loadgen``) on 127.0.0.1, bounded by
count and time, taking turns round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import ssl
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from aiohttp import web

from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import stop_process
from localcluster.tools import free_port, wait_http, wait_until
from shared.httpclient import Connections, Origin, form_encode
from shared.tls import self_signed

from .side_by_side import QUEUES, drive_loadgen, loadgen_binary, paths, raw_prometheus

TICK_MS = 10.0  # /proc's CPU clock tick (USER_HZ 100)


def query(i: int) -> str:
    """The external path's PromQL for request ``i``, written out (the forwarder builds no
    query from rules); ``main`` checks it is side_by_side's text, character for character."""
    return f'sum(bench_queue_depth{{queue="q{i % QUEUES}",shard!="x{i}",namespace="bench"}}) by (queue)'


async def forward(prometheus_url: str, port: int, certs: Path) -> None:
    """Serve ``GET /?i=N``: query(N) to Prometheus, its answer back as is."""
    cert, key = self_signed(certs, ["127.0.0.1"])
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    origin = Origin.of(prometheus_url)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with Connections() as connections:

        async def handle(request: web.BaseRequest) -> web.Response:
            if request.path == "/healthz":
                return web.Response(text="ok")
            body = form_encode({"query": query(int(request.query["i"])), "timeout": "10.000"}).encode()
            status, answer = await connections.request(origin, "POST", "/api/v1/query", form, body, 10.0)
            return web.Response(body=answer, status=status, content_type="application/json")

        runner = web.ServerRunner(web.Server(handle, access_log=None))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx).start()
        await asyncio.Event().wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=6000, help="per phase")
    ap.add_argument("--seconds", type=float, default=4.0, help="per phase at most")
    ap.add_argument("--concurrency", default="8,32")
    ap.add_argument(
        "--serve", nargs=3, metavar=("PROMETHEUS_URL", "PORT", "CERT_DIR"), help=argparse.SUPPRESS
    )
    a = ap.parse_args()
    if a.serve:
        from shared import eventloop

        eventloop.run(forward(a.serve[0], int(a.serve[1]), Path(a.serve[2])))
        return 0
    if not loadgen_binary().exists():
        print("the load generator is not built: run `hack/build-tools.sh bench` (make bench-adapter does)")
        return 2
    external = next(w for w in paths(distinct=True) if w.name == "external")
    assert all(query(i) == external.promql(i) for i in (0, 1, 7, 1234)), "the floor's query drifted"
    work = Path(tempfile.mkdtemp(prefix="promhpa-serving-floor-"))
    exporter = Exporter()
    for q in range(QUEUES):
        exporter.set(f'bench_queue_depth{{namespace="bench",queue="q{q}"}}', q)
    prom = PrometheusProcess(str(prometheus_path()), work, exporter.port)
    proc: subprocess.Popen[bytes] | None = None
    seq = itertools.count()
    rows = [
        "| conc | forwarder req/s | forwarder CPU ms/req | raw Prometheus req/s | forwarder / raw |",
        "|---:|---:|---:|---:|---:|",
    ]
    try:
        prom.start()
        wait_until(lambda: len(prom.query("bench_queue_depth")) == QUEUES, timeout=90, what="series scraped")
        port = free_port()
        argv = [sys.executable, "-m", "benchmarks.serving_floor", "--serve", prom.url, str(port), str(work)]
        proc = subprocess.Popen(argv, cwd=Path(__file__).resolve().parents[1])
        unverified = ssl.create_default_context()
        unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE  # its own certificate
        wait_http(f"https://127.0.0.1:{port}/healthz", what="the forwarder", context=unverified)
        for conc in (int(c) for c in a.concurrency.split(",")):
            ours: list[tuple[float, float]] = []
            raws: list[float] = []  # the same PromQL straight to Prometheus, as side_by_side sends it
            for _ in range(a.rounds):
                got = drive_loadgen(
                    {
                        "base": f"https://127.0.0.1:{port}",
                        "method": "GET",
                        "warm": [f"/?i={next(seq)}" for _ in range(2 * conc)],
                        "requests": [f"/?i={next(seq)}" for _ in range(a.requests)],
                        "headers": {},
                        "cert": "",
                        "key": "",
                        "ca": "",
                        "gzip": True,
                        "concurrency": conc,
                        "seconds": a.seconds,
                        "items": -1,
                        "pid": proc.pid,
                    }
                )
                ours.append((got["count"] / got["seconds"], got["cpu_ticks"] * TICK_MS / got["count"]))
                raws.append(raw_prometheus(prom.url, external, a.requests, conc, a.seconds))
            rps = statistics.median(r for r, _ in ours)
            cpu = statistics.median(c for _, c in ours)
            floor = statistics.median(raws)
            rows.append(f"| {conc} | {rps:.0f} | {cpu:.3f} | {floor:.0f} | {rps / floor:.2f} |")
            print(rows[-1], flush=True)
    finally:
        if proc is not None:
            stop_process(proc)
        prom.stop()
        exporter.close()
    print("\n".join(rows))
    print("\n(median of the rounds; the forwarder, Prometheus and the load generator share the cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
