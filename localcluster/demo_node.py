"""``make demo REAL_NODE=1``: the demo's story with real pods, as users run promhpa.

The control plane and the real node (kubelet, containerd, runc, kube-proxy, CoreDNS) come up
with Prometheus in the cluster; promhpa's image is built from this checkout, loaded into the
node and the chart installed from ``charts/promhpa``, so the adapter and the controller run as
the kubelet runs them. The demo app (``incluster.demo_app``) serves real HTTP: ``shop`` scales
on its pods' request rate (a Pods metric), ``worker`` on shop's total (an External metric),
both at 10 requests/s a pod. The knob is the ``load`` Deployment (10 requests/s a replica):
turned to 3, both HPAs go to 3 pods; turned to 0, both come back to 1 after the 15 s window.
Then ``kubectl promhpa why`` explains shop's last decisions, and everything is taken down.
Needs root (the node's network namespaces, cgroups, mounts and iptables rules).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import localcluster
from localcluster import incluster, node_runtime
from localcluster.node import RealNode
from localcluster.tools import ROOT, ClusterError, wait_until

RELEASE = "promhpa"
IMAGE = "registry.local/promhpa:demo"
HPAS = ("shop", "worker")
# the knob's settings: (load replicas, what to expect, when the phase is over)
Phase = tuple[int, str, Callable[[dict[str, tuple[int, int]]], bool]]


def main() -> int:
    if os.geteuid() != 0:
        print("the real node needs root (network namespaces, cgroups, mounts, iptables)", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="promhpa-demo-node-"))
    print(f"promhpa demo on a real node (state in {work})", flush=True)
    cluster = localcluster.Cluster(work / "cluster", addons=(RealNode(),))
    try:
        print("1. starting the control plane, the real node and Prometheus in the cluster", flush=True)
        cluster.up()
        return run(cluster, work)
    except (ClusterError, AssertionError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", None) or ""
        print(f"demo failed: {e}\n{detail}".rstrip(), file=sys.stderr)
        return 1
    finally:
        print(f"\n6. taking the cluster and the node down (logs stay in {work})", flush=True)
        cluster.down(quiet=True)


def run(cluster: localcluster.Cluster, work: Path) -> int:
    print("2. building promhpa's image from this checkout and loading it into the node", flush=True)
    built = subprocess.run(
        [sys.executable, "-m", "release", "image", f"--out={work / 'image'}"],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    archive = next(line.split()[1] for line in built.stdout.splitlines() if line.startswith("image "))
    node_runtime.load_image(cluster, Path(archive), IMAGE)
    print("3. helm install from charts/promhpa (adapter and controller as the kubelet runs them)", flush=True)
    install(cluster)
    print("4. the demo app (shop, worker, load) and the HPAs on shop's request rate", flush=True)
    cluster.apply(incluster.demo_app())
    cluster.kubectl(
        "-n", incluster.DEMO, "rollout", "status", "deployment/shop", "--timeout=180s", timeout=190
    )
    cluster.apply(incluster.demo_autoscaling())
    print(
        "\n  time  load  shop: pods, metric, replicas (now -> HPA's choice)"
        "  worker: ..., conditions of shop\n",
        flush=True,
    )
    started = time.monotonic()

    def at(replicas: int) -> Callable[[dict[str, tuple[int, int]]], bool]:
        return lambda seen: all(seen[h] == (replicas, replicas) for h in HPAS)

    phases: list[Phase] = [
        (0, "no load yet: both HPAs read their metric and hold 1 pod", lambda seen: _reconciled(cluster)),
        (3, "load rises to 30 req/s (3 load pods): expect 3 pods each", at(3)),
        (0, "load stops: expect 1 pod each after the rate falls and the 15 s window", at(1)),
    ]
    for load, title, done in phases:
        cluster.kubectl("-n", incluster.DEMO, "scale", "deployment/load", f"--replicas={load}")
        print(f"--- {title}", flush=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            seen = status_line(cluster, load, started)
            if done(seen):
                break
            time.sleep(5)
        else:
            print(f"the HPAs did not get there in time; see the logs in {work}", flush=True)
            return 1
    print("\nBoth HPAs scaled real pods up with the load and back down after it. Events:", flush=True)
    events = json.loads(cluster.kubectl("-n", incluster.DEMO, "get", "events", "-o", "json").stdout)["items"]
    ours = [e for e in events if e["source"].get("component") == "horizontal-pod-autoscaler"]
    for e in sorted(ours, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"])):
        when = (e.get("firstTimestamp") or "")[11:19]
        print(f"  {when}  {e['involvedObject']['name']:<7} {e['reason']}: {e['message']}", flush=True)
    print("\n5. kubectl promhpa why demo/shop --last=3", flush=True)
    why = why_shop(cluster)
    print(why.stdout or why.stderr, flush=True)
    return why.returncode


def install(cluster: localcluster.Cluster) -> None:
    """The chart with the README's values for this cluster (its kube-controller-manager has no
    HPA controller and there is no metrics-server), the image as loaded, then both rollouts."""
    repository, _, tag = IMAGE.rpartition(":")
    registry, _, name = repository.partition("/")
    assert cluster.bins is not None
    subprocess.run(
        [
            cluster.bins.helm, "install", RELEASE, str(ROOT / "charts" / "promhpa"),
            "-n", RELEASE, "--create-namespace", f"--kubeconfig={cluster.kubeconfig}",
            "--set", f"image.registry={registry}", "--set", f"image.repository={name}",
            "--set", f"image.tag={tag}", "--set", f"prometheus.url={incluster.PROMETHEUS_URL}",
            "--set", "controller.mode=active", "--set", "apiServices.resource=true",
            "--set", "controller.syncPeriod=5s",
            "--wait", "--timeout=5m",
        ],
        capture_output=True, text=True, check=True, timeout=330,
    )  # fmt: skip


def _hpa(cluster: localcluster.Cluster, name: str) -> dict[str, Any]:
    out = cluster.kubectl("-n", incluster.DEMO, "get", "hpa", name, "-o", "json", check=False)
    return dict(json.loads(out.stdout)) if out.returncode == 0 else {}


def _reconciled(cluster: localcluster.Cluster) -> bool:
    """Both HPAs have read their metric (ScalingActive True)."""
    return all(
        any(
            c["type"] == "ScalingActive" and c["status"] == "True"
            for c in _hpa(cluster, h).get("status", {}).get("conditions", [])
        )
        for h in HPAS
    )


def status_line(cluster: localcluster.Cluster, load: int, started: float) -> dict[str, tuple[int, int]]:
    """One line of what each HPA sees and decides; (current, desired) replicas by HPA."""
    seen: dict[str, tuple[int, int]] = {}
    cells, reasons = [], ""
    for name in HPAS:
        st = _hpa(cluster, name).get("status", {})
        metric = next(
            (
                (m.get("pods") or m.get("external") or {}).get("current", {}).get("averageValue")
                or (m.get("external") or {}).get("current", {}).get("value")
                for m in st.get("currentMetrics") or []
            ),
            None,
        )
        current, desired = int(st.get("currentReplicas", 0)), int(st.get("desiredReplicas", 0))
        seen[name] = (current, desired)
        cells.append(f"{_running(cluster, name)} pods {metric or '-':>6} {current}->{desired}")
        if name == "shop":
            reasons = " ".join(f"{c['type']}={c['reason']}" for c in st.get("conditions", []))
    print(
        f"{time.monotonic() - started:6.0f}s  {load:>3}   {cells[0]:<24}  {cells[1]:<24}  {reasons}",
        flush=True,
    )
    return seen


def _running(cluster: localcluster.Cluster, app: str) -> int:
    out = cluster.kubectl("-n", incluster.DEMO, "get", "pods", "-l", f"app={app}", "-o", "json", check=False)
    if out.returncode != 0:
        return 0
    return sum(
        1
        for p in json.loads(out.stdout)["items"]
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    )


def why_shop(cluster: localcluster.Cluster) -> subprocess.CompletedProcess[str]:
    plugin = Path(sys.executable).parent / "kubectl-promhpa"
    argv = [str(plugin), "why", f"{incluster.DEMO}/shop", "--last=3", f"--kubeconfig={cluster.kubeconfig}"]
    wait_until(lambda: _hpa(cluster, "shop") != {}, timeout=5, what="shop's HPA")
    return subprocess.run(
        [*argv, "--insecure-skip-tls-verify"], capture_output=True, text=True, timeout=60, check=False
    )


if __name__ == "__main__":
    sys.exit(main())
