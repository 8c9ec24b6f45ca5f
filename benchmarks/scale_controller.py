"""The controller at scale: 1,000 to 20,000 HPAs of 10 pods each, beside kube-controller-manager.

Part of ``make bench-scale`` (``python -m benchmarks.scale --parts controller [--sizes ...]``).
The local control plane holds N workloads of a custom resource with a scale subresource
(``workloads.bench.promhpa.io``), each with P kwok pods created directly on the fake nodes,
and one HPA per workload on an External metric served by the adapter from a real Prometheus
(every HPA asks the same metric, so the adapter answers from its cache and the measured cost
is the controllers'). A workload is a plain object, not a
Deployment, so 100,000 pods are created at the API server's pace, not a ReplicaSet
controller's and a scheduler's, and nothing else changes them once kwok has started them.

At each size, each controller runs alone in turn -- promhpa's and kube-controller-manager
v1.37.2 running only its HPA controller, taking turns at going first -- at each client limit
(``--kube-api-qps`` and ``--kube-api-burst``: both controllers' defaults 20/30, and raised to
1000/2000; at 10,000 HPAs (and the largest size) also with 50 workers each, and there promhpa
a second time with ``--scale-reads=get``, upstream's GET of every scale, to weigh the watch
against it in the same run; past 10,000 HPAs only the 50-worker setting, and a controller
that cannot finish its first reconcile there is reported, not fatal: that is where two cores
end), after its first full round, for ``--periods`` sync periods. Before each window the
bench waits (at most ``QUIET_WAIT`` s) until the API server and etcd are back to the CPU they
used with no controller running, so no window inherits the previous one's work:

* sync lag p50/p99: from when an HPA is due to when a worker takes it, from each one's
  ``workqueue_queue_duration_seconds{name="horizontalpodautoscaler"}`` (client-go's metric,
  the same buckets: a quantile is a bucket's upper bound), and promhpa's finer
  ``promhpa_controller_sync_lag_seconds``;
* reconciles/s, CPU per reconcile (the process' CPU over the window / its reconciles);
* peak RSS (VmHWM: the informers' initial lists included);
* API requests/s: every request the controller makes -- the kube-apiserver's
  ``apiserver_request_total`` (less the same window with no controller running: kwok, the
  adapter, the control plane) plus the requests the aggregator proxied to the adapter
  (``promhpa_adapter_requests_total``, which the kube-apiserver's counter does not include);
* API server CPU per reconcile: the kube-apiserver's CPU over the window, less its CPU with no
  controller running, over the reconciles.

``--json`` writes each window as an object (``docs/benchmarks.json``'s shape).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass, field
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
    "| CPU ms/reconcile | peak RSS MiB | API req/s | API server CPU ms/reconcile |"
)
ALIGN = "|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
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


QUIET_WAIT = 300.0  # seconds the bench waits at most for the control plane to go quiet
QUIET_CORES = 0.2  # the API server and etcd at most this busy with no controller: quiet
CONTROL_PLANE = ("apiserver", "etcd")
_ADAPTER_REQUESTS = re.compile(r"^promhpa_adapter_requests_total\{[^}]*\} (\S+)$", re.M)


@dataclass
class Result:
    rate: float
    lag_mean: float
    lag_p50: float
    lag_p99: float
    fine_p99: float | None  # promhpa's finer histogram
    cpu_ms: float
    rss_mib: float
    api_rps: float  # the kube-apiserver's and the aggregated server's requests, per second
    apiserver_ms: float  # the kube-apiserver's CPU per reconcile, above its idle
    cores: dict[str, float] = field(default_factory=dict)  # each process' cores over the window


@dataclass
class Idle:
    """The cluster with no controller running: what each window's figures are above."""

    api_rps: float
    apiserver_cores: float
    control_plane_cores: float


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

    kube = Kube(load(str(cluster.kubeconfig)))
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

    kube = Kube(load(str(cluster.kubeconfig)))
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
    cluster: localcluster.Cluster, proc: Any, url: str, n: int, sync: int, periods: int, idle: Idle,
    others: dict[str, int], adapter_requests: Any,
) -> Result:  # fmt: skip
    # measured after the first full round, or after two sync periods if the client limit
    # keeps it from finishing one sooner (at 20 qps, 10,000 HPAs take about 1,000 s a round:
    # then the window shows that backlog as lag)
    wait_until(lambda: "reconciliation_duration_seconds_count" in scrape(url), timeout=600,
               what="the controller's first reconcile")  # fmt: skip
    warm = time.monotonic() + 2 * sync
    wait_until(lambda: histogram(scrape(url))[0] >= n or time.monotonic() > warm, timeout=4 * sync + 60,
               what=f"the first full round of {n}")  # fmt: skip
    pids = {**cluster.pids, **others, "measured controller": proc.pid}
    spent0 = process_cpu(pids)
    before, cpu0, t0 = scrape(url), cpu_seconds(proc.pid), time.monotonic()
    req0, agg0 = api_requests(cluster), adapter_requests()
    time.sleep(sync * periods)
    spent1, window = process_cpu(pids), time.monotonic() - t0
    shares = sorted(((spent1[k] - spent0[k]) / window, k) for k in pids)
    print(
        "  cores in use during the window: " + ", ".join(f"{k} {c:.2f}" for c, k in reversed(shares)),
        flush=True,
    )
    after, cpu1, req1, agg1, elapsed = (
        scrape(url),
        cpu_seconds(proc.pid),
        api_requests(cluster),
        adapter_requests(),
        time.monotonic() - t0,
    )
    count = histogram(after)[0] - histogram(before)[0]
    fine = buckets(_LAG, after)
    lag_sum = _sum(_QUEUE_SUM, after) - _sum(_QUEUE_SUM, before)
    lag_count = _sum(_QUEUE_COUNT, after) - _sum(_QUEUE_COUNT, before)
    apiserver = spent1.get("apiserver", 0.0) - spent0.get("apiserver", 0.0) - idle.apiserver_cores * window
    direct, aggregated = max((req1 - req0) / elapsed - idle.api_rps, 0.0), (agg1 - agg0) / elapsed
    print(f"  API requests/s: {direct:.1f} to the kube-apiserver, {aggregated:.1f} aggregated", flush=True)
    return Result(
        count / elapsed,
        lag_sum / lag_count if lag_count else float("nan"),
        bucket_quantile(0.5, buckets(_QUEUE, before), buckets(_QUEUE, after)),
        bucket_quantile(0.99, buckets(_QUEUE, before), buckets(_QUEUE, after)),
        bucket_quantile(0.99, buckets(_LAG, before), fine) if fine else None,
        (cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]) / max(count, 1) * 1000,
        peak_rss_mib(proc.pid),
        direct + aggregated,
        max(apiserver, 0.0) / max(count, 1) * 1000,
        {k: c for c, k in shares},
    )


