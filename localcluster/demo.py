"""promhpa end to end on this machine: `make demo` (``python -m localcluster.demo``).

Brings up the local control plane (kube-apiserver, controller-manager without its HPA
controller, scheduler, kwok nodes), Prometheus, a demo app whose request rate has a knob
(each pod exports ``demo_http_requests_per_second``), promhpa's adapter registered with the
aggregation layer, and promhpa's controller. An HPA targets 10 requests/s per pod. The demo
turns the knob up and down and prints, every few seconds, what the HPA sees and does, until
it has scaled up and back down; then it replays that recorded load through the engine
(``python -m controller replay``) beside a variant with a longer scale-down window and draws
the picture. Everything runs on 127.0.0.1 and is stopped at the end.

``--real-node`` (``make demo REAL_NODE=1``, as root) tells it with real pods instead: the
chart installed on the real node, the demo app serving real HTTP (``localcluster.demo_node``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import localcluster
from localcluster.manifests import hpa_manifest, pods_metric
from localcluster.prometheus import Exporter
from localcluster.promhpa import (
    pods_rules,
    start_controller_process,
    stop_process,
)
from localcluster.rig import Rig
from localcluster.tools import wait_until
from shared.durations import format_time, parse_time

NS, APP = "demo", "shop"
METRIC = "demo_http_requests_per_second"
RULES = pods_rules("demo")  # demo_http_requests_per_second is served as http_requests_per_second
HPA = hpa_manifest(NS, APP, pods_metric("http_requests_per_second", "10"), max_replicas=8)
HPA["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 15}}


class DemoApp:
    """The request-rate knob: the total rate is shared by the running pods of the Deployment,
    which are also exported as kube-state-metrics would (``kube_deployment_status_replicas``)
    so that a replay shows the real replica count beside the simulated one."""

    def __init__(
        self, cluster: localcluster.Cluster, exporter: Exporter, namespace: str = NS, app: str = APP
    ) -> None:
        self.cluster, self.exporter, self.rate = cluster, exporter, 0.0
        self.namespace, self.app = namespace, app
        self._stop = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def pods(self) -> list[str]:
        return sorted(self._running())

    def _running(self) -> dict[str, tuple[float, float | None]]:
        """Running pods: (created, ready) as epoch seconds, as kube-state-metrics has them."""
        ns, app = self.namespace, self.app
        out = self.cluster.kubectl("-n", ns, "get", "pods", "-l", f"app={app}", "-o", "json", check=False)
        if out.returncode != 0:
            return {}
        running: dict[str, tuple[float, float | None]] = {}
        for p in json.loads(out.stdout)["items"]:
            if p["status"].get("phase") != "Running" or p["metadata"].get("deletionTimestamp"):
                continue
            ready = next(
                (c.get("lastTransitionTime") for c in p["status"].get("conditions", [])
                 if c["type"] == "Ready" and c["status"] == "True"),
                None,
            )  # fmt: skip
            created = parse_time(p["metadata"]["creationTimestamp"]).timestamp()
            running[p["metadata"]["name"]] = (created, parse_time(ready).timestamp() if ready else None)
        return running

    def _loop(self) -> None:
        while not self._stop.is_set():
            pods = self._running()
            ns = self.namespace
            share = f"{self.rate / len(pods):g}" if pods else "0"
            lines = {
                f'demo_http_requests_per_second{{namespace="{ns}",pod="{name}"}}': share for name in pods
            }
            lines[f'kube_deployment_status_replicas{{namespace="{ns}",deployment="{self.app}"}}'] = str(
                len(pods)
            )
            for name, (created, ready) in pods.items():
                lines[f'kube_pod_created{{namespace="{ns}",pod="{name}"}}'] = f"{created:.0f}"
                if ready is not None:
                    lines[f'kube_pod_status_ready_time{{namespace="{ns}",pod="{name}"}}'] = f"{ready:.0f}"
            self.exporter.lines = lines  # one swap: a scrape never sees half an update
            time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()


def status_line(cluster: localcluster.Cluster, app: DemoApp, started: float) -> tuple[int, int]:
    hpa: dict[str, Any] = json.loads(cluster.kubectl("-n", NS, "get", "hpa", APP, "-o", "json").stdout)
    st = hpa.get("status", {})
    reasons = " ".join(f"{c['type']}={c['reason']}" for c in st.get("conditions", []))
    metric = next(
        (
            m["pods"]["current"]["averageValue"]
            for m in st.get("currentMetrics") or []
            if m.get("type") == "Pods"
        ),
        "-",
    )
    current, desired = int(st.get("currentReplicas", 0)), int(st.get("desiredReplicas", 0))
    decided = f"{current} -> {desired}" if st.get("conditions") else "(not yet reconciled)"
    print(
        f"{time.monotonic() - started:6.0f}s  {app.rate:5.0f} req/s  {metric:>7}  {decided:<21}"
        f"{len(app.pods()):>3}  {reasons}",
        flush=True,
    )
    return current, desired


def main() -> int:
    if sys.argv[1:] == ["--real-node"]:  # the same story with real pods, the chart installed
        from localcluster import demo_node

        return demo_node.main()
    work = Path(tempfile.mkdtemp(prefix="promhpa-demo-"))
    print(f"promhpa demo (state in {work})\n1. starting the local control plane", flush=True)
    try:
        with Rig(localcluster.Cluster(work / "cluster"), work) as rig:
            try:
                return run(rig)
            finally:
                print(f"\n5. cleaning up (the picture and logs stay in {work})", flush=True)
    except (localcluster.ClusterError, AssertionError) as e:
        print(f"demo failed: {e}", file=sys.stderr)
        return 1


def run(rig: Rig) -> int:
    cluster, work, prometheus = rig.cluster, rig.work, rig.prometheus
    print("2. starting Prometheus, the demo app's metrics, promhpa's adapter and controller", flush=True)
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("-n", NS, "create", "deployment", APP, "--image=example.invalid/shop", "--replicas=1")
    app = DemoApp(cluster, rig.exporter)
    rig.on_exit(app.stop)
    app.rate = 5
    wait_until(lambda: prometheus.query(METRIC) != [], timeout=60, what="the app's metric")
    rig.adapter(RULES)
    controller = start_controller_process(
        cluster.kubeconfig,
        work / "controller.log",
        "--horizontal-pod-autoscaler-sync-period=3s",
        "--log-format=console",
    )
    rig.on_exit(lambda: stop_process(controller))
    began = datetime.now(UTC)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(HPA))
    print("3. HPA: Deployment shop, 1..8 replicas, target 10 requests/s per pod\n", flush=True)
    print(
        "  time  total load  per pod  replicas (now -> HPA's choice)  pods running  conditions",
        flush=True,
    )
    started = time.monotonic()
    phases: list[tuple[int, str, Callable[[int, int], bool]]] = [
        (5, "steady load", lambda c, d: time.monotonic() - started > 12),
        (65, "load rises to 65 req/s: expect 7 pods", lambda c, d: c >= 7 and len(app.pods()) >= 7),
        (8, "load falls to 8 req/s: expect 1 pod after the 15s window", lambda c, d: c == 1),
    ]
    low_since: list[float] = []

    def held_low(c: int, d: int) -> bool:  # long enough for the replay's 60s variant to act
        low_since.append(time.monotonic())
        return time.monotonic() - low_since[0] > 60

    phases.append((8, "the low load holds for a minute (the replay's variant B needs it)", held_low))
    for rate, title, done in phases:
        app.rate = rate
        print(f"--- {title}", flush=True)
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            current, desired = status_line(cluster, app, started)
            if done(current, desired):
                break
            time.sleep(3)
        else:
            print("the HPA did not get there in time; see the logs in", work, flush=True)
            return 1
    ended = datetime.now(UTC)
    print("\nThe HPA scaled up with the load and back down after it fell. Events:", flush=True)
    events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
    ours = [e for e in events if e["source"].get("component") == "horizontal-pod-autoscaler"]
    for e in sorted(ours, key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"])):
        when = (e.get("firstTimestamp") or "")[11:19]
        print(f"  {when}  {e['type']} {e['reason']}: {e['message']}", flush=True)
    wait_until(
        lambda: prometheus.sampled_since(METRIC, ended.timestamp()), timeout=30, what="the last samples"
    )
    print("\n4. replay: the same load through the engine, beside a 60s scale-down window", flush=True)
    (work / "hpa.yaml").write_text(json.dumps(HPA))
    (work / "rules.yaml").write_text(RULES)
    replay = [
        sys.executable, "-m", "controller", "replay", str(work / "hpa.yaml"),
        f"--prometheus-url={prometheus.url}", f"--config={work / 'rules.yaml'}",
        f"--from={format_time(began)}", f"--to={format_time(ended)}",
        "--horizontal-pod-autoscaler-sync-period=3s",
        "--set", "behavior.scaleDown.stabilizationWindowSeconds=60", f"--plot={work / 'replay.png'}",
    ]  # fmt: skip
    print("   python " + " ".join(replay[1:]).replace(str(work), "$WORK"), flush=True)
    return subprocess.run(replay, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
