"""Shadow mode beside kube-controller-manager's own HPA controller (the real binary), at
Kubernetes v1.37.2 and at an older release (v1.35.4, a control plane of its own): promhpa
reads the API server's version and decides as that release.

kcm runs with only its HPA controller and owns nine varied HPAs (Pods, Object, External and
CPU metrics; rate-limit policies up and down, percent policies with selectPolicy Min, a
disabled direction, a cap, a missing metric); promhpa runs beside it with ``--dry-run``.
Both read the same metrics through the aggregator from the same adapter; a load driver
spreads each app's total load over its running pods (the load does not grow with the
replicas), in three phases. promhpa must find no difference in desired replicas or any
condition's status and reason, must write nothing, and its events must be its own.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster import ClusterError
from localcluster.manifests import external_metric
from localcluster.manifests import hpa_manifest
from localcluster.manifests import object_metric
from localcluster.manifests import pods_metric
from localcluster.tools import K8S_OLDER_VERSION
from localcluster.tools import K8S_VERSION
from tests.live import running_adapter
from tests.live import running_controller
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import controller_get
from tests.support import controller_get_json
from tests.support import cpu_deployment
from tests.support import free_port
from tests.support import insecure_tls
from tests.support import missing
from tests.support import prefixed_rules
from tests.support import python_m
from tests.support import start_hpa_only_kcm
from tests.support import stop_process
from tests.support import wait_http
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "shadow"
SYNC = "2s"
STABILIZATION = "10s"
CONFIG = prefixed_rules("shadow")

POD_METRIC = pods_metric("requests", "10")


def rules(window: int, *policies: tuple[str, int, int], select: str = "Max") -> dict[str, Any]:
    return {
        "stabilizationWindowSeconds": window,
        "selectPolicy": select,
        "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in policies],
    }


# name -> (HPA spec without scaleTargetRef, total load per phase)
HPAS: dict[str, tuple[dict[str, Any], tuple[float, float, float]]] = {
    "plain": ({"minReplicas": 1, "maxReplicas": 8, "metrics": [POD_METRIC]}, (25, 60, 12)),
    "ratelimited": (
        {
            "minReplicas": 1,
            "maxReplicas": 8,
            "metrics": [POD_METRIC],
            "behavior": {"scaleUp": rules(0, ("Pods", 1, 10)), "scaleDown": rules(0, ("Pods", 1, 6))},
        },
        (25, 70, 5),
    ),
    "percent": (
        {
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [POD_METRIC],
            "behavior": {
                "scaleUp": rules(0, ("Percent", 50, 8), ("Pods", 1, 8), select="Min"),
                "scaleDown": rules(6, ("Percent", 50, 8)),
            },
        },
        (30, 90, 10),
    ),
    "disabled": (
        {
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [POD_METRIC],
            "behavior": {"scaleDown": {"selectPolicy": "Disabled"}},
        },
        (20, 40, 5),
    ),
    "capped": ({"minReplicas": 1, "maxReplicas": 2, "metrics": [POD_METRIC]}, (15, 80, 80)),
    "object": (
        {
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [object_metric("service_rps", "Service", "frontend", "100")],
        },
        (150, 400, 50),
    ),
    "external": (
        {
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [external_metric("shadow_queue_depth", "20", {"queue": "jobs"})],
        },
        (30, 95, 10),
    ),
    "cpu": (
        {
            "minReplicas": 1,
            "maxReplicas": 6,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
        (0.08, 0.2, 0.03),
    ),
    "nodata": (
        {
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [pods_metric("absent", "1")],
        },
        (0, 0, 0),
    ),
}
PHASE_SECONDS = (25, 40, 40)


class LoadDriver(threading.Thread):
    """Spreads each app's total load over its running pods once a second (the load does
    not depend on how many replicas serve it)."""

    def __init__(self, cluster: Cluster, exporter: Exporter) -> None:
        super().__init__(daemon=True)
        self.cluster, self.exporter = cluster, exporter
        self.phase = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(1):
            self.apply()

    def apply(self) -> None:
        out = self.cluster.kubectl("-n", NS, "get", "pods", "-o", "json", check=False).stdout
        pods: dict[str, list[str]] = {}
        for p in json.loads(out or '{"items": []}').get("items", []):
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"):
                pods.setdefault(p["metadata"]["labels"].get("app", ""), []).append(p["metadata"]["name"])
        e = self.exporter
        for app, (_, loads) in HPAS.items():
            total, names = loads[self.phase], pods.get(app, [])
            if app in ("object", "external", "nodata"):
                continue
            for pod in names:
                if app == "cpu":
                    e.set(
                        f'shadow_container_cpu_cores{{namespace="{NS}",pod="{pod}",container="app"}}',
                        total / len(names),
                    )
                else:
                    e.set(f'shadow_requests{{namespace="{NS}",pod="{pod}"}}', total / len(names))
        e.set(f'shadow_service_rps{{namespace="{NS}",service="frontend"}}', HPAS["object"][1][self.phase])
        e.set(f'shadow_queue_depth{{namespace="{NS}",queue="jobs"}}', HPAS["external"][1][self.phase])


@dataclass
class Plane:
    """A control plane at one Kubernetes release, with the adapter serving its metrics."""

    cluster: Cluster
    adapter: AdapterProcess


@pytest.fixture(params=[K8S_VERSION, K8S_OLDER_VERSION])
def plane(
    request: pytest.FixtureRequest,
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Plane]:
    """The session's control plane (K8S_VERSION), or one of the older release whose
    kube-controller-manager promhpa must agree with as that release (it reads the API
    server's version to choose)."""
    for series in (f'shadow_requests{{namespace="{NS}",pod="seed"}}',
                   f'shadow_service_rps{{namespace="{NS}",service="frontend"}}',
                   f'shadow_queue_depth{{namespace="{NS}",queue="jobs"}}'):  # fmt: skip
        exporter.set(series, 0)
    wait_until(lambda: prometheus.query("shadow_queue_depth") != [], what="scrape")
    own = None
    if request.param != cluster.k8s_version:
        own = Cluster(tmp_path_factory.mktemp(f"cluster-{request.param}"), k8s_version=request.param)
        try:
            own.up()
        except ClusterError as e:
            own.down()
            missing(f"the {request.param} control plane did not start: {e}")
    plane_cluster = own or cluster
    try:
        with running_adapter(plane_cluster, prometheus, tmp_path_factory.mktemp("adapter"), CONFIG) as a:
            yield Plane(plane_cluster, a)
    finally:
        if own is not None:
            own.down()


def start_kcm(cluster: Cluster, log: Path) -> subprocess.Popen[bytes]:
    """A second kube-controller-manager that runs only the HPA controller."""
    return start_hpa_only_kcm(
        cluster,
        log,
        free_port(),
        f"--horizontal-pod-autoscaler-sync-period={SYNC}",
        f"--horizontal-pod-autoscaler-downscale-stabilization={STABILIZATION}",
        "--v=2",
    )


def shadow(cluster: Cluster, port: int) -> dict[str, Any]:
    return dict(controller_get_json(cluster.kubeconfig, port, "/debug/shadow"))


def make_apps(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "frontend", "namespace": NS},
            "spec": {"ports": [{"port": 80}]},
        }
    ]
    for app in HPAS:
        objects.append(cpu_deployment(NS, app))
    cluster.apply(objects)
    try:
        wait_until(
            lambda: all(
                d.get("status", {}).get("readyReplicas") == 1
                for d in json.loads(cluster.kubectl("-n", NS, "get", "deployments", "-o", "json").stdout)[
                    "items"
                ]
            ),
            timeout=90,
            what="one ready pod per app",
        )
    except AssertionError as e:  # say which of kube-controller-manager's and kwok's steps did not happen
        raise AssertionError(f"{e}\n{apps_state(cluster)}") from None