def control_plane_cores(cluster: localcluster.Cluster, seconds: float) -> tuple[float, float]:
    """(kube-apiserver, kube-apiserver + etcd) cores over ``seconds``."""
    pids = {k: cluster.pids[k] for k in CONTROL_PLANE if k in cluster.pids}
    c0, t0 = process_cpu(pids), time.monotonic()
    time.sleep(seconds)
    c1, took = process_cpu(pids), time.monotonic() - t0
    used = {k: (c1[k] - c0[k]) / took for k in pids}
    return used.get("apiserver", 0.0), sum(used.values())


def quiet(cluster: localcluster.Cluster, idle: Idle, sample: float = 5.0) -> None:
    """Before a controller starts: wait until the API server and etcd use at most their idle
    CPU plus a tenth of a core (a controller just stopped leaves them busy: its watches
    closing, the garbage of its lists), at most ``QUIET_WAIT`` s, and say how long it took."""
    t0 = time.monotonic()
    while True:
        _, used = control_plane_cores(cluster, sample)
        waited = time.monotonic() - t0
        if used <= idle.control_plane_cores + 0.1 or waited >= QUIET_WAIT:
            idle_cores = idle.control_plane_cores
            print(f"  control plane at {used:.2f} cores after {waited:.0f} s (idle {idle_cores:.2f})")
            return


def baseline(cluster: localcluster.Cluster, seconds: float) -> Idle:
    """API requests/s and the control plane's CPU with no controller running, once setup's
    work has died down: ``seconds``-long samples until the API server and etcd use under
    ``QUIET_CORES`` (kwok still starting 100,000 pods kept them near a core for minutes;
    measured then, "idle" would hide every controller's cost), at most ``QUIET_WAIT`` s."""
    t0 = time.monotonic()
    while True:
        r0, s0 = api_requests(cluster), time.monotonic()
        apiserver, both = control_plane_cores(cluster, seconds)
        idle = Idle((api_requests(cluster) - r0) / (time.monotonic() - s0), apiserver, both)
        if both <= QUIET_CORES or time.monotonic() - t0 >= QUIET_WAIT:
            return idle


