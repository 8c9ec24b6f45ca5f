"""``make bench-scale``: promhpa at 10,000 HPAs and a million series, beside the incumbents.

    python -m benchmarks.scale [--sizes 1000,5000,10000,20000] [--series 100000,1000000] [--update-docs]

One command for docs/benchmarks.md: the controller at 1,000 / 5,000 / 10,000 / 20,000 HPAs of
10 pods each beside kube-controller-manager v1.37.2's HPA controller (``scale_controller``), and the
adapter's discovery at 100,000 and 1,000,000 series and ``pods/*`` over 10,000 pods beside
prometheus-adapter v0.12.0 (``scale_adapter``). Everything runs on this machine, on loopback,
each phase bounded in time; the tables are printed and, with ``--update-docs``, written into
docs/benchmarks.md with the machine, the versions and the command.
"""

from __future__ import annotations

import argparse
import ssl
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import localcluster
from benchmarks.doc_tables import invocation, update_figures, update_section
from localcluster.rig import Rig
from localcluster.tools import ROOT

from . import scale_controller
from .bench_controller import LIMITS, fleet_flags

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def other_runs(windows: list[dict[str, Any]], run: int) -> list[str]:
    """A line per other run on record: each controller's p99 lag per size and setting."""
    lines = []
    for r in sorted({w["run"] for w in windows} - {run}):
        shown = [
            f"{w['hpas']} HPAs {w['setting']} {w['controller']} "
            + ("over 10 s" if w.get("over_range") else f"{w['p99_lag_s']:g} s")
            for w in windows
            if w["run"] == r
        ]
        lines.append(f"- run {r}, p99 lag: " + "; ".join(shown))
    return lines


def controller_part(a: argparse.Namespace, work: Path) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    # no kube-scheduler: every pod is bound to its fake node when created (nodeName), and at
    # 100,000 pods a scheduler only follows their status updates, on the measured cores
    cluster = localcluster.Cluster(work / "cluster", node_monitor_grace="3600s", scheduler=False)
    with Rig(cluster, work) as rig:
        rig.publish(f'{scale_controller.METRIC}{{namespace="seed",queue="seed"}}', 0)
        # every HPA asks the same value: answered from the adapter's cache (10 s)
        adapter = rig.adapter(scale_controller.RULES, "--query-cache-ttl=10s")
        prometheus = rig.prometheus
        others = {
            "adapter": adapter.proc.pid,
            "prometheus (metrics)": prometheus.proc.pid if prometheus.proc else 0,
        }
        return scale_controller.run(
            cluster, rig.exporter, work, a, others, adapter_metrics(cluster, adapter.url)
        )


