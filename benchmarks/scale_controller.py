"""The controller at scale: 1,000 to 10,000 HPAs of 10 pods each, beside kube-controller-manager.

    python -m benchmarks.scale_controller [--sizes 1000,5000,10000] [--pods 10] [--limits default,raised]

Part of ``make bench-scale``. The local control plane holds N workloads of a custom resource
with a scale subresource (``workloads.bench.promhpa.io``), each with P kwok pods created
directly on the fake nodes, and one HPA per workload on an External metric served by the
adapter from a real Prometheus (every HPA asks the same metric, so the adapter answers from
its cache and the measured cost is the controllers'). A workload is a plain object, not a
Deployment, so 100,000 pods are created at the API server's pace, not a ReplicaSet
controller's and a scheduler's, and nothing else changes them once kwok has started them.

At each size, each controller runs alone in turn -- promhpa's, then kube-controller-manager
v1.37.2 running only its HPA controller -- at each client limit (``--kube-api-qps`` and
``--kube-api-burst``: both controllers' defaults 20/30, and raised to 1000/2000; at the
largest size also with 50 workers each), after its first full round, for ``--periods`` sync
periods:

* sync lag p50/p99: from when an HPA is due to when a worker takes it, from each one's
  ``workqueue_queue_duration_seconds{name="horizontalpodautoscaler"}`` (client-go's metric,
  the same buckets: a quantile is a bucket's upper bound), and promhpa's finer
  ``promhpa_controller_sync_lag_seconds``;
* reconciles/s, CPU per reconcile (the process' CPU over the window / its reconciles);
* peak RSS (VmHWM: the informers' initial lists included);
* API requests/s: the kube-apiserver's ``apiserver_request_total`` over the window, less the
  same window with neither controller running (kwok, the adapter, the control plane).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import localcluster
from localcluster.prometheus import Exporter
from localcluster.promhpa import start_controller_process, stop_process
from localcluster.tools import FAKE_NODES, free_port, wait_until

from .bench_controller import LIMITS, cpu_seconds, histogram, peak_rss_mib, scrape, start_kcm

NS = "scale"
GROUP = "bench.promhpa.io"
WORKLOADS = f"/apis/{GROUP}/v1/namespaces/{NS}/workloads"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"workloads.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "workloads", "singular": "workload", "kind": "Workload"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                          "selector": {"type": "string"}}},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                            "selector": {"type": "string"}}},
            }}},
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}},
        }],
    },
}  # fmt: skip
METRIC = "scale_queue_depth"
RULES = f"""
externalRules:
- seriesQuery: '{{__name__="{METRIC}"}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
"""
HEADER = (
    "| HPAs | pods | client limits | setup s | controller | reconciles/s | lag p50 s | lag p99 s "
    "| CPU ms/reconcile | peak RSS MiB | API req/s |"
)
ALIGN = "|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|"
_QUEUE = re.compile(
    r"^workqueue_queue_duration_seconds_bucket"
    r'\{(?=[^}]*name="horizontalpodautoscaler")[^}]*le="([^"]+)"[^}]*\} (\S+)$',
    re.M,
)
_QUEUE_SUM = re.compile(
    r'^workqueue_queue_duration_seconds_sum\{name="horizontalpodautoscaler"\} (\S+)$', re.M
)
_QUEUE_COUNT = re.compile(
    r'^workqueue_queue_duration_seconds_count\{name="horizontalpodautoscaler"\} (\S+)$', re.M
)
_LAG = re.compile(r'^promhpa_controller_sync_lag_seconds_bucket\{le="([^"]+)"\} (\S+)$', re.M)
_REQUESTS = re.compile(r"^apiserver_request_total\{[^}]*\} (\S+)$", re.M)


@dataclass
class Result:
    rate: float
    lag_mean: float
    lag_p50: float
    lag_p99: float
    fine_p99: float | None  # promhpa's finer histogram
    cpu_ms: float
    rss_mib: float
    api_rps: float


def buckets(pattern: re.Pattern[str], text: str) -> list[tuple[float, float]]:
    out: dict[float, float] = {}
    for le, value in pattern.findall(text):
        key = float("inf") if le == "+Inf" else float(le)
        out[key] = out.get(key, 0.0) + float(value)
    return sorted(out.items())


def bucket_quantile(q: float, before: list[tuple[float, float]], after: list[tuple[float, float]]) -> float:
    """The upper bound of the bucket holding the q-quantile of what was observed in between."""
    was = dict(before)
    diff = [(le, count - was.get(le, 0.0)) for le, count in after]
    total = diff[-1][1] if diff else 0.0
    for le, count in diff:
        if total and count >= q * total:
            return le
    return float("nan")


def _sum(pattern: re.Pattern[str], text: str) -> float:
    return sum(float(v) for v in pattern.findall(text))


def api_requests(cluster: localcluster.Cluster) -> float:
    return sum(float(v) for v in _REQUESTS.findall(cluster.kubectl("get", "--raw", "/metrics").stdout))


def workload(i: int, pods: int) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Workload", "metadata": {"name": f"w{i}", "namespace": NS},
            "spec": {"replicas": pods, "selector": f"app=w{i}"}}  # fmt: skip


def pod(i: int, j: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"w{i}-{j}", "namespace": NS, "labels": {"app": f"w{i}"}},
        "spec": {"nodeName": FAKE_NODES[(i * 31 + j) % len(FAKE_NODES)], "hostNetwork": True,
                 # never evicted: a fake node that misses heartbeats while 100,000 pods are
                 # created must not have its 33,000 pods deleted mid-measurement
                 "tolerations": [{"operator": "Exists"}],
                 "containers": [{"name": "c", "image": "example.invalid/b",
                                 "resources": {"requests": {"cpu": "100m"}}}]},
    }  # fmt: skip


def hpa(i: int, pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"w{i}", "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": f"{GROUP}/v1", "kind": "Workload", "name": f"w{i}"},
            "minReplicas": 1, "maxReplicas": pods * 2,
            # every HPA the same metric and selector: the adapter answers from its cache
            "metrics": [{"type": "External", "external": {
                "metric": {"name": METRIC, "selector": {"matchLabels": {"queue": "shared"}}},
                "target": {"type": "AverageValue", "averageValue": "5"}}}],
        },
    }  # fmt: skip


async def create(
    cluster: localcluster.Cluster, start: int, end: int, pods: int, concurrency: int = 48
) -> None:
    """Workloads (with their status: replicas and selector), their pods, their HPAs."""
    from shared.kube.client import Kube, load

    kube = Kube(load(str(cluster.kubeconfig))).on_loop()
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            w = await kube.post(WORKLOADS, workload(i, pods))
            w["status"] = {"replicas": pods, "selector": f"app=w{i}"}
            await kube.put(f"{WORKLOADS}/w{i}/status", w)
            for j in range(pods):
                await kube.post(f"/api/v1/namespaces/{NS}/pods", pod(i, j))
            await kube.post(f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers", hpa(i, pods))

    try:
        for chunk in range(start, end, 500):
            await asyncio.gather(*(one(i) for i in range(chunk, min(chunk + 500, end))))
            print(f"  {min(chunk + 500, end)}/{end} workloads, pods and HPAs", file=sys.stderr, flush=True)
    finally:
        await kube.aclose()


def running_pods(cluster: localcluster.Cluster) -> int:
    """Running pods in the namespace, counted from a metadata-only list (kubectl's full list of
    100,000 pods took gigabytes and a core)."""
    return asyncio.run(_count_running(cluster))


async def _count_running(cluster: localcluster.Cluster) -> int:
    from shared.kube.client import Kube, load

    kube = Kube(load(str(cluster.kubeconfig))).on_loop()
    count, token = 0, ""
    try:
        while True:
            query = [("fieldSelector", "status.phase=Running"), ("limit", "5000")]
            query += [("continue", token)] if token else []
            page = await kube.get(f"/api/v1/namespaces/{NS}/pods", query, timeout=120)
            count += len(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return count
    finally:
        await kube.aclose()


def process_cpu(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of each named process (gone ones: 0)."""
    out = {}
    for name, pid in pids.items():
        try:
            out[name] = sum(cpu_seconds(pid))
        except OSError:
            out[name] = 0.0
    return out


