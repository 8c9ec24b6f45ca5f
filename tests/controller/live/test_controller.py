"""The live controller against the real control plane, adapter and Prometheus.

A Deployment (pods run by kwok) with an HPA on a Pods metric the adapter serves from a
Prometheus query: raise the load and it scales up to the expected count; lower it and it
scales down once the (test-shortened) stabilization window allows.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.engine import decide
from controller.engine import parse_snapshot
from localcluster import Cluster
from localcluster.manifests import object_metric
from localcluster.tools import insecure_tls
from tests.live import Controller
from tests.live import Live
from tests.live import hpa as hpa_object
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import cpu_deployment
from tests.support import free_port
from tests.support import leader_identity
from tests.support import prefixed_rules
from tests.support import python_m
from tests.support import wait_until

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[3]
NS = "live"
CONFIG = prefixed_rules("live")
SYNC = "--horizontal-pod-autoscaler-sync-period=1s"


def _pods(cluster: Cluster, app: str) -> list[dict[str, Any]]:
    """The app's pods that are not being deleted."""
    out = cluster.kubectl("-n", NS, "get", "pods", "-l", f"app={app}", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def running_pods(cluster: Cluster, app: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in _pods(cluster, app) if p["status"].get("phase") == "Running")


def ready_pods(cluster: Cluster, app: str) -> list[str]:
    def ready(p: dict[str, Any]) -> bool:
        return any(
            c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or []
        )

    return sorted(p["metadata"]["name"] for p in _pods(cluster, app) if ready(p))


def replicas(cluster: Cluster, app: str) -> int:
    return scale_replicas(cluster, NS, app)


def hpa(cluster: Cluster, name: str) -> dict[str, Any]:
    return hpa_object(cluster, NS, name)


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    live.publish({'live_requests{namespace="live",pod="seed"}': 0,  # so discovery knows the metric
                  'live_service_rps{namespace="live",service="frontend"}': 0}, "live_requests")  # fmt: skip
    live.publish({'live_queue_depth{namespace="live",queue="jobs"}': 0}, "live_queue_depth")
    return live.adapter(CONFIG)


@pytest.fixture(scope="module")
def controller(live: Live, adapter: AdapterProcess) -> Controller:
    # every HPA except those the dry-run and HA tests hand to their own controllers
    return live.controller(SYNC, "--hpa-selector=!dryrun,!ha,!stall")


def start_controller(
    cluster: Cluster, work: Path, *flags: str
) -> contextlib.AbstractContextManager[Controller]:
    return running_controller(cluster.kubeconfig, work / "controller.log", SYNC, *flags)


def set_requests(cluster: Cluster, exporter: Exporter, target: str, per_pod: float) -> None:
    """Every running pod of ``target`` reports ``per_pod`` requests."""
    for name in running_pods(cluster, target):
        exporter.set(f'live_requests{{namespace="{NS}",pod="{name}"}}', per_pod)


def requests_spec(max_replicas: int, immediate_scale_down: bool = False) -> dict[str, Any]:
    """HPA spec: 10 requests/s per pod on the adapter's `requests` Pods metric, 1..max replicas."""
    spec: dict[str, Any] = {
        "minReplicas": 1,
        "maxReplicas": max_replicas,
        "metrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "requests"},
                    "target": {"type": "AverageValue", "averageValue": "10"},
                },
            }
        ],
    }
    if immediate_scale_down:
        spec["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 0}}
    return spec


def make_target(
    cluster: Cluster, app: str, replicas: int, hpa_spec: dict[str, Any], labels: dict[str, str] | None = None
) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl(
        "-n", NS, "create", "deployment", app, "--image=example.invalid/x", f"--replicas={replicas}"
    )
    wait_until(
        lambda: len(running_pods(cluster, app)) == replicas, timeout=60, what=f"{replicas} running pods"
    )
    make_hpa(cluster, app, hpa_spec, labels)


def make_hpa(
    cluster: Cluster, app: str, hpa_spec: dict[str, Any], labels: dict[str, str] | None = None
) -> None:
    """An HPA on the Deployment of the same name."""
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": app, "namespace": NS, "labels": labels or {}},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
                    **hpa_spec,
                },
            }
        ),
    )


