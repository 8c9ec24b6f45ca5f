"""``python -m localcluster up|down|status|env [--dir .cluster]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cluster import Cluster
from .tools import ROOT, ClusterError, log


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="a real Kubernetes control plane on 127.0.0.1")
    ap.add_argument("command", choices=("up", "down", "status", "env"))
    ap.add_argument("--dir", type=Path, default=ROOT / ".cluster", help="state directory (default .cluster)")
    ap.add_argument(
        "--thanos",
        action="store_true",
        help="also two Prometheus replicas with Thanos sidecars and a Querier",
    )
    a = ap.parse_args(argv)
    directory = a.dir.resolve()
    if a.command == "up":
        c = Cluster(directory, thanos=a.thanos)
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
        print(f"{name:20s} pid {existing.pids[name]:>7d}  {'running' if existing._alive(name) else 'DEAD'}")
    return 0 if existing.running() else 1


if __name__ == "__main__":
    sys.exit(main())