def row(n: int, pods: int, label: str, setup: float, who: str, r: Result) -> str:
    """A table row; ``inf``: above the histogram's last finite bucket (10 s)."""
    fine = f" ({r.fine_p99:g})" if r.fine_p99 is not None else ""
    head = f"| {n} | {n * pods} | {label} | {setup:.0f} | {who} | {r.rate:.1f} | {r.lag_p50:g} | "
    tail = f"{r.cpu_ms:.2f} | {r.rss_mib:.0f} | {r.api_rps:.1f} | {r.apiserver_ms:.2f} |"
    return head + f"{r.lag_p99:g}{fine} | " + tail


# the per-process table: each window's cores, the measured controller first
PROCESSES = (
    ("measured controller", "measured controller"), ("apiserver", "kube-apiserver"), ("etcd", "etcd"),
    ("adapter", "adapter"), ("controller-manager", "kube-controller-manager (other controllers)"),
    ("kwok", "kwok"), ("prometheus", "Prometheus"), ("prometheus (metrics)", "Prometheus (the metric)"),
)  # fmt: skip
CORES_HEADER = "| HPAs | client limits | controller | " + " | ".join(t for _, t in PROCESSES) + " | total |"
CORES_ALIGN = "|---:|---|---|" + "---:|" * (len(PROCESSES) + 1)


def cores_row(n: int, label: str, who: str, r: Result) -> str:
    """One window in the per-process table: the cores each process used over it."""
    shown = [r.cores.get(k, 0.0) for k, _ in PROCESSES]
    cells = " | ".join(f"{c:.2f}" for c in shown)
    return f"| {n} | {label} | {who} | {cells} | {sum(r.cores.values()):.2f} |"


def record(run: int, n: int, who: str, setting: str, r: Result) -> dict[str, Any]:
    """One window as docs/benchmarks.json holds it."""
    over = r.lag_p99 == float("inf")
    out: dict[str, Any] = {
        "run": run, "hpas": n, "controller": who, "setting": setting,
        "reconciles_per_s": round(r.rate, 1), "p99_lag_s": None if over else r.lag_p99,
        "cpu_ms_per_reconcile": round(r.cpu_ms, 3), "peak_rss_mib": round(r.rss_mib),
        "api_requests_per_s": round(r.api_rps, 1), "apiserver_cpu_ms_per_reconcile": round(r.apiserver_ms, 3),
    }  # fmt: skip
    if over:
        out["over_range"] = True
    out["cores"] = {k: round(c, 3) for k, c in sorted(r.cores.items())}
    if r.fine_p99 is not None:  # promhpa's finer histogram (to 120 s)
        out["p99_lag_fine_s"] = r.fine_p99 if r.fine_p99 != float("inf") else None
    return out


def lag_mean(r: Result) -> str:
    return f"mean lag {r.lag_mean:.1f} s"


@dataclass
class Contender:
    """One controller at one setting: how to start it on a port, and what the table calls it."""

    who: str  # promhpa or kube-controller-manager
    name: str  # in the table
    start: Any  # (port, log) -> process


def contenders(cluster: localcluster.Cluster, a: argparse.Namespace, key: str) -> list[Contender]:
    _, flags = LIMITS[key]

    def ours(*extra: str) -> Any:
        return lambda port, log: start_controller_process(
            cluster.kubeconfig, log, f"--secure-port={port}",
            f"--horizontal-pod-autoscaler-sync-period={a.sync_period}s", "--log-level=warning",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", *flags, *extra,
        )  # fmt: skip

    out = [
        Contender("promhpa", "promhpa", ours()),
        Contender(
            "kube-controller-manager",
            "kcm",
            lambda port, log: start_kcm(cluster, log, port, a.sync_period, flags),
        ),
    ]
    if key == "workers":  # the watch weighed against upstream's GET of every scale, same run
        out.insert(1, Contender("promhpa", "promhpa (scale GET)", ours("--scale-reads=get")))
    return out


GOAL_SIZE = 10_000  # the lag goal's size: measured with 50 workers in every run that reaches it


def limits_at(n: int, sizes: list[int], limits: list[str]) -> list[str]:
    """The settings measured at ``n`` HPAs. 50 workers where 5 cannot keep up: at the goal's
    size and at the largest; past the goal's size only 50 workers (at 20 qps a round of
    20,000 HPAs takes 1,000 s and says nothing new, and each window there costs minutes)."""
    wide = n >= GOAL_SIZE or n == sizes[-1]
    return [k for k in limits if (k == "workers" and wide) or (k != "workers" and n <= GOAL_SIZE)]


