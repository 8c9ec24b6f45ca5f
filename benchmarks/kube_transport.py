"""Kubernetes call cost by transport, on the local control plane (part of `make bench-controller`).

    python -m benchmarks.kube_transport [--calls 2000] [--concurrency 5]

The controller reads a scale subresource (and a metrics API) for every reconcile. This
sends the same GET of one Deployment's ``/scale`` through ``Kube``'s transport,
``shared.httpclient`` on the event loop (``shared.kube.http``), and through the two it
replaced: the kubernetes client's own (urllib3) in worker threads, and an aiohttp session
with the same TLS context and credentials, ``--concurrency`` at a time (the controller's
default workers), in turn for three rounds, and prints calls/s, p50/p99 and this process'
CPU per call (threads included), median round. Loopback only; bounded by ``--calls``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import orjson

import localcluster
from shared.kube.client import Kube, load
from shared.kube.http import AsyncHTTP, ssl_context

NS = "transport"
PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/web/scale"
DEPLOYMENT = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: example.invalid/web}}]}}
"""


class Getter(Protocol):
    async def get(self, path: str) -> Any: ...


class ClientThreads:
    """The kubernetes client's own transport, each call in a worker thread: how ``Kube``
    sent its calls before they all moved to the event loop."""

    def __init__(self, kube: Kube) -> None:
        self.api = kube.api

    def _get(self, path: str) -> Any:
        resp = self.api.call_api(
            path,
            "GET",
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
        )
        return orjson.loads(resp.read())

    async def get(self, path: str) -> Any:
        return await asyncio.to_thread(self._get, path)


class AiohttpSession:
    """The event loop's transport before ``shared.httpclient``: an aiohttp session with the
    client configuration's TLS context and credentials, as ``shared.kube.http`` had it."""

    def __init__(self, kube: Kube) -> None:
        conf = kube.api.configuration
        self.base = conf.host.rstrip("/")
        self.ssl = ssl_context(conf)
        auth = AsyncHTTP(conf, kube.api.user_agent)._auth_headers()
        self.headers = {"Accept": "application/json", "Content-Type": "application/json", **auth}
        self.session: aiohttp.ClientSession | None = None

    async def get(self, path: str) -> Any:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=32, ssl=self.ssl),
                headers=self.headers,
                skip_auto_headers=("Accept-Encoding",),
            )
        async with self.session.get(self.base + path, timeout=aiohttp.ClientTimeout(total=30)) as resp:
            raw = await resp.read()
            resp.raise_for_status()
        return orjson.loads(raw)

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


async def run(kube: Getter, calls: int, concurrency: int) -> tuple[float, float, list[float]]:
    """(wall seconds, CPU seconds, latencies) of ``calls`` GETs, ``concurrency`` at a time."""
    await kube.get(PATH)  # connections and credentials warm, as in a running controller
    left = iter(range(calls))
    latencies: list[float] = []

    async def worker() -> None:
        for _ in left:
            t = time.perf_counter()
            await kube.get(PATH)
            latencies.append(time.perf_counter() - t)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - wall, time.process_time() - cpu, latencies


async def measure(kube: Getter, calls: int, concurrency: int) -> dict[str, float]:
    wall, cpu, lat = await run(kube, calls, concurrency)
    lat.sort()
    return {
        "rate": calls / wall,
        "p50": lat[len(lat) // 2] * 1000,
        "p99": lat[int(len(lat) * 0.99)] * 1000,
        "cpu": cpu / calls * 1000,
    }


async def rounds(kube: Kube, calls: int, concurrency: int, n: int) -> dict[str, dict[str, float]]:
    on_loop, session = kube, AiohttpSession(kube)
    order: list[tuple[str, Getter]] = [
        ("kubernetes client, threads (before)", ClientThreads(kube)),
        ("aiohttp session, event loop (before)", session),
        ("shared.httpclient, event loop", on_loop),
    ]
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _ in order}
    try:
        for r in range(n):
            for name, k in order[r % 3 :] + order[: r % 3]:  # each transport first once
                got[name].append(await measure(k, calls, concurrency))
    finally:
        await on_loop.aclose()
        await session.aclose()
    return {
        name: min(rs, key=lambda m: abs(m["cpu"] - statistics.median(x["cpu"] for x in rs)))
        for name, rs in got.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    cluster = localcluster.Cluster(Path(tempfile.mkdtemp(prefix="bench-transport-")) / "cluster")
    cluster.up()
    try:
        cluster.kubectl("create", "namespace", NS)
        cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
        result = asyncio.run(rounds(Kube(load(str(cluster.kubeconfig))), a.calls, a.concurrency, a.rounds))
    finally:
        cluster.down()
    base = result["kubernetes client, threads (before)"]
    print(f"\nGET {PATH}, {a.calls} calls, {a.concurrency} at a time (median of {a.rounds} rounds)\n")
    print("| transport | calls/s | p50 ms | p99 ms | CPU ms/call | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in result.items():
        print(
            f"| {name} | {m['rate']:.0f} | {m['p50']:.2f} | {m['p99']:.2f} | {m['cpu']:.3f} "
            f"| {m['cpu'] / base['cpu']:.2f}x |"
        )


if __name__ == "__main__":
    main()