def measure(
    cluster: localcluster.Cluster, proc: Any, url: str, n: int, sync: int, periods: int, baseline_rps: float,
    others: dict[str, int] | None = None,
) -> Result:  # fmt: skip
    # measured after the first full round, or after two sync periods if the client limit
    # keeps it from finishing one sooner (at 20 qps, 10,000 HPAs take about 1,000 s a round:
    # then the window shows that backlog as lag)
    wait_until(lambda: "reconciliation_duration_seconds_count" in scrape(url), timeout=600,
               what="the controller's first reconcile")  # fmt: skip
    warm = time.monotonic() + 2 * sync
    wait_until(lambda: histogram(scrape(url))[0] >= n or time.monotonic() > warm, timeout=4 * sync + 60,
               what=f"the first full round of {n}")  # fmt: skip
    pids = {**cluster.pids, **(others or {}), "measured controller": proc.pid}
    spent0 = process_cpu(pids)
    before, cpu0, req0, t0 = scrape(url), cpu_seconds(proc.pid), api_requests(cluster), time.monotonic()
    time.sleep(sync * periods)
    spent1, window = process_cpu(pids), time.monotonic() - t0
    shares = sorted(((spent1[k] - spent0[k]) / window, k) for k in pids)
    print(
        "  cores in use during the window: " + ", ".join(f"{k} {c:.2f}" for c, k in reversed(shares)),
        flush=True,
    )
    after, cpu1, req1, elapsed = (
        scrape(url),
        cpu_seconds(proc.pid),
        api_requests(cluster),
        time.monotonic() - t0,
    )
    count = histogram(after)[0] - histogram(before)[0]
    fine = buckets(_LAG, after)
    lag_sum = _sum(_QUEUE_SUM, after) - _sum(_QUEUE_SUM, before)
    lag_count = _sum(_QUEUE_COUNT, after) - _sum(_QUEUE_COUNT, before)
    return Result(
        count / elapsed,
        lag_sum / lag_count if lag_count else float("nan"),
        bucket_quantile(0.5, buckets(_QUEUE, before), buckets(_QUEUE, after)),
        bucket_quantile(0.99, buckets(_QUEUE, before), buckets(_QUEUE, after)),
        bucket_quantile(0.99, buckets(_LAG, before), fine) if fine else None,
        (cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]) / max(count, 1) * 1000,
        peak_rss_mib(proc.pid),
        max((req1 - req0) / elapsed - baseline_rps, 0.0),
    )