def apps_state(cluster: Cluster) -> str:
    """Each app's Deployment status beside its pods' phase and readiness: a Deployment that
    stays unready while its pod is Ready is kube-controller-manager's, a pod that stays
    Pending is kwok's or the scheduler's."""
    out = cluster.kubectl("-n", NS, "get", "deployments,replicasets,pods", "-o", "wide", check=False)
    return out.stdout + out.stderr


def make_hpas(cluster: Cluster) -> None:
    items = []
    for app, (spec, _) in HPAS.items():
        item = hpa_manifest(NS, app, labels={"shadow-test": "true"})
        item["spec"].update(spec)
        items.append(item)
    cluster.apply(items)


@pytest.mark.timeout(480)
def test_dry_run_beside_kube_controller_manager_finds_no_difference(
    plane: Plane, exporter: Exporter, tmp_path: Path
) -> None:
    cluster = plane.cluster
    make_apps(cluster)
    driver = LoadDriver(cluster, exporter)
    driver.apply()
    driver.start()
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    flags = ("--dry-run", "--hpa-selector=shadow-test",  # kcm acts on every HPA; we compare ours
             f"--secure-port={port}", f"--horizontal-pod-autoscaler-sync-period={SYNC}",
             f"--horizontal-pod-autoscaler-downscale-stabilization={STABILIZATION}")  # fmt: skip
    kcm: subprocess.Popen[bytes] | None = None
    try:
        with running_controller(cluster.kubeconfig, tmp_path / "promhpa.log", *flags) as ours:
            kcm = start_kcm(cluster, tmp_path / "kcm.log")
            wait_http(f"{url}/healthz", "the dry-run controller", context=insecure_tls())
            make_hpas(cluster)
            for phase, seconds in enumerate(PHASE_SECONDS):
                driver.phase = phase
                time.sleep(seconds)
            result = shadow(cluster, port)
            # promhpa decided as the cluster's own release (read from the API server)
            release = cluster.k8s_version.removeprefix("v").rsplit(".", 1)[0]
            assert f"kubernetes={release}" in ours.log.read_text()
            compare = python_m(
                "controller",
                "compare",
                f"--controller-url={url}",
                "--all",
                f"--kubeconfig={cluster.kubeconfig}",
                "--insecure-skip-tls-verify",
            )
            print(compare.stdout)
            counts = [
                ln
                for ln in controller_get(cluster.kubeconfig, port, "/metrics").decode().splitlines()
                if ln.startswith("promhpa_controller_shadow_comparisons_total")
            ]
            print("\n".join(counts))
            items = {i["name"]: i for i in result["items"]}
            assert set(items) == set(HPAS)
            assert all(i["ownerStatus"].get("conditions") for i in items.values()), "kcm decided every HPA"
            paired = result["ownerDecisionsCompared"]
            print("owner decisions compared:", paired)
            differing = [ln for ln in ours.log.read_text().splitlines() if "differs from the owner" in ln]
            assert paired["differ"] == 0, compare.stdout + "\n".join(differing)
            assert result["differencesTotal"] == 0, compare.stdout
            assert paired["agree"] >= 20  # not vacuous: most owner decisions had a comparable one of ours
            assert compare.returncode == 0, compare.stdout + compare.stderr
            # the paths that matter were taken: kcm rescaled under rate limits, which our memory followed
            history = controller_get_json(cluster.kubeconfig, port, f"/debug/history/{NS}/ratelimited")
            assert history.get("scaleUpEvents"), history
            assert history.get("scaleDownEvents"), history
            assert items["capped"]["status"]["desiredReplicas"] == 2
            reasons = {c["type"]: c["reason"] for c in items["nodata"]["status"]["conditions"]}
            assert reasons["ScalingActive"] == "FailedGetPodsMetric"
            # promhpa wrote nothing (no HPA or Deployment names it as a field manager) and its
            # events are its own
            for kind in ("hpa", "deployments"):
                objs = json.loads(
                    cluster.kubectl("-n", NS, "get", kind, "--show-managed-fields", "-o", "json").stdout
                )
                managers = {
                    m.get("manager") for o in objs["items"] for m in o["metadata"].get("managedFields", [])
                }
                assert "promhpa" not in managers, managers
            events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
            mine = [e for e in events if e.get("source", {}).get("component") == "promhpa"]
            assert mine
            assert all(e["reason"].startswith("DryRun") for e in mine)
            assert not any(
                e["reason"] == "SuccessfulRescale"
                and e.get("source", {}).get("component") != "horizontal-pod-autoscaler"
                for e in events
            )
    finally:
        driver.stopped.set()
        if kcm is not None:
            stop_process(kcm, timeout=10)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
