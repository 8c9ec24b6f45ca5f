"""How fast a kubelet's probe is answered while the adapter is under load, per port.

    python -m benchmarks.probes [--connections 500] [--seconds 8] [--rounds 2]

Why: a liveness probe that waits behind API load fails (the kubelet's default timeout is
1 s) and restarts a healthy adapter under the very load it copes with. ``--health-port`` is
served by a process of its own for that reason; the tests show that it answers while the
serving process is stopped. This measures what it buys: ``/healthz`` on the probe port and
on the serving port, taken in turns from one client while ``tests.loadgen`` keeps N
connections busy on the serving port, with the in-flight limit the tests use. The ratio of
the two in one run is the figure; absolute times depend on the machine.

Loopback only; the load is bounded by time, the probes by the load.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import AdapterProcess, external_rules, start_adapter, stop_adapter
from localcluster.tools import ROOT, wait_until

CONFIG = external_rules("probe_bench_queue")
PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/probe_bench_queue"
INFLIGHT = 50


def probe(adapter: AdapterProcess, serving: bool) -> float:
    """One GET /healthz on a fresh connection, as a kubelet sends it; seconds."""
    start = time.monotonic()
    conn: http.client.HTTPConnection
    if serving:
        conn = http.client.HTTPSConnection("127.0.0.1", adapter.port, timeout=30, context=adapter.ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", adapter.health_port, timeout=30)
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"/healthz answered {response.status}")
    return time.monotonic() - start


def under_load(adapter: AdapterProcess, connections: int, seconds: float) -> dict[str, list[float]]:
    loader = subprocess.Popen(
        [sys.executable, "-m", "tests.loadgen", adapter.url, PATH, str(connections), str(seconds)],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    taken: dict[str, list[float]] = {"probe port": [], "serving port": []}
    try:
        time.sleep(1)  # every load connection open and busy first
        while loader.poll() is None:
            taken["probe port"].append(probe(adapter, serving=False))
            taken["serving port"].append(probe(adapter, serving=True))
            time.sleep(0.05)
    finally:
        loader.wait(timeout=60)
    return {k: v[:-1] for k, v in taken.items()}  # the last pair may fall after the load ended


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=8.0, help="of load per round")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="promhpa-bench-probes-"))
    exporter = Exporter()
    exporter.set('probe_bench_queue{namespace="default",queue="q"}', 3)
    prom = PrometheusProcess(str(prometheus_path()), work, exporter.port)
    adapter: AdapterProcess | None = None
    taken: dict[str, list[float]] = {"probe port": [], "serving port": []}
    try:
        prom.start()
        wait_until(lambda: prom.query("probe_bench_queue") != [], timeout=90, what="first scrape")
        adapter = start_adapter(
            work, prom.url, CONFIG, "--query-cache-ttl=0s", f"--max-requests-inflight={INFLIGHT}"
        )
        idle = {"probe port": [probe(adapter, False) for _ in range(50)]}
        idle["serving port"] = [probe(adapter, True) for _ in range(50)]
        for _ in range(a.rounds):
            for port, values in under_load(adapter, a.connections, a.seconds).items():
                taken[port].extend(values)
    finally:
        if adapter is not None:
            stop_adapter(adapter)
        prom.stop()
        exporter.close()
    load = f"{a.connections} connections of API load ({a.rounds} x {a.seconds:g} s)"
    print(f"\n/healthz, idle and under {load}\n")
    print("| port | idle p50 ms | loaded n | loaded p50 ms | loaded p99 ms | loaded max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for port, values in taken.items():
        idle_p50, p50 = ms(statistics.median(idle[port])), ms(statistics.median(values))
        print(f"| {port} | {idle_p50} | {len(values)} | {p50} | {ms(p99(values))} | {ms(max(values))} |")
    probe_p99, serving_p99 = p99(taken["probe port"]), p99(taken["serving port"])
    print(f"\nprobe port / serving port, loaded p99: {probe_p99 / serving_p99:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
