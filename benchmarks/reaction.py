"""Reaction time: `make bench-reaction`.

How long from a step in a real metric's load to the scale write, for each autoscaler as its
users run it, all on one local control plane with kube-controller-manager's HPA controller
on (as on a managed cluster), reading the same Prometheus series:

- promhpa's own kind (``autoscaling.promhpa.io/v2``) with ``spec.controller.syncPeriod``
  15 s, 5 s and 2 s, through promhpa's adapter (at its default query cache of 5 s unless
  ``--query-cache-ttl`` says otherwise);
- a built-in HPA, acted on by kube-controller-manager (sync period 15 s, its default),
  through promhpa's adapter;
- KEDA's ScaledObject on the same query: its HPA, acted on by kube-controller-manager,
  reads KEDA's metrics server (promhpa's adapter owns the external metrics APIService and
  forwards KEDA's metric names to it, as docs/coexistence.md sets them up).

Each target is a Deployment of kwok pods on an External metric with an AverageValue target
of 10: the exporter's value steps between 5 (1 replica) and 30 (3 replicas). A step's time
runs from the exporter's change to the first poll (every 100 ms) that sees the target's
Deployment at its new replica count; every target scales down with no stabilization window,
so up and down steps are alike. After every target has moved, a random pause of 0-15 s puts
the next step at a random phase of every sync period. Loopback only, bounded by
``--steps`` and a per-step timeout.

What bounds the time, in order: Prometheus' scrape interval (1 s here; 15-60 s is common),
a rate window when the query has one (none here), the adapter's query cache (5 s by
default) or KEDA's own path, and the sync period.
"""

from __future__ import annotations

import argparse
import json
import random
import ssl
import statistics
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import localcluster
from benchmarks.doc_tables import invocation, update_figures, update_section
from localcluster.keda import keda_upstream, start_keda
from localcluster.manifests import external_metric, hpa_manifest
from localcluster.promhpa import (
    adapter_token,
    cpu_deployment,
    external_rules,
    grant_forwarding,
    start_controller_process,
    start_hpa_only_kcm,
    stop_process,
)
from localcluster.rig import Rig
from localcluster.tools import ROOT, free_port, wait_until

NS = "react"
METRIC = "react_load"
LOW, HIGH = 5, 30  # with an average of 10 a replica: 1 and 3 replicas
REPLICAS = {LOW: 1, HIGH: 3}
CRD = ROOT / "charts" / "promhpa" / "crds" / "horizontalpodautoscalers.yaml"
PAGE = ROOT / "docs" / "benchmarks.md"
QUERY = f'sum({METRIC}{{namespace="{NS}"}})'
HEADER = "| autoscaler | p50 | p99 | max | mean |"


@dataclass
class Target:
    name: str  # the Deployment's
    label: str  # the table's
    times: list[float] = field(default_factory=list)


TARGETS = [
    Target("own-15s", "promhpa, own kind, syncPeriod 15s"),
    Target("own-5s", "promhpa, own kind, syncPeriod 5s"),
    Target("own-2s", "promhpa, own kind, syncPeriod 2s"),
    Target("kcm", "kube-controller-manager 15s, promhpa's adapter"),
    Target("keda", "KEDA ScaledObject (kube-controller-manager 15s)"),
]


def objects(prometheus_url: str) -> list[dict[str, Any]]:
    """The namespace, one Deployment per target, and each target's autoscaler."""
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    out += [cpu_deployment(NS, t.name) for t in TARGETS]
    no_window = {"scaleDown": {"stabilizationWindowSeconds": 0}}
    for t in TARGETS[:3]:
        own = hpa_manifest(NS, t.name, external_metric(METRIC, "10"), max_replicas=5)
        own["apiVersion"] = "autoscaling.promhpa.io/v2"
        own["spec"]["behavior"] = no_window
        own["spec"]["controller"] = {"syncPeriod": t.name.removeprefix("own-")}
        out.append(own)
    builtin = hpa_manifest(NS, "kcm", external_metric(METRIC, "10"), max_replicas=5)
    builtin["spec"]["behavior"] = no_window
    out.append(builtin)
    out.append({
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "keda", "namespace": NS},
        "spec": {
            "scaleTargetRef": {"name": "keda"},
            "minReplicaCount": 1,
            "maxReplicaCount": 5,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": no_window}},
            "triggers": [{"type": "prometheus", "metadata": {
                "serverAddress": prometheus_url, "query": QUERY, "threshold": "10"}}],
        },
    })  # fmt: skip
    return out


class Poller:
    """The namespace's Deployments' replicas, read as the admin straight from the API server."""

    def __init__(self, cluster: localcluster.Cluster) -> None:
        self.url = f"{cluster.server}/apis/apps/v1/namespaces/{NS}/deployments"
        self.ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
        self.ctx.load_cert_chain(str(cluster.pki / "admin.crt"), str(cluster.pki / "admin.key"))

    def replicas(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url, context=self.ctx, timeout=5) as r:
            items = json.loads(r.read())["items"]
        return {d["metadata"]["name"]: int(d["spec"].get("replicas", 0)) for d in items}


