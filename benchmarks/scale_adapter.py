"""The adapter at scale, beside prometheus-adapter v0.12.0: discovery of 100,000 and 1,000,000
series, and ``pods/*`` over 10,000 pods.

Part of ``make bench-scale``. Discovery: a real Prometheus holds the series (cAdvisor-shaped:
``--metrics`` names x pods, one rule in prometheus-adapter's default form), then is left
idle; each adapter is started in turn and its discovery document polled until the last
metric is listed -- time to first serve, CPU until then, RSS then, CPU per later relist
(``discovery.measure``). ``pods/*``: 10,000 kwok pods in one namespace with one series each;
each adapter answers ``pods/*/load?labelSelector=app=web`` (every pod, a distinct
``metricLabelSelector`` per request so no cache answers) from the load generator, as the
aggregator calls it: requests/s, p50/p99 and CPU per request. prometheus-adapter runs with
its Kubernetes client limits raised (at its defaults its pod lister, not its work, would be
measured).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from pathlib import Path

import localcluster
from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import pods_rules
from localcluster.tools import FAKE_NODES, wait_until
from rules.config import GroupResource, parse_config
from rules.queries import ObjectQuery, custom_query
from shared.selectors import parse as parse_selector

from . import discovery
from .side_by_side import (
    RAISED_NAME,
    Figures,
    Workload,
    aggregator_identity,
    client_context,
    commands,
    measure,
    spawn,
    stop,
)

DISCOVERY_HEADER = (
    "| series | adapter | time to first serve s | CPU until first serve s | RSS at first serve MiB "
    "| CPU per relist s |"
)
DISCOVERY_ALIGN = "|---:|---|---:|---:|---:|---:|"
PODS_HEADER = "| pods | adapter | req/s | p50 ms | p99 ms | CPU ms/request |"
PODS_ALIGN = "|---:|---|---:|---:|---:|---:|"
PODS_RULES = pods_rules("scale")  # scale_load, served as `load`


def discovery_rows(cluster: localcluster.Cluster, work: Path, series: int, metrics: int = 100) -> list[str]:
    """One row per adapter for ``series`` series, from a Prometheus of its own."""
    exporter = Exporter()
    slow = series > 200_000  # a million lines take seconds to render and to scrape
    every, within = ("60s", "55s") if slow else ("1s", "1s")
    prom = PrometheusProcess(str(prometheus_path()), work / f"prom-{series}", exporter.port,
                             scrape_interval=every, scrape_timeout=within)  # fmt: skip
    prom.directory.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        total = discovery.seed(exporter, series, metrics)
        prom.start()
        wait_until(lambda: discovery.scraped(prom) >= total, timeout=600, what=f"{total} series scraped")
        exporter.lines.clear()  # Prometheus idle from here; the series stay in its head block
        time.sleep(3)
        (work / f"d{series}").mkdir(parents=True, exist_ok=True)
        cmds = commands(
            cluster, prom, work / f"d{series}", discovery.RULES,
            both=[f"--metrics-relist-interval={discovery.RELIST:g}s", "--metrics-max-age=30m"], raised=True,
        )  # fmt: skip
        ctx = client_context(cluster)
        last = f"disc_m{metrics - 1}_per_second"
        for name, argv, port in cmds:
            if name == "prometheus-adapter":
                continue  # discovery does not use the Kubernetes client: the raised run is the same
            d = discovery.measure(name, argv, port, work, ctx, last, 30.0)
            label = "prometheus-adapter" if name == RAISED_NAME else name
            rows.append(f"| {total:,} | {label} | {d.first_serve_s:.2f} | {d.cpu_to_first_s:.2f} | "
                        f"{d.rss_mib:.0f} | {d.relist_cpu_s:.3f} |")  # fmt: skip
            print(rows[-1], flush=True)
    finally:
        prom.stop()
        exporter.close()
    return rows


def seed_pods(cluster: localcluster.Cluster, exporter: Exporter, ns: str, n: int) -> list[str]:
    names = [f"web-{i}" for i in range(n)]
    cluster.kubectl("create", "namespace", ns, check=False)
    items = [
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
         "spec": {"nodeName": FAKE_NODES[i % len(FAKE_NODES)], "hostNetwork": True,
                  "containers": [{"name": "main", "image": "example.invalid/web"}]}}
        for i, name in enumerate(names)
    ]  # fmt: skip
    for i in range(0, n, 500):
        chunk = {"apiVersion": "v1", "kind": "List", "items": items[i : i + 500]}
        cluster.kubectl("apply", "--server-side", "-f", "-", timeout=300, input=json.dumps(chunk))
    for j, name in enumerate(names):
        exporter.set(f'scale_load{{namespace="{ns}",pod="{name}",slot="s"}}', j % 7)
    return names


def pods_rows(
    cluster: localcluster.Cluster, work: Path, n: int, requests: int, concurrency: int
) -> list[str]:
    exporter = Exporter()
    prom = PrometheusProcess(str(prometheus_path()), work / "prom-pods", exporter.port)
    prom.directory.mkdir(parents=True, exist_ok=True)
    ns = "scale-pods"
    served = []
    rows = []
    try:
        names = seed_pods(cluster, exporter, ns, n)
        prom.start()
        wait_until(lambda: len(prom.query("scale_load")) == n, timeout=120, what=f"{n} series scraped")
        rule = parse_config(PODS_RULES).rules[0]
        pods = GroupResource("", "pods")

        def url(i: int) -> str:
            query = {"labelSelector": "app=web", "metricLabelSelector": f"slot notin (x{i})"}
            return (
                f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/load?"
                + urllib.parse.urlencode(query)
            )

        def promql(i: int) -> str:
            return custom_query(
                rule, "scale_load", ObjectQuery(pods, ns, tuple(names), parse_selector(f"slot notin (x{i})"))
            )[0]

        path = Workload(f"pods/* {n} pods", url, promql, n)
        identity = aggregator_identity(cluster)
        (work / "pods").mkdir(parents=True, exist_ok=True)
        for name, argv, port in commands(cluster, prom, work / "pods", PODS_RULES, raised=True):
            if name == "prometheus-adapter":
                continue  # the raised run stands for it (see the module docstring)
            a = spawn(name, argv, port, work)
            served.append(a)
            wait_until(
                lambda a=a: _lists_all(a, path, identity), timeout=300, what=f"{name} to serve {n} pods"
            )
            f: Figures = measure(a, path, requests, concurrency, identity, seconds=90)
            label = "prometheus-adapter" if name == RAISED_NAME else name
            rows.append(f"| {n:,} | {label} | {f.rps:.1f} | {f.p50:.0f} | {f.p99:.0f} | {f.cpu_ms:.1f} |")
            print(rows[-1], flush=True)
            stop(a)
            served.remove(a)
    finally:
        for a in served:
            stop(a)
        prom.stop()
        exporter.close()
    return rows


def _lists_all(a: object, path: Workload, identity: object) -> bool:
    from .side_by_side import Served

    assert isinstance(a, Served)
    try:
        measure(a, path, 1, 1, identity, seconds=30)  # type: ignore[arg-type]
        return True
    except RuntimeError:
        return False