def condition(cluster: Cluster, name: str, ctype: str) -> str:
    for c in hpa(cluster, name).get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return f"{c['status']}/{c['reason']}"
    return "absent"


def test_scales_up_on_load_and_down_after_it_falls(
    cluster: Cluster, exporter: Exporter, prometheus: PrometheusProcess, controller: Controller
) -> None:
    make_target(cluster, "api", 1, requests_spec(5, immediate_scale_down=True))

    def load(per_pod: float) -> None:
        set_requests(cluster, exporter, "api", per_pod)

    load(30)  # one pod at 30 against 10: ceil(3 x 1) = 3
    wait_until(lambda: replicas(cluster, "api") == 3, timeout=60, what="scale-up to 3")
    wait_until(lambda: len(running_pods(cluster, "api")) == 3, timeout=60, what="3 running pods")
    load(10)  # exactly on target: holds at 3
    wait_until(
        lambda: prometheus.query(f'count(live_requests{{namespace="{NS}"}} == 10)') != [], what="scrape"
    )
    status = hpa(cluster, "api")["status"]
    conditions = {c["type"]: c["reason"] for c in status["conditions"]}
    assert conditions["ScalingActive"] == "ValidMetricFound"
    load(2)  # 3 pods at 2 against 10: ceil(0.2 x 3) = 1
    wait_until(lambda: replicas(cluster, "api") == 1, timeout=60, what="scale-down to 1")
    events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
    rescales = [e.get("message", "") for e in events if e.get("reason") == "SuccessfulRescale"]
    assert "New size: 3; reason: pods metric requests above target" in rescales
    assert "New size: 1; reason: All metrics below target" in rescales
    assert all(
        e.get("source", {}).get("component") == "horizontal-pod-autoscaler"
        for e in events
        if e.get("reason") == "SuccessfulRescale"
    )
    described = cluster.kubectl("-n", NS, "describe", "hpa", "api").stdout
    assert "AbleToScale" in described


def test_snapshot_of_a_live_hpa_decides_offline(
    cluster: Cluster, exporter: Exporter, controller: Controller, tmp_path: Path
) -> None:
    make_target(cluster, "snap", 1, requests_spec(5))
    set_requests(cluster, exporter, "snap", 5)  # 5 against 10: keep 1
    wait_until(
        lambda: condition(cluster, "snap", "ScalingActive") == "True/ValidMetricFound",
        timeout=60,
        what="the live controller's first decision on it",
    )
    out = python_m("controller", "snapshot", f"{NS}/snap", f"--kubeconfig={cluster.kubeconfig}")
    assert out.returncode == 0, out.stderr
    import yaml

    snap = yaml.safe_load(out.stdout)
    # the release the snapshot is decided as: the cluster's own, read from the API server
    assert snap["controller"]["kubernetesVersion"] == cluster.k8s_version.removeprefix("v").rsplit(".", 1)[0]
    pods = snap["pods"]  # the pods the live reconcile sees, from its index
    assert sorted(p["metadata"]["name"] for p in pods) == running_pods(cluster, "snap")
    path = tmp_path / "live.yaml"
    path.write_text(out.stdout)
    decided = python_m("controller", "decide", str(path))
    assert decided.returncode == 0, decided.stderr
    assert json.loads(decided.stdout)["desiredReplicas"] == 1