def step(rig: Rig, poller: Poller, value: int, timeout: float) -> dict[str, float]:
    """Set the load to ``value``; each target's seconds until its Deployment had moved."""
    want = REPLICAS[value]
    rig.exporter.set(f'{METRIC}{{namespace="{NS}"}}', value)
    t0 = time.monotonic()
    moved: dict[str, float] = {}
    while len(moved) < len(TARGETS):
        now = time.monotonic()
        if now - t0 > timeout:
            late = sorted({t.name for t in TARGETS} - set(moved))
            raise TimeoutError(f"{late} did not reach {want} replicas within {timeout:.0f}s")
        seen = poller.replicas()
        for t in TARGETS:
            if t.name not in moved and seen.get(t.name) == want:
                moved[t.name] = now - t0
        time.sleep(0.1)
    return moved


def settle(poller: Poller, value: int) -> None:
    want = REPLICAS[value]
    wait_until(lambda: all(poller.replicas().get(t.name) == want for t in TARGETS), timeout=180,
               what=f"every target at {want} replicas")  # fmt: skip


def quantile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def table(targets: list[Target], steps: int, cache_ttl: str) -> list[str]:
    lines = [
        f"{steps} steps each ({steps // 2} up 1 -> 3 replicas, {steps - steps // 2} down), seconds from the "
        "exporter's change to the Deployment's new replica count; Prometheus scrapes every 1s, promhpa's "
        f"adapter runs with `--query-cache-ttl={cache_ttl}`:",
        "",
        HEADER,
        "|---|---:|---:|---:|---:|",
    ]
    for t in targets:
        lines.append(
            f"| {t.label} | {quantile(t.times, 0.5):.1f} | {quantile(t.times, 0.99):.1f} | "
            f"{max(t.times):.1f} | {statistics.fmean(t.times):.1f} |"
        )
    return lines


def run(work: Path, steps: int, seed: int, cache_ttl: str) -> list[Target]:
    rng = random.Random(seed)
    with Rig(localcluster.Cluster(work / "cluster"), work) as rig:
        cluster = rig.cluster
        rig.publish(f'{METRIC}{{namespace="{NS}"}}', LOW)
        keda = start_keda(cluster, work / "keda")
        rig.on_exit(keda.stop)
        grant_forwarding(cluster, "react-forwarding", "external.metrics.k8s.io")
        token = adapter_token(cluster, work / "adapter.token", duration="24h")  # 50 steps take about 17 min
        rig.adapter(
            external_rules(METRIC, by="") + keda_upstream(keda, token),
            f"--query-cache-ttl={cache_ttl}",
        )
        cluster.kubectl("apply", "--server-side", "-f", str(CRD))
        crd = "crd/horizontalpodautoscalers.autoscaling.promhpa.io"
        cluster.kubectl("wait", "--for=condition=Established", crd, "--timeout=60s")
        kcm = start_hpa_only_kcm(cluster, work / "kcm.log", free_port())
        rig.on_exit(lambda: stop_process(kcm))
        # as the chart runs it: built-in HPAs shadowed (kube-controller-manager acts on them),
        # its own kind acted on; every knob at its default
        controller = start_controller_process(cluster.kubeconfig, work / "controller.log", "--dry-run")
        rig.on_exit(lambda: stop_process(controller))
        cluster.apply(objects(rig.prometheus.url))
        poller = Poller(cluster)
        settle(poller, LOW)
        value = LOW
        for i in range(steps):
            value = HIGH if value == LOW else LOW
            moved = step(rig, poller, value, timeout=90)
            for t in TARGETS:
                t.times.append(moved[t.name])
            print(f"step {i + 1}/{steps} to {value}: " + ", ".join(f"{n} {s:.1f}s" for n, s in moved.items()))
            time.sleep(rng.uniform(0, 15))
    return TARGETS


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=50, help="load steps, alternately up and down (default 50)")
    p.add_argument("--seed", type=int, default=1, help="for the pauses between steps")
    p.add_argument(
        "--query-cache-ttl", default="5s", help="promhpa's adapter's (default 5s, the adapter's own default)"
    )
    p.add_argument("--update-docs", action="store_true", help="rewrite the table in docs/benchmarks.md")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="promhpa-reaction-") as tmp:
        targets = run(Path(tmp), args.steps, args.seed, args.query_cache_ttl)
    lines = table(targets, args.steps, args.query_cache_ttl)
    print("\n".join(lines))
    if args.update_docs:
        update_section(PAGE, "bench-reaction", invocation(), lines)
        records = [
            {
                "autoscaler": t.label,
                "steps": args.steps,
                "p50_s": round(quantile(t.times, 0.5), 2),
                "p99_s": round(quantile(t.times, 0.99), 2),
                "max_s": round(max(t.times), 2),
                "mean_s": round(statistics.fmean(t.times), 2),
                "query_cache_ttl": args.query_cache_ttl,
            }
            for t in targets
        ]
        update_figures("reaction", records, lambda r: r.get("query_cache_ttl", "0s") == args.query_cache_ttl)


if __name__ == "__main__":
    main()
