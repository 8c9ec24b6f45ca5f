"""Discovery of 100,000 series: promhpa's adapter and prometheus-adapter v0.12.0, one run.

    make bench-discovery      (or: python -m benchmarks.discovery [--series 100000] [--rounds 3])

A real Prometheus holds ``--series`` series (``--metrics`` metric names x pods, the shape of
cAdvisor-style per-pod counters) under one rule in prometheus-adapter's default form
(``resources.template``, a ``name`` regex, ``rate`` in ``metricsQuery``). Each adapter is
started in turn, alternating for several rounds, with the same rule file, Prometheus and
kubeconfig; the benchmark polls its discovery document (as the aggregator does: on a
kept-alive connection, here every 10 ms) until the last metric is listed. It prints per
adapter the time to first serve (process start to that answer), the CPU the process spent
until then (start-up included, for both), its RSS then, and the CPU of one later relist
(measured over ``--relist-window`` with a 5 s relist interval), with promhpa /
prometheus-adapter ratios: below 1 favours promhpa.

The series are scraped from a static exporter until Prometheus holds them all, then the
exporter is emptied, so Prometheus is idle while the adapters are measured (the series
stay in its head block, inside the adapters' ``--metrics-max-age`` window).
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.tools import wait_until

from .side_by_side import Served, client_context, commands, cpu_seconds, setup, spawn, stop

RULES = """
rules:
- seriesQuery: '{__name__=~"^disc_.*_total$",namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
"""
POLL = 0.01  # seconds between polls of the discovery document
RELIST = 5.0  # seconds between discoveries while the relist cost is measured
HEADERS = {"X-Remote-User": "bench", "X-Remote-Group": "system:masters"}


@dataclass(frozen=True)
class Discovery:
    first_serve_s: float
    cpu_to_first_s: float
    rss_mib: float
    relist_cpu_s: float


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Poller:
    """Polls an adapter's custom-metrics discovery document as the aggregator does: on one
    kept-alive connection (opened again after a refusal or a reset), every ``POLL`` seconds.
    A fresh TLS connection per poll cost each adapter a handshake per poll, counted in its
    CPU until first serve, and a coarse poll added up to its interval to both times."""

    def __init__(self, a: Served, ctx: ssl.SSLContext) -> None:
        self.a, self.ctx = a, ctx
        self.conn: http.client.HTTPSConnection | None = None

    def lists(self, metric: str) -> bool:
        """Whether the document lists ``pods/<metric>``."""
        if self.conn is None:
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.a.port, context=self.ctx, timeout=5)
        try:
            self.conn.request("GET", "/apis/custom.metrics.k8s.io/v1beta1", headers=HEADERS)
            response = self.conn.getresponse()
            doc = json.loads(response.read())
        except (OSError, http.client.HTTPException, ValueError):
            self.close()
            return False
        return any(res.get("name") == f"pods/{metric}" for res in doc.get("resources", []))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def measure(
    name: str, argv: list[str], port: int, work: Path, ctx: ssl.SSLContext, last: str, window: float
) -> Discovery:
    started = time.monotonic()
    a = spawn(name, argv, port, work)
    poller = Poller(a, ctx)
    try:
        while not poller.lists(last):
            if a.proc.poll() is not None:
                raise RuntimeError(f"{name} exited (see {work / (name + '.log')})")
            if time.monotonic() - started > 600:
                raise RuntimeError(f"{name} did not list {last} within 600 s")
            time.sleep(POLL)
        first, cpu, rss = time.monotonic() - started, cpu_seconds(a.pid), rss_mib(a.pid)
        time.sleep(window)
        return Discovery(first, cpu, rss, (cpu_seconds(a.pid) - cpu) / (window / RELIST))
    finally:
        poller.close()
        stop(a)


def seed(exporter: Exporter, series: int, metrics: int) -> int:
    pods = series // metrics
    for m in range(metrics):
        for p in range(pods):
            exporter.set(f'disc_m{m}_total{{namespace="disc",pod="p-{p}"}}', p)
    return pods * metrics


def scraped(prom: PrometheusProcess) -> int:
    got = prom.query("count({__name__=~'disc_.*'})")
    return int(got[0]["value"][1]) if got else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=100_000)
    ap.add_argument("--metrics", type=int, default=100, help="metric names (the rest are pods)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--relist-window", type=float, default=30.0, help="seconds over which relists are measured"
    )
    a = ap.parse_args()
    ready = setup("promhpa-discovery-", "bench-discovery")
    if ready is None:
        return 2
    work, cluster, exporter = ready
    prom: PrometheusProcess | None = None
    got: dict[str, list[Discovery]] = {"promhpa": [], "prometheus-adapter": []}
    try:
        cluster.up()
        total = seed(exporter, a.series, a.metrics)
        prom = PrometheusProcess(str(prometheus_path()), work, exporter.port)
        prom.start()
        wait_until(lambda: scraped(prom) >= total, timeout=300, what=f"{total} series scraped")
        exporter.lines.clear()  # Prometheus idle from here; the series stay in its head block
        time.sleep(3)
        cmds = commands(
            cluster, prom, work, RULES,
            both=[f"--metrics-relist-interval={RELIST:g}s", "--metrics-max-age=10m"],
        )  # fmt: skip
        ctx = client_context(cluster)
        last = f"disc_m{a.metrics - 1}_per_second"
        for r in range(a.rounds):
            for name, argv, port in cmds if r % 2 == 0 else reversed(cmds):
                got[name].append(measure(name, argv, port, work, ctx, last, a.relist_window))
                print(f"round {r + 1}: {name}: {got[name][-1]}", flush=True)
    finally:
        if prom is not None:
            prom.stop()
        exporter.close()
        cluster.down(quiet=True)
    ours, theirs = (
        Discovery(*(statistics.median(getattr(d, k) for d in got[n]) for k in Discovery.__dataclass_fields__))
        for n in ("promhpa", "prometheus-adapter")
    )
    print(
        f"\nDiscovery of {total:,} series ({a.metrics} metrics x {total // a.metrics:,} pods), "
        f"median of {a.rounds} rounds\n"
    )
    print("| | promhpa | prometheus-adapter | ratio |")
    print("|---|---:|---:|---:|")
    for label, k, fmt in (
        ("time to first serve, s", "first_serve_s", "{:.2f}"),
        ("CPU until first serve, s", "cpu_to_first_s", "{:.2f}"),
        ("RSS at first serve, MiB", "rss_mib", "{:.0f}"),
        ("CPU per relist, s", "relist_cpu_s", "{:.3f}"),
    ):
        x, y = getattr(ours, k), getattr(theirs, k)
        print(
            f"| {label} | {fmt.format(x)} | {fmt.format(y)} | **{x / y:.2f}x** |"
            if y
            else f"| {label} | {x} | {y} | - |"
        )
    print("\n(ratio below 1 favours promhpa; both include process start-up; Prometheus idle during the runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