def run(
    cluster: localcluster.Cluster,
    exporter: Exporter,
    work: Path,
    a: argparse.Namespace,
    others: dict[str, int],
    adapter_metrics: Any,
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Every size and client limit: the table's rows (the ratio lines printed after each
    group), the per-process table's, and the windows as records."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    wait_until(lambda: cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1", check=False).returncode == 0,
               timeout=60, what="the Workload CRD served")  # fmt: skip
    cluster.kubectl("create", "namespace", NS, check=False)
    exporter.set(f'{METRIC}{{namespace="{NS}",queue="shared"}}', a.pods * 5)  # exactly on target

    def adapter_requests() -> float:
        return sum(float(v) for v in _ADAPTER_REQUESTS.findall(adapter_metrics()))

    rows: list[str] = []
    cores: list[str] = []
    records: list[dict[str, Any]] = []
    done, turn = 0, 0
    sizes = sorted(int(x) for x in a.sizes.split(","))
    for n in sizes:
        t0 = time.monotonic()
        asyncio.run(create(cluster, done, n, a.pods))
        try:
            bound = 600 + (n - done) * a.pods * 0.02
            wait_until(lambda n=n: running_pods(cluster) >= n * a.pods, timeout=bound,
                       what=f"kwok to run {n * a.pods} pods")  # fmt: skip
        except AssertionError as e:
            if n <= GOAL_SIZE:
                raise
            print(f"  WARNING: stopped before measuring {n} HPAs: {e}", flush=True)
            break
        setup, done = time.monotonic() - t0, n
        idle = baseline(cluster, 10)
        print(f"  idle: {idle.api_rps:.1f} API req/s, control plane {idle.control_plane_cores:.2f} cores")
        for key in limits_at(n, sizes, a.limits):
            label = LIMITS[key][0]
            group = contenders(cluster, a, key)
            turn += 1
            group = group[turn % len(group) :] + group[: turn % len(group)]  # who goes first rotates
            results: dict[str, Result] = {}
            for c in group:
                quiet(cluster, idle)  # the last controller's (or setup's) work done first
                port = free_port()
                proc = c.start(port, work / f"{c.name.replace(' ', '-')}-{n}-{key}.log")
                try:
                    results[c.name] = measure(
                        cluster, proc, f"https://127.0.0.1:{port}", n, a.sync_period, a.periods, idle, others,
                        adapter_requests,
                    )  # fmt: skip
                except AssertionError as e:  # past the goal's size, where two cores may end: say so
                    if n <= GOAL_SIZE:
                        raise
                    print(f"  WARNING: {c.name} at {n} HPAs not measured: {e}", flush=True)
                finally:
                    stop_process(proc)
            # the table: promhpa's rows first
            ordered = sorted((c for c in group if c.name in results), key=lambda c: c.who != "promhpa")
            lines = [row(n, a.pods, label, setup, c.name, results[c.name]) for c in ordered]
            rows += lines
            cores += [cores_row(n, label, c.name, results[c.name]) for c in ordered]
            records += [
                record(a.run, n, c.who, label + (", scale GET" if "GET" in c.name else ""), results[c.name])
                for c in ordered
            ]
            print("\n".join(lines), flush=True)
            if "promhpa" not in results or "kcm" not in results:
                continue
            mine, theirs = results["promhpa"], results["kcm"]
            cpu, rss = mine.cpu_ms / theirs.cpu_ms, mine.rss_mib / theirs.rss_mib
            ratios = f"CPU/reconcile {cpu:.2f}x kcm, RSS {rss:.2f}x"
            if "promhpa (scale GET)" in results:
                get = results["promhpa (scale GET)"]
                share = mine.apiserver_ms / max(get.apiserver_ms, 1e-9)
                ratios += f"; API server CPU/reconcile {share:.2f}x the GET path's"
            print(
                f"  {n} HPAs, {label}: {ratios}; promhpa {lag_mean(mine)}, kcm {lag_mean(theirs)}", flush=True
            )
        left = running_pods(cluster)
        if left < n * a.pods:  # the rows above measured a cluster losing pods: say so
            print(f"  WARNING: {left} of {n * a.pods} pods still running after the {n}-HPA runs", flush=True)
    return rows, cores, records