def adapter_metrics(cluster: localcluster.Cluster, url: str) -> Callable[[], str]:
    """Reads the adapter's /metrics as the aggregator would reach it: the front-proxy client
    certificate, asking as a cluster admin (the adapter authorizes it by SubjectAccessReview)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # its self-signed serving certificate
    ctx.load_cert_chain(cluster.pki / "front-proxy-client.crt", cluster.pki / "front-proxy-client.key")
    ask = {"X-Remote-User": "bench", "X-Remote-Group": "system:masters"}

    def read() -> str:
        request = urllib.request.Request(f"{url}/metrics", headers=ask)
        with urllib.request.urlopen(request, timeout=10, context=ctx) as r:
            return str(r.read().decode())

    return read


def adapter_part(a: argparse.Namespace, work: Path) -> tuple[list[str], list[str]]:
    from . import scale_adapter

    cluster = localcluster.Cluster(work / "cluster-adapter", scheduler=False)
    discovery = [scale_adapter.DISCOVERY_HEADER, scale_adapter.DISCOVERY_ALIGN]
    pods = [scale_adapter.PODS_HEADER, scale_adapter.PODS_ALIGN]
    try:
        cluster.up()
        for series in (int(x) for x in a.series.split(",")):
            discovery += scale_adapter.discovery_rows(cluster, work, series)
        pods += scale_adapter.pods_rows(cluster, work, a.pods_star, a.requests, a.concurrency)
    finally:
        cluster.down(quiet=True)
    return discovery, pods


def machine() -> list[str]:
    """What the figures were measured on: cores, memory, the versions of everything."""
    import os
    import platform

    from localcluster.tools import K8S_VERSION

    mem = next(
        (int(line.split()[1]) // 1024 // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
         if line.startswith("MemTotal:")), 0)  # fmt: skip
    versions = dict(
        line.split("=", 1) for line in (ROOT / "hack" / "versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )  # fmt: skip
    return [
        f"- machine: {os.cpu_count()} cores, {mem} GiB, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}",
        f"- Kubernetes {K8S_VERSION} (kube-apiserver, kube-controller-manager), etcd "
        f"{versions.get('ETCD_VERSION', '?')}, kwok {versions.get('KWOK_VERSION', '?')}, Prometheus "
        f"{versions.get('PROMETHEUS_VERSION', '?')}, prometheus-adapter "
        f"{versions.get('PROMETHEUS_ADAPTER_VERSION', '?')}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fleet_flags(ap, "1000,5000,10000,20000", "pods per workload")
    ap.add_argument(
        "--limits",
        default="default,raised,workers",
        help="client limits and workers (workers: at the largest size only): "
        + ", ".join(f"{k} ({v[0]})" for k, v in LIMITS.items()),
    )
    ap.add_argument(
        "--parts", default="controller,adapter", help="controller, adapter or both (comma-separated)"
    )
    ap.add_argument("--series", default="100000,1000000", help="series counts for discovery, comma-separated")
    ap.add_argument("--pods-star", type=int, default=10_000, help="pods behind one pods/* request")
    ap.add_argument("--requests", type=int, default=300, help="pods/* requests per adapter")
    ap.add_argument("--concurrency", type=int, default=8, help="pods/* requests in flight")
    ap.add_argument("--run", type=int, default=1, help="this run's number in docs/benchmarks.json (1, 2, 3)")
    ap.add_argument(
        "--update-docs",
        action="store_true",
        help="write the tables into docs/benchmarks.md and the figures into docs/benchmarks.json",
    )
    a = ap.parse_args()
    a.limits = [k.strip() for k in a.limits.split(",") if k.strip()]
    if not a.limits or any(k not in LIMITS for k in a.limits):
        ap.error(f"--limits: expected some of {', '.join(LIMITS)}")
    parts = {p.strip() for p in a.parts.split(",")}
    work = Path(tempfile.mkdtemp(prefix="promhpa-bench-scale-"))
    began = time.monotonic()
    if "controller" in parts:
        table, per_process, windows = controller_part(a, work)
        rows = [scale_controller.HEADER, scale_controller.ALIGN, *table]
        cores = [scale_controller.CORES_HEADER, scale_controller.CORES_ALIGN, *per_process]
        print("\n".join(rows), flush=True)
        print("\n".join(cores), flush=True)
        if a.update_docs:
            held = update_figures("controller", windows, lambda w: w.get("run") == a.run)
            update_section(
                DOCS, "bench-scale-controller", invocation(), [*rows, "", *other_runs(held, a.run)]
            )
            update_section(DOCS, "bench-scale-cores", invocation(), cores)
    if "adapter" in parts:
        discovery, pods = adapter_part(a, work)
        print("\n".join(discovery), flush=True)
        print("\n".join(pods), flush=True)
        if a.update_docs:
            update_section(DOCS, "bench-scale-discovery", invocation(), discovery)
            update_section(DOCS, "bench-scale-pods", invocation(), pods)
    took = f"- the whole run took {(time.monotonic() - began) / 60:.0f} minutes"
    print(took)
    if a.update_docs:
        update_section(DOCS, "bench-scale-machine", invocation(), [*machine(), took])
    return 0


if __name__ == "__main__":
    sys.exit(main())