def baseline(cluster: localcluster.Cluster, seconds: float) -> float:
    """API requests/s with neither controller running."""
    r0, t0 = api_requests(cluster), time.monotonic()
    time.sleep(seconds)
    return (api_requests(cluster) - r0) / (time.monotonic() - t0)


def row(n: int, pods: int, label: str, setup: float, who: str, r: Result) -> str:
    """A table row; ``inf``: above the histogram's last finite bucket (10 s)."""
    fine = f" ({r.fine_p99:g})" if r.fine_p99 is not None else ""
    head = f"| {n} | {n * pods} | {label} | {setup:.0f} | {who} | {r.rate:.1f} | {r.lag_p50:g} | "
    return head + f"{r.lag_p99:g}{fine} | {r.cpu_ms:.2f} | {r.rss_mib:.0f} | {r.api_rps:.1f} |"


def lag_mean(r: Result) -> str:
    return f"mean lag {r.lag_mean:.1f} s"


def run(
    cluster: localcluster.Cluster,
    exporter: Exporter,
    work: Path,
    a: argparse.Namespace,
    others: dict[str, int],
) -> list[str]:
    """Every size and client limit; the table's rows, the ratio lines after each pair."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    wait_until(lambda: cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1", check=False).returncode == 0,
               timeout=60, what="the Workload CRD served")  # fmt: skip
    cluster.kubectl("create", "namespace", NS, check=False)
    exporter.set(f'{METRIC}{{namespace="{NS}",queue="shared"}}', a.pods * 5)  # exactly on target
    rows, done = [], 0
    sizes = sorted(int(x) for x in a.sizes.split(","))
    for n in sizes:
        t0 = time.monotonic()
        asyncio.run(create(cluster, done, n, a.pods))
        wait_until(lambda n=n: running_pods(cluster) >= n * a.pods, timeout=600 + (n - done) * a.pods * 0.02,
                   what=f"kwok to run {n * a.pods} pods")  # fmt: skip
        setup, done = time.monotonic() - t0, n
        base = baseline(cluster, 10)
        for key in a.limits:
            if key == "workers" and n != sizes[-1]:
                continue  # 50 workers: where 5 cannot keep up, the largest size (the run's time)
            label, flags = LIMITS[key]
            port = free_port()
            ours = start_controller_process(
                cluster.kubeconfig, work / f"promhpa-{n}-{key}.log", f"--secure-port={port}",
                f"--horizontal-pod-autoscaler-sync-period={a.sync_period}s", "--log-level=warning",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", *flags,
            )  # fmt: skip
            try:
                mine = measure(
                    cluster, ours, f"https://127.0.0.1:{port}", n, a.sync_period, a.periods, base, others
                )
            finally:
                stop_process(ours)
            port = free_port()
            kcm = start_kcm(cluster, work / f"kcm-{n}-{key}.log", port, a.sync_period, flags)
            try:
                theirs = measure(
                    cluster, kcm, f"https://127.0.0.1:{port}", n, a.sync_period, a.periods, base, others
                )
            finally:
                stop_process(kcm)
            pair = [
                row(n, a.pods, label, setup, "promhpa", mine),
                row(n, a.pods, label, setup, "kcm", theirs),
            ]
            rows += pair
            print("\n".join(pair), flush=True)
            cpu, rss = mine.cpu_ms / theirs.cpu_ms, mine.rss_mib / theirs.rss_mib
            ratios = f"CPU/reconcile {cpu:.2f}x kcm, RSS {rss:.2f}x"
            print(
                f"  {n} HPAs, {label}: {ratios}; promhpa {lag_mean(mine)}, kcm {lag_mean(theirs)}", flush=True
            )
        left = running_pods(cluster)
        if left < n * a.pods:  # the rows above measured a cluster losing pods: say so
            print(f"  WARNING: {left} of {n * a.pods} pods still running after the {n}-HPA runs", flush=True)
    return rows
