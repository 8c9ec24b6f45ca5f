"""Adapter benchmark: serving latency/throughput and discovery cost, against a real Prometheus.

    make bench-adapter        (or: python -m benchmarks.bench_adapter [--quick])

* serving: ``pods/*/<metric>?labelSelector=app=web`` over 100 and 1,000 pods, cold (query
  cache off: every request reaches Prometheus) and cached (identical queries reuse the
  result), with a bounded number of requests at a fixed concurrency on 127.0.0.1;
* discovery: time and peak Python memory of one relist over 10k and 100k series.

Object names for the selector come from an in-memory lister (the watch-backed cache's job),
so the figures are the adapter's and Prometheus' cost, not the Kubernetes API's.
Everything runs on loopback; each phase stops after its request count.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import timedelta
from pathlib import Path

import aiohttp
from aiohttp import web

from adapter.serving.app import build_app
from adapter.serving.registry import Registry
from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import pods_rules
from localcluster.tools import wait_until
from promclient.prometheus import Prometheus, PrometheusSettings
from rules.config import GroupResource, parse_config
from shared.selectors import Selector

CONFIG = pods_rules("bench")


class StaticLister:
    def __init__(self, names: list[str]) -> None:
        self._names = names

    async def names(self, namespace: str | None, gr: GroupResource, selector: Selector | None) -> list[str]:
        return self._names


async def serve_phase(
    prom_url: str, pods: int, cache_ttl: float, requests: int, concurrency: int
) -> dict[str, float]:
    config = parse_config(CONFIG)
    prom = Prometheus(PrometheusSettings(prom_url), cache_ttl=cache_ttl)
    registry = Registry(config, prom, timedelta(minutes=10))
    await registry.relist()
    names = [f"web-{i}" for i in range(pods)]
    app = build_app(config, registry, lister=StaticLister(names))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/apis/custom.metrics.k8s.io/v1beta2/namespaces/bench/pods/*/load?labelSelector=app%3Dweb"
    latencies: list[float] = []
    remaining = requests

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            t0 = time.perf_counter()
            async with session.get(url) as r:
                body = await r.json()
                if r.status != 200 or len(body["items"]) != pods:
                    raise RuntimeError(f"unexpected answer: {r.status}, {len(body.get('items', []))} items")
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    await runner.cleanup()
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


async def discovery_phase(prom_url: str) -> dict[str, float]:
    config = parse_config(CONFIG)
    prom = Prometheus(PrometheusSettings(prom_url, timeout=120), cache_ttl=0)
    registry = Registry(config, prom, timedelta(minutes=10))
    tracemalloc.start()
    t0 = time.perf_counter()
    await registry.relist()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "seconds": seconds,
        "peak_mib": peak / 2**20,
        "series": registry.index.series_count,
        "metrics": len(registry.index.custom),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests and 10k series only")
    a = ap.parse_args()
    requests = 200 if a.quick else 1000
    exporter = Exporter()
    work = Path(tempfile.mkdtemp(prefix="promhpa-bench-"))
    prom = PrometheusProcess(str(prometheus_path()), work, exporter.port)
    rows: list[str] = []
    try:
        for i in range(1000):
            exporter.set(f'bench_load{{namespace="bench",pod="web-{i}"}}', i % 7)
        prom.start()
        wait_until(lambda: len(prom.query("bench_load")) == 1000, timeout=60, what="1000 series scraped")
        rows.append("| phase | pods | cache | requests/s | p50 ms | p99 ms |")
        rows.append("|---|---:|---|---:|---:|---:|")
        for pods in (100, 1000):
            for label, ttl in (("cold", 0.0), ("cached", 60.0)):
                r = asyncio.run(serve_phase(prom.url, pods, ttl, requests, concurrency=8))
                rows.append(
                    f"| serve | {pods} | {label} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} |"
                )
        rows.append("")
        rows.append("| phase | series | metrics | seconds | peak MiB |")
        rows.append("|---|---:|---:|---:|---:|")
        for total in (10_000,) if a.quick else (10_000, 100_000):
            exporter.lines.clear()
            for i in range(total):
                exporter.set(f'bench_m{i % 100}{{namespace="ns{i % 50}",pod="p{i}"}}', 1)
            wait_until(
                lambda t=total: (
                    prom.query('count({__name__=~"bench_m.*"})')
                    and int(prom.query('count({__name__=~"bench_m.*"})')[0]["value"][1]) >= t
                ),
                timeout=180,
                what=f"{total} series",
            )
            d = asyncio.run(discovery_phase(prom.url))
            rows.append(
                f"| discovery | {d['series']:.0f} | {d['metrics']:.0f} | {d['seconds']:.2f} | "
                f"{d['peak_mib']:.1f} |"
            )
    finally:
        prom.stop()
        exporter.close()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
