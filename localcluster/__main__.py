"""``python -m localcluster up|down|status|env [--dir .cluster] [--real-node]`` and
``python -m localcluster load-image --dir D ARCHIVE [--name REF]``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import node_runtime
from .cluster import Cluster
from .node import RealNode
from .node_runtime import default_reference
from .thanos import FederatedThanos
from .tools import ROOT, ClusterError, log


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="a real Kubernetes control plane on 127.0.0.1")
    ap.add_argument("command", choices=("up", "down", "status", "env", "load-image"))
    ap.add_argument("archive", nargs="?", type=Path, help="load-image: an OCI image archive")
    ap.add_argument("--dir", type=Path, default=ROOT / ".cluster", help="state directory (default .cluster)")
    ap.add_argument(
        "--thanos",
        action="store_true",
        help="also two Prometheus replicas with Thanos sidecars and a Querier",
    )
    ap.add_argument(
        "--real-node",
        action="store_true",
        help="also a real node on this machine (kubelet, containerd, runc, CNI, kube-proxy, "
        "CoreDNS; needs root): pods run as containers on a private bridge",
    )
    ap.add_argument(
        "--name",
        help="load-image: the reference pods name the image by (default: registry.local/<title>:<tag> "
        "of the archive)",
    )
    a = ap.parse_intermixed_args(argv)
    directory = a.dir.resolve()
    if a.command == "load-image":
        return _load_image(directory, a.archive, a.name)
    if a.command == "up":
        if a.real_node and os.geteuid() != 0:
            log("--real-node needs root (network namespaces, cgroups, mounts, iptables)")
            return 1
        addons = (*((FederatedThanos(),) if a.thanos else ()), *((RealNode(),) if a.real_node else ()))
        c = Cluster(directory, addons=addons)
        try:
            c.up()
        except ClusterError as e:
            log(f"could not start the cluster: {e}")
            return 1
        print(c.env_text(), end="")
        print(
            f"\nThe cluster is running. Use it with:\n  export KUBECONFIG={c.kubeconfig}\n"
            f"  {c.bins.kubectl if c.bins else 'kubectl'} get nodes\nStop it with: make cluster-down"
        )
        return 0
    existing = Cluster.load(directory)
    if a.command == "down":
        if existing is None:
            log(f"no cluster state in {directory}; nothing to stop")
            return 0
        existing.down()
        log("stopped")
        return 0
    if existing is None:
        print("not running")
        return 1 if a.command == "status" else 0
    if a.command == "env":
        print(existing.env_text(), end="")
        return 0
    for name in existing.pids:
        print(f"{name:20s} pid {existing.pids[name]:>7d}  {'running' if existing.alive(name) else 'DEAD'}")
    return 0 if existing.running() else 1


def _load_image(directory: Path, archive: Path | None, name: str | None) -> int:
    existing = Cluster.load(directory)
    if archive is None or not archive.is_file():
        log(f"load-image: no such archive: {archive}")
        return 2
    if existing is None or not existing.running():
        log(f"no running cluster in {directory}")
        return 1
    try:
        ref = name or default_reference(archive)
        node_runtime.load_image(existing, archive.resolve(), ref)
    except ClusterError as e:
        log(str(e))
        return 1
    print(ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