def test_external_metric_scales_with_the_queue(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    make_target(
        cluster,
        "worker",
        1,
        {
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": "live_queue_depth",
                            "selector": {"matchLabels": {"queue": "jobs"}},
                        },
                        "target": {"type": "AverageValue", "averageValue": "5"},
                    },
                }
            ],
        },
    )
    exporter.set('live_queue_depth{namespace="live",queue="jobs"}', 17)  # ceil(17 / 5) = 4
    wait_until(lambda: replicas(cluster, "worker") == 4, timeout=60, what="scale-up to 4")
    assert condition(cluster, "worker", "ScalingLimited") == "False/DesiredWithinRange"


def test_two_hpas_on_one_target_are_an_ambiguous_selector(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    exporter.set('live_queue_depth{namespace="live",queue="twin"}', 5)
    spec = {
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "live_queue_depth", "selector": {"matchLabels": {"queue": "twin"}}},
                    "target": {"type": "AverageValue", "averageValue": "5"},
                },
            }
        ],
    }
    make_target(cluster, "twin", 1, spec)
    wait_until(lambda: condition(cluster, "twin", "ScalingActive") == "True/ValidMetricFound", what="valid")
    # a second HPA on the same Deployment: upstream refuses to act for either
    make_hpa(
        cluster,
        "twin-b",
        {**spec, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "twin"}},
    )
    for name in ("twin", "twin-b"):
        wait_until(
            lambda n=name: condition(cluster, n, "ScalingActive") == "False/AmbiguousSelector",
            timeout=30,
            what=f"{name}: AmbiguousSelector",
        )
    message = next(
        c["message"] for c in hpa(cluster, "twin")["status"]["conditions"] if c["type"] == "ScalingActive"
    )
    assert (
        message
        == "pods by selector app=twin are controlled by more than one HPA (e.g. [live/twin live/twin-b])"
    )
    cluster.kubectl("-n", NS, "delete", "hpa", "twin-b")  # alone again: it acts again
    wait_until(
        lambda: condition(cluster, "twin", "ScalingActive") == "True/ValidMetricFound", what="valid again"
    )


def test_broken_metric_never_scales_down_and_recovers(
    cluster: Cluster, exporter: Exporter, prometheus: PrometheusProcess, controller: Controller
) -> None:
    make_target(cluster, "steady", 3, requests_spec(5, immediate_scale_down=True))
    set_requests(cluster, exporter, "steady", 10)
    wait_until(
        lambda: condition(cluster, "steady", "ScalingActive") == "True/ValidMetricFound",
        timeout=60,
        what="a valid metric",
    )
    prometheus.stop()
    try:
        wait_until(
            lambda: condition(cluster, "steady", "ScalingActive") == "False/FailedGetPodsMetric",
            timeout=60,
            what="the failure to show in the conditions",
        )
        assert replicas(cluster, "steady") == 3
    finally:
        prometheus.start()
    set_requests(cluster, exporter, "steady", 1)  # load fell while Prometheus was away
    wait_until(lambda: replicas(cluster, "steady") == 1, timeout=90, what="the scale-down after recovery")


def test_dry_run_decides_and_publishes_but_writes_nothing(
    cluster: Cluster, exporter: Exporter, controller: Controller, tmp_path: Path
) -> None:
    make_target(cluster, "shadow", 1, requests_spec(5), labels={"dryrun": "true"})
    set_requests(cluster, exporter, "shadow", 40)
    with start_controller(cluster, tmp_path, "--dry-run", "--hpa-selector=dryrun") as dry:

        def published() -> bool:
            events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
            return any(
                e.get("involvedObject", {}).get("name") == "shadow"
                and e.get("reason") == "DryRunWouldRescale"
                and e.get("source", {}).get("component") == "promhpa"
                and e["message"].startswith("would rescale (dry run, nothing written): New size: 4;")
                for e in events
            )

        wait_until(published, timeout=60, what="the dry-run decision to be published as an event")
        assert "dry_run=True" in dry.log.read_text()
        assert replicas(cluster, "shadow") == 1  # neither the dry-run controller nor the main one scaled it
        assert condition(cluster, "shadow", "AbleToScale") == "absent"  # no status written


