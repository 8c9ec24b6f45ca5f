"""What forwarding to an upstream metrics server costs: `python -m benchmarks.forwarding`.

On the local control plane: prometheus-adapter v0.12.0 serves one external metric, promhpa
serves another itself and forwards the first to prometheus-adapter (``upstreams``). Three
phases, one after the other, each ``--requests`` GETs from ``--concurrency`` clients on
kept-alive connections, straight to the servers (not through the aggregator, whose own cost
would hide the difference):

- prometheus-adapter answering directly (a ServiceAccount token, checked by its delegated
  authentication and authorization, as the forwarded requests are);
- promhpa forwarding to it (promhpa on loopback without its own authentication, so the row
  shows the forwarding alone: promhpa's checks of the caller are in ``side_by_side``);
- promhpa answering its own metric from Prometheus.

Each row: requests/s, p50 and p99 latency, and promhpa's CPU per request where promhpa
serves; the forwarding overhead is the forwarded row's p50 minus the direct row's. Loopback
only, bounded in count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

import localcluster
from localcluster.manifests import binding
from localcluster.promhpa import external_rules, start_adapter, start_prometheus_adapter, stop_adapter
from localcluster.rig import Rig
from localcluster.tools import Binaries, cache_bin, insecure_tls

NS = "fwd"
PATH = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(url: str, token: str | None, requests: int, concurrency: int) -> list[float]:
    """``requests`` GETs of ``url`` from ``concurrency`` clients; each latency in ms."""
    latencies: list[float] = []
    left = requests
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def one(session: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            t0 = time.perf_counter()
            async with session.get(url, headers=headers) as r:
                body = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{url}: {r.status} {body[:200]!r}")
            latencies.append((time.perf_counter() - t0) * 1000)

    connector = aiohttp.TCPConnector(ssl=insecure_tls(), limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one(session) for _ in range(concurrency)))
    return latencies


def row(name: str, lat: list[float], seconds: float, cpu_ms: float | None) -> str:
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    cpu = f"{cpu_ms:.3f}" if cpu_ms is not None else "-"
    return f"| {name} | {len(lat) / seconds:.0f} | {statistics.median(lat):.2f} | {p99:.2f} | {cpu} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    if not Path(Binaries(cache_bin()).prometheus_adapter).exists():
        print("prometheus-adapter is not built: run `make cluster-tools`", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="promhpa-bench-forwarding-"))
    with Rig(localcluster.Cluster(work / "cluster"), work) as rig:
        cluster, prometheus = rig.cluster, rig.prometheus
        rig.publish(f'own_queue_depth{{namespace="{NS}",queue="q"}}', 7)
        rig.publish(f'fw_queue_depth{{namespace="{NS}",queue="q"}}', 7)
        sa = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "fwd", "namespace": NS}},
            binding("fwd-reader", "cluster-admin", NS, "fwd"),
        ]
        cluster.apply(sa)
        token = cluster.kubectl("-n", NS, "create", "token", "fwd", "--duration=1h").stdout.strip()
        (work / "token").write_text(token)
        upstream = start_prometheus_adapter(
            cluster, work / "pa", prometheus.url, external_rules("fw_queue_depth")
        )
        rig.on_exit(lambda: stop_adapter(upstream))
        rules = external_rules("own_queue_depth") + (
            f"upstreams:\n- name: pa\n  url: https://127.0.0.1:{upstream.port}\n"
            f"  insecureSkipTLSVerify: true\n  bearerTokenFile: {work / 'token'}\n  external: ['^fw_.*$']\n"
        )
        (work / "promhpa").mkdir()
        ours = start_adapter(
            work / "promhpa", prometheus.url, rules, "--query-cache-ttl=0s", "--log-level=warning"
        )
        rig.on_exit(lambda: stop_adapter(ours))
        phases = [
            ("prometheus-adapter, direct", f"{upstream.url}{PATH}/fw_queue_depth", token, None),
            (
                "promhpa, forwarding to prometheus-adapter",
                f"{ours.url}{PATH}/fw_queue_depth",
                None,
                ours.proc.pid,
            ),
            ("promhpa, its own metric", f"{ours.url}{PATH}/own_queue_depth", None, ours.proc.pid),
        ]
        rows = [
            f"| path ({a.requests} requests, {a.concurrency} concurrent) | req/s | p50 ms | p99 ms "
            "| promhpa CPU ms/req |",
            "|---|---:|---:|---:|---:|",
        ]
        p50 = {}
        for name, url, tok, pid in phases:
            asyncio.run(drive(url, tok, 200, a.concurrency))  # warm: connections, caches, discovery
            cpu0, t0 = (cpu_seconds(pid) if pid else 0.0), time.monotonic()
            lat = asyncio.run(drive(url, tok, a.requests, a.concurrency))
            seconds = time.monotonic() - t0
            cpu = (cpu_seconds(pid) - cpu0) / a.requests * 1000 if pid else None
            rows.append(row(name, lat, seconds, cpu))
            p50[name] = statistics.median(lat)
            print(rows[-1], flush=True)
    print("\n".join(rows))
    direct, forwarded = p50["prometheus-adapter, direct"], p50["promhpa, forwarding to prometheus-adapter"]
    print(f"forwarding adds {forwarded - direct:.2f} ms at p50 ({forwarded / direct:.2f}x the direct answer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