def _readyz(port: int) -> int:
    try:
        url = f"https://127.0.0.1:{port}/readyz"
        with urllib.request.urlopen(url, context=insecure_tls(), timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def lease_holder(cluster: Cluster, name: str = "promhpa-ha-test") -> str:
    out = cluster.kubectl("-n", "default", "get", "lease", name, "-o", "json", check=False)
    return str(json.loads(out.stdout)["spec"].get("holderIdentity") or "") if out.returncode == 0 else ""


def test_only_the_leader_acts_and_a_standby_takes_over(
    cluster: Cluster, exporter: Exporter, controller: Controller, tmp_path: Path
) -> None:
    make_target(cluster, "ha-app", 1, requests_spec(5), labels={"ha": "true"})
    flags = (
        "--leader-elect",
        "--leader-elect-resource-namespace=default",
        "--leader-elect-resource-name=promhpa-ha-test",
        "--hpa-selector=ha",
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with start_controller(cluster, tmp_path / "a", *flags) as first:
        wait_until(lambda: lease_holder(cluster) == leader_identity(first.log), timeout=30,
                   what="the first to lead")  # fmt: skip
        standby_port = free_port()
        with start_controller(cluster, tmp_path / "b", *flags, f"--secure-port={standby_port}") as second:
            # waiting for the Lease, it is ready (else it counts against the PDB, and no
            # rollout of two replicas completes)
            wait_until(lambda: _readyz(standby_port) == 200, timeout=30, what="the standby's /readyz 200")
            set_requests(cluster, exporter, "ha-app", 25)
            wait_until(
                lambda: replicas(cluster, "ha-app") == 3, timeout=60, what="the leader's scale-up to 3"
            )
            assert "reconciled" not in second.log.read_text()  # the standby has not acted
            first.proc.kill()  # a crash: no graceful hand-over
            first.proc.wait()
            wait_until(lambda: lease_holder(cluster) == leader_identity(second.log), timeout=40,
                       what="the standby to take the lease")  # fmt: skip
            wait_until(lambda: len(running_pods(cluster, "ha-app")) == 3, timeout=60, what="3 running pods")
            set_requests(cluster, exporter, "ha-app", 40)  # ceil(4 x 3) = 12 -> 5
            wait_until(lambda: replicas(cluster, "ha-app") == 5, timeout=60,
                       what="the new leader's scale-up to 5")  # fmt: skip


def test_object_metric_scales_on_a_service_value(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    make_target(
        cluster,
        "backend",
        1,
        {
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [object_metric("service_rps", "Service", "frontend", "10")],
        },
    )
    exporter.set('live_service_rps{namespace="live",service="frontend"}', 35)  # ceil(3.5 x 1 ready pod) = 4

    def rescales() -> list[str]:
        events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
        return [
            e.get("message", "")
            for e in events
            if e.get("involvedObject", {}).get("name") == "backend" and e.get("reason") == "SuccessfulRescale"
        ]

    wait_until(
        lambda: "New size: 4; reason: Service metric service_rps above target" in rescales(),
        timeout=60,
        what="the first scale-up to 4",
    )
    # a Value target multiplies the ratio by the ready pods, and this value does not fall as
    # pods are added, so upstream keeps going: 3.5 x 4 = 14, clamped at maxReplicas 6
    wait_until(lambda: replicas(cluster, "backend") == 6, timeout=60, what="the clamp at 6")


def test_cpu_utilization_through_metrics_api_is_clamped_at_max(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(cpu_deployment(NS, "cpu-app")))
    # ready, not only running: an unready pod's CPU is not counted in its first minutes (as
    # upstream), and kwok marks pods ready a moment after running -- later on a busy machine
    wait_until(lambda: len(ready_pods(cluster, "cpu-app")) == 1, timeout=90, what="1 ready pod")
    make_hpa(
        cluster,
        "cpu-app",
        {
            "minReplicas": 1,
            "maxReplicas": 2,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    )
    for name in running_pods(cluster, "cpu-app"):  # 300% of request: ceil(6 x 1) = 6, clamped at 2
        exporter.set(f'live_container_cpu_cores{{namespace="{NS}",pod="{name}",container="main"}}', 0.3)
    try:
        wait_until(lambda: replicas(cluster, "cpu-app") == 2, timeout=90, what="scale-up clamped at 2")
    except AssertionError:
        snap = python_m("controller", "snapshot", f"{NS}/cpu-app", f"--kubeconfig={cluster.kubeconfig}")
        import yaml

        data = yaml.safe_load(snap.stdout) or {}
        pods = [
            (p["metadata"]["name"], p["status"].get("startTime"), p["status"].get("conditions"))
            for p in data.get("pods", [])
            if p["metadata"]["name"].startswith("cpu-app")
        ]
        metrics = [
            (m["metadata"]["name"], m.get("timestamp"), m.get("window"), m.get("containers"))
            for m in data.get("podMetrics", [])
        ]
        raise AssertionError(
            f"now={data.get('now')}\npods={pods}\npodMetrics={metrics}\n"
            + json.dumps(hpa(cluster, "cpu-app").get("status"), indent=1)
        ) from None
    wait_until(
        lambda: condition(cluster, "cpu-app", "ScalingLimited") == "True/TooManyReplicas",
        timeout=30,
        what="the TooManyReplicas condition",
    )
    metric = hpa(cluster, "cpu-app")["status"]["currentMetrics"][0]["resource"]["current"]
    assert metric["averageUtilization"] == 300


def test_watches_resume_after_the_apiserver_restarts(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    make_target(cluster, "restart-app", 1, requests_spec(4))
    set_requests(cluster, exporter, "restart-app", 10)
    wait_until(
        lambda: condition(cluster, "restart-app", "ScalingActive") == "True/ValidMetricFound",
        timeout=60,
        what="a first reconcile",
    )
    cluster.restart("apiserver")
    set_requests(cluster, exporter, "restart-app", 30)  # ceil(3 x 1) = 3
    wait_until(lambda: replicas(cluster, "restart-app") == 3, timeout=90, what="a scale-up after the restart")
    assert controller.proc.poll() is None


def split_events(cluster: Cluster, name: str) -> set[tuple[str, int, str]]:
    items = json.loads(
        cluster.kubectl(
            "-n", NS, "get", "events", f"--field-selector=involvedObject.name={name}", "-o", "json"
        ).stdout
    )["items"]
    return {(e["metadata"]["name"], int(e.get("count") or 1), str(e.get("lastTimestamp"))) for e in items}


def test_a_paused_leader_writes_nothing_after_resuming(
    cluster: Cluster, controller: Controller, tmp_path: Path
) -> None:
    """Split brain: the leader is frozen (SIGSTOP) until a standby has taken the Lease; the
    standby is then frozen too and the target is pushed below minReplicas, so the old leader
    has overdue work the moment it resumes. It must write nothing (no scale, status or event)
    and stop, because its last renewal is older than its renew deadline."""
    make_target(cluster, "split-app", 2, {**requests_spec(5), "minReplicas": 2}, labels={"ha": "split"})
    flags = (
        "--leader-elect",
        "--leader-elect-resource-namespace=default",
        "--leader-elect-resource-name=promhpa-split-test",
        "--leader-elect-lease-duration=6s",
        "--leader-elect-renew-deadline=4s",
        "--leader-elect-retry-period=1s",
        "--hpa-selector=ha=split",
    )

    def holder() -> str:
        return lease_holder(cluster, "promhpa-split-test")

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with start_controller(cluster, tmp_path / "a", *flags) as first, resumed(first):
        wait_until(lambda: holder() == leader_identity(first.log), timeout=30, what="the first to lead")
        wait_until(
            lambda: reconciles(first.log, "split-app") > 0, timeout=30, what="the leader's first reconcile"
        )
        with start_controller(cluster, tmp_path / "b", *flags) as second, resumed(second):
            second_id = leader_identity(second.log)
            os.kill(first.proc.pid, signal.SIGSTOP)
            wait_until(lambda: holder() == second_id, timeout=30, what="the standby to take over")
            wait_until(lambda: reconciles(second.log, "split-app") > 0, timeout=30,
                       what="the new leader's first reconcile")  # fmt: skip
            os.kill(second.proc.pid, signal.SIGSTOP)
            cluster.kubectl("-n", NS, "scale", "deployment", "split-app", "--replicas=1")
            hpa_version = hpa(cluster, "split-app")["metadata"]["resourceVersion"]
            events = split_events(cluster, "split-app")
            os.kill(first.proc.pid, signal.SIGCONT)
            first.proc.wait(timeout=20)  # it exits: its leadership lapsed while it was frozen
            assert first.proc.returncode != 0
            assert "lost leadership" in first.log.read_text()
            assert replicas(cluster, "split-app") == 1, "the resumed old leader wrote a scale"
            assert hpa(cluster, "split-app")["metadata"]["resourceVersion"] == hpa_version, (
                "it wrote the status"
            )
            assert split_events(cluster, "split-app") == events, "it wrote an event"


@contextlib.contextmanager
def resumed(c: Controller) -> Iterator[None]:
    """A controller the test may freeze (SIGSTOP) is let run again before it is stopped."""
    try:
        yield
    finally:
        if c.proc.poll() is None:
            os.kill(c.proc.pid, signal.SIGCONT)


def reconciles(log: Path, hpa_name: str) -> int:
    """How many times a controller's console log says it reconciled the HPA."""
    return log.read_text().count(f"hpa={NS}/{hpa_name}")


def test_a_hung_adapter_slows_reconciles_without_stalling_them(
    cluster: Cluster,
    exporter: Exporter,
    adapter: AdapterProcess,
    controller: Controller,
    tmp_path: Path,
) -> None:
    """The adapter frozen (SIGSTOP: connections accepted, never answered): each metrics read
    gives up after --metrics-timeout, the HPA reports the failure and keeps its replicas,
    and the controller keeps reconciling instead of waiting on the adapter."""
    make_target(
        cluster, "stall-app", 2, requests_spec(5, immediate_scale_down=True), labels={"stall": "true"}
    )
    set_requests(cluster, exporter, "stall-app", 10)
    with start_controller(cluster, tmp_path, "--hpa-selector=stall", "--metrics-timeout=2s") as c:
        wait_until(lambda: condition(cluster, "stall-app", "ScalingActive") == "True/ValidMetricFound",
                   timeout=60, what="a valid metric")  # fmt: skip
        os.kill(adapter.proc.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            failing = "False/FailedGetPodsMetric"
            wait_until(lambda: condition(cluster, "stall-app", "ScalingActive") == failing,
                       timeout=30, what="the timed-out read to show in the conditions")  # fmt: skip
            failed_after = time.monotonic() - start
            before = reconciles(c.log, "stall-app")
            # still reconciling: the next one comes within a period and a timeout, not never
            wait_until(lambda: reconciles(c.log, "stall-app") > before, timeout=5, what="another reconcile")
            warning = [line for line in c.log.read_text().splitlines() if "HPA cannot scale" in line]
            assert warning, "a failing HPA is a warning in the logs"
            assert "reason=FailedGetPodsMetric" in warning[0]
            assert replicas(cluster, "stall-app") == 2
        finally:
            os.kill(adapter.proc.pid, signal.SIGCONT)
        assert failed_after < 1 + 2 + 5  # a sync period, the timeout, and the write
        wait_until(lambda: condition(cluster, "stall-app", "ScalingActive") == "True/ValidMetricFound",
                   timeout=60, what="recovery once the adapter answers again")  # fmt: skip


def test_reconciled_once_per_sync_period_and_at_once_after_a_spec_change(
    cluster: Cluster, exporter: Exporter, controller: Controller, tmp_path: Path
) -> None:
    """Upstream's cadence: our own status write coming back through the watch does not
    trigger another reconcile (the metric ticks, so every reconcile writes the status); a
    spec change (the generation moves) is reconciled at once, not at the next period."""
    make_target(cluster, "cadence-app", 1, requests_spec(5), labels={"cadence": "true"})
    pod = running_pods(cluster, "cadence-app")[0]
    stop = threading.Event()

    def tick() -> None:
        value = 0
        while not stop.is_set():
            value = value % 5 + 1  # 1..5, off the scrape's beat: currentMetrics changes every reconcile
            exporter.set(f'live_requests{{namespace="{NS}",pod="{pod}"}}', value)
            time.sleep(0.7)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    cadence = ("--hpa-selector=cadence", "--horizontal-pod-autoscaler-sync-period=4s")
    try:
        with start_controller(cluster, tmp_path, *cadence) as c:
            wait_until(lambda: reconciles(c.log, "cadence-app") > 0, timeout=30, what="the first reconcile")
            before = reconciles(c.log, "cadence-app")
            time.sleep(12)  # three sync periods: a count over a fixed span, not a wait for an event
            during = reconciles(c.log, "cadence-app") - before
            print(f"{during} reconciles in three 4s periods")
            assert 2 <= during <= 4, f"{during} reconciles in three 4s periods"
            cluster.kubectl(
                "-n", NS, "patch", "hpa", "cadence-app", "--type=merge", "-p", '{"spec":{"minReplicas":3}}'
            )
            start = time.monotonic()
            wait_until(
                lambda: replicas(cluster, "cadence-app") == 3, timeout=10, what="the spec change acted on"
            )
            assert time.monotonic() - start < 3, "a spec change waited for the sync period"
    finally:
        stop.set()
        ticker.join()


def test_snapshot_with_the_controllers_memory_reproduces_the_live_status(
    cluster: Cluster, exporter: Exporter, controller: Controller, tmp_path: Path
) -> None:
    """`snapshot --controller-url` captures what the live reconcile saw -- the pods through the
    same index, the scale, the metrics, and the controller's memory -- so `decide` on it
    writes the very status the live controller wrote: conditions with reasons, messages and
    transition times, current metrics, replicas; and emits nothing new."""
    make_target(
        cluster,
        "repro-app",
        2,
        {**requests_spec(6), "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
        labels={"repro": "true"},
    )
    set_requests(cluster, exporter, "repro-app", 9)  # 9 per pod against 10: keep 2
    port = free_port()
    with start_controller(cluster, tmp_path, "--hpa-selector=repro", f"--secure-port={port}") as c:
        wait_until(lambda: condition(cluster, "repro-app", "ScalingActive") == "True/ValidMetricFound",
                   timeout=60, what="the live controller's steady state")  # fmt: skip
        # a few more reconciles: its memory holds several recommendations
        steady = reconciles(c.log, "repro-app")
        wait_until(
            lambda: reconciles(c.log, "repro-app") >= steady + 2, timeout=10, what="two more reconciles"
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller",
                "snapshot",
                f"{NS}/repro-app",
                f"--kubeconfig={cluster.kubeconfig}",
                f"--controller-url=https://127.0.0.1:{port}",
                "--insecure-skip-tls-verify",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            cwd=ROOT,
        )
        snap = yaml.safe_load(out.stdout)
        assert len(snap["history"]["recommendations"]) >= 2  # the live memory, not a first sight
        decided = decide(parse_snapshot(snap))
        live = hpa(cluster, "repro-app")["status"]
        assert (decided.rescale, [e.reason for e in decided.events]) == (False, [])
        assert decided.status == live
