"""promhpa's own HPA kind on the real control plane, with kube-controller-manager's HPA
controller on beside it -- as on a managed cluster, where it cannot be turned off.

promhpa runs as the chart runs it by default: the built-in HPAs shadowed (``--dry-run``),
objects of its own kind (``autoscaling.promhpa.io/v2``, the chart's CRD) acted on. Each
object reads one External metric through the adapter (10 per replica) and scales a
Deployment of kwok pods. The controller's own sync period is upstream's 15 s; the objects
set theirs to 2 s (``spec.controller.syncPeriod``), so every wait below is shorter than one
period of the controller's: a test passes only when the object's knob is honoured.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.resources import HPA
from shared.kube.resources import OWN_HPA
from tests.controller.replay.hpa_table import CASES
from tests.controller.replay.hpa_table import document
from tests.controller.replay.test_hpa_validation_live import refusals
from tests.live import Live
from tests.live import get_json
from tests.live import scale_replicas
from tests.support import ROOT
from tests.support import AdapterProcess
from tests.support import external_metric_app
from tests.support import free_port
from tests.support import prefixed_rules
from tests.support import python_m
from tests.support import start_hpa_only_kcm
from tests.support import stop_process
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "ownkind"
CRD = ROOT / "charts" / "promhpa" / "crds" / "horizontalpodautoscalers.yaml"
OWN = "/apis/autoscaling.promhpa.io/v2"
SYNC = "2s"
PORT = free_port()
WEBHOOK_PORT = free_port()
# queue -> (the object's spec.controller, the metric's first value)
APPS: dict[str, tuple[dict[str, Any], float]] = {
    "web": ({"syncPeriod": SYNC}, 20),
    "paused": ({"syncPeriod": SYNC, "paused": True}, 20),
    "fallback": ({"syncPeriod": SYNC, "fallback": {"replicas": 3, "failureDurationSeconds": 0}}, 20),
    "shared": ({"syncPeriod": SYNC}, 20),
}


def own_kind(app: list[dict[str, Any]], knobs: dict[str, Any]) -> list[dict[str, Any]]:
    """A built-in HPA's manifest made ours by its apiVersion, plus the knobs."""
    deployment, hpa = app
    hpa = {**hpa, "apiVersion": "autoscaling.promhpa.io/v2"}
    hpa["spec"] = {**hpa["spec"], "controller": knobs,
                   "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}  # fmt: skip
    return [deployment, hpa]


def app(name: str) -> list[dict[str, Any]]:
    """The Deployment and our object; "fallback" reads a queue no series has, so its metric
    always fails."""
    queue = "none" if name == "fallback" else name
    built_in = external_metric_app(NS, name, "own_queue_depth", labels={"own-kind": "true"},
                                   max_replicas=8, selector={"queue": queue})  # fmt: skip
    return own_kind(built_in, APPS[name][0])


def objects() -> list[dict[str, Any]]:
    """Everything but our object on "shared", which a built-in HPA claims first."""
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for name in APPS:
        out += app(name) if name != "shared" else app(name)[:1]
    builtin = external_metric_app(NS, "shared", "own_queue_depth", labels={"own-kind": "true"},
                                  max_replicas=8, selector={"queue": "shared"})[1]  # fmt: skip
    out.append({**builtin, "metadata": {**builtin["metadata"], "name": "shared-builtin"}})
    return out


def own(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(get_json(cluster, f"{OWN}/namespaces/{NS}/horizontalpodautoscalers/{name}"))


def conditions(cluster: Cluster, name: str) -> dict[str, tuple[str, str, str]]:
    status = own(cluster, name).get("status", {})
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions", [])}


def replicas(cluster: Cluster, name: str) -> int:
    return scale_replicas(cluster, NS, name)


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    live.publish({f'own_queue_depth{{namespace="{NS}",queue="{q}"}}': v for q, (_, v) in APPS.items()},
                 "own_queue_depth", count=len(APPS))  # fmt: skip
    return live.adapter(prefixed_rules("own"))


@pytest.fixture(scope="module")
def running(
    cluster: Cluster, live: Live, adapter: AdapterProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    cluster.kubectl("apply", "--server-side", "-f", str(CRD))
    crd = "crd/horizontalpodautoscalers.autoscaling.promhpa.io"
    cluster.kubectl("wait", "--for=condition=Established", crd, "--timeout=60s")
    log = tmp_path_factory.mktemp("kcm") / "kcm.log"
    kcm = start_hpa_only_kcm(cluster, log, free_port(), f"--horizontal-pod-autoscaler-sync-period={SYNC}")
    live.on_exit(lambda: stop_process(kcm))
    c = live.controller(
        "--dry-run",
        "--hpa-selector=own-kind=true",
        "--log-format=json",
        f"--secure-port={PORT}",
        f"--admission-webhook-port={WEBHOOK_PORT}",
    )
    cluster.apply(objects())
    wait_until(lambda: replicas(cluster, "web") == 2, timeout=60, what="web at its metric's 2 replicas")
    yield c.log
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def scale_writers(cluster: Cluster, name: str) -> set[str]:
    """Who wrote the Deployment's scale subresource (its managedFields)."""
    deployment = get_json(cluster, f"/apis/apps/v1/namespaces/{NS}/deployments/{name}")
    return {m["manager"] for m in deployment["metadata"]["managedFields"] if m.get("subresource") == "scale"}


def reconciled_at(log: Path, name: str) -> list[float]:
    """When the controller logged each reconcile of our object ``name``."""
    out = []
    for line in log.read_text().splitlines():
        e = json.loads(line) if line.startswith("{") else {}
        if e.get("event") == "reconciled" and e.get("hpa") == f"{NS}/{name}":
            out.append(datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp())
    return out


def test_an_object_of_our_kind_scales_its_deployment_up_and_down_beside_kcm(
    cluster: Cluster, live: Live, running: Path
) -> None:
    live.exporter.set(f'own_queue_depth{{namespace="{NS}",queue="web"}}', 60)
    wait_until(lambda: replicas(cluster, "web") == 6, timeout=30, what="web up to 6")
    live.exporter.set(f'own_queue_depth{{namespace="{NS}",queue="web"}}', 10)
    wait_until(lambda: replicas(cluster, "web") == 1, timeout=30, what="web down to 1")
    wait_until(lambda: own(cluster, "web")["status"]["desiredReplicas"] == 1, timeout=10, what="its status")
    assert conditions(cluster, "web")["ScalingActive"][:2] == ("True", "ValidMetricFound")


def test_only_promhpa_writes_the_object_and_its_targets_scale(cluster: Cluster, running: Path) -> None:
    managed = own(cluster, "web")["metadata"]["managedFields"]
    assert {m["manager"] for m in managed if m.get("subresource") == "status"} == {"promhpa-controller"}
    assert scale_writers(cluster, "web") == {"promhpa-controller"}
    events = get_json(cluster, f"/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3Dweb")
    rescales = [e for e in events["items"] if e["reason"] == "SuccessfulRescale"]
    assert rescales
    assert {(e["source"]["component"], e["involvedObject"]["apiVersion"]) for e in rescales} == {
        ("promhpa", "autoscaling.promhpa.io/v2")
    }


def test_the_objects_sync_period_is_honoured(running: Path) -> None:
    times = reconciled_at(running, "web")
    assert len(times) >= 5, f"only {len(times)} reconciles of {NS}/web logged"
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert 1.5 <= statistics.median(gaps) <= 3.0, gaps  # 2 s, not the controller's 15 s


def test_paused_holds_the_count_and_says_so(cluster: Cluster, running: Path) -> None:
    wait_until(lambda: "ScalingActive" in conditions(cluster, "paused"), timeout=30, what="paused decided")
    active = conditions(cluster, "paused")["ScalingActive"]
    assert active[:2] == ("False", "ScalingPaused")
    assert "held at 1" in active[2]
    assert replicas(cluster, "paused") == 1  # its metric asks for 2


def test_a_failing_metric_brings_the_fallbacks_replicas(cluster: Cluster, running: Path) -> None:
    wait_until(lambda: replicas(cluster, "fallback") == 3, timeout=30, what="the fallback's 3 replicas")
    assert conditions(cluster, "fallback")["FallbackActive"][:2] == ("True", "Static")


def test_a_target_a_builtin_hpa_also_claims_is_left_alone_and_the_condition_names_it(
    cluster: Cluster, running: Path
) -> None:
    builtin = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/shared-builtin"
    wait_until(lambda: get_json(cluster, builtin).get("status", {}).get("conditions"), timeout=30,
               what="kcm deciding the built-in HPA (and promhpa shadowing it)")  # fmt: skip
    time.sleep(1)  # promhpa's shadow reconciles an added HPA at once; give it the moment
    cluster.apply(app("shared")[1:])
    wait_until(lambda: "ScalingActive" in conditions(cluster, "shared"), timeout=30, what="shared decided")
    active = conditions(cluster, "shared")["ScalingActive"]
    assert active[:2] == ("False", "AmbiguousSelector")
    assert f"{NS}/shared-builtin (autoscaling/v2)" in active[2]
    assert "promhpa-controller" not in scale_writers(cluster, "shared")


def test_kubectl_get_phpa_prints_the_columns_of_kubectl_get_hpa(cluster: Cluster, running: Path) -> None:
    out = cluster.kubectl("get", "phpa", "-n", NS, "web").stdout.splitlines()
    assert out[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert out[1].split()[:2] == ["web", "web"]


def test_why_and_snapshot_take_the_kind_and_decide_it_with_its_knobs(
    cluster: Cluster, running: Path, tmp_path: Path
) -> None:
    reach = (f"--controller-url=https://127.0.0.1:{PORT}", "--insecure-skip-tls-verify",
             f"--kubeconfig={cluster.kubeconfig}")  # fmt: skip
    why = python_m("controller", "why", f"{NS}/paused", "--kind=phpa", "-o", "json", *reach)
    assert why.returncode == 0, why.stderr
    assert json.loads(why.stdout)["syncPeriodSeconds"] == 2.0
    builtin = python_m("controller", "why", f"{NS}/paused", *reach)
    assert builtin.returncode == 1  # no built-in HPA of that name
    snap = python_m("controller", "snapshot", f"{NS}/paused", "--kind=phpa", *reach)
    assert snap.returncode == 0, snap.stderr
    doc = yaml.safe_load(snap.stdout)
    assert doc["hpa"]["spec"]["controller"]["paused"] is True
    path = tmp_path / "paused.yaml"
    path.write_text(snap.stdout)
    decided = python_m("controller", "decide", "-o", "json", str(path))
    assert decided.returncode == 0, decided.stderr
    assert json.loads(decided.stdout)["status"]["conditions"][-1]["reason"] == "ScalingPaused"


def test_compare_sets_the_objects_decision_beside_its_built_in_twins(cluster: Cluster, running: Path) -> None:
    """``paused`` holds the count where the built-in controller would scale; ``web``'s only
    knob (its sync period) changes no decision."""
    reach = (f"--controller-url=https://127.0.0.1:{PORT}", "--insecure-skip-tls-verify",
             f"--kubeconfig={cluster.kubeconfig}")  # fmt: skip
    paused = python_m("controller", "compare", "--kind=phpa", f"{NS}/paused", "-o", "json", *reach)
    assert paused.returncode == 1, paused.stderr  # a difference
    (item,) = json.loads(paused.stdout)["items"]
    assert item["knobs"] == ["paused", "syncPeriod"]
    assert (item["desiredReplicas"], item["builtInDesiredReplicas"]) == (1, 2)  # 20 / 10 a replica
    assert "ScalingActive: promhpa False/ScalingPaused, built-in True/ValidMetricFound" in item["differences"]
    web = python_m("controller", "compare", "--kind=phpa", f"{NS}/web", *reach)
    assert web.returncode == 0, web.stdout + web.stderr
    _, ours, twin, knobs, differences = web.stdout.splitlines()[1].split(maxsplit=4)
    assert (ours, knobs, differences) == (twin, "syncPeriod", "-")


def kubectl_promhpa(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``kubectl promhpa ...`` as a user runs it: the plugin on PATH, the cluster's kubeconfig."""
    plugin = Path(sys.executable).parent / "kubectl-promhpa"
    return subprocess.run([str(plugin), *args, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def lowest_replicas_while(cluster: Cluster, name: str, act: Callable[[], Any]) -> tuple[int, Any]:
    """The lowest replica count of ``name`` seen while ``act`` runs, and what it returned."""
    seen: list[int] = [replicas(cluster, name)]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(replicas(cluster, name))
            time.sleep(0.1)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        out = act()
    finally:
        time.sleep(2 * 2.0)  # a sync period of either owner after the move
        done.set()
        t.join()
    return min(seen), out


def test_adopt_then_release_keep_the_replicas_and_hand_over_the_acting(
    cluster: Cluster, live: Live, running: Path
) -> None:
    depth = f'own_queue_depth{{namespace="{NS}",queue="moved"}}'
    live.exporter.set(depth, 30)
    deployment, builtin = external_metric_app(NS, "moved", "own_queue_depth", labels={"own-kind": "true"},
                                              max_replicas=8, selector={"queue": "moved"})  # fmt: skip
    builtin["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 0}}
    cluster.apply([deployment, builtin])
    wait_until(lambda: replicas(cluster, "moved") == 3, timeout=60, what="kcm scaling moved to 3")
    dry = kubectl_promhpa(cluster, "adopt", f"{NS}/moved", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "autoscaling.promhpa.io/v2" in dry.stdout
    assert cluster.kubectl("get", "phpa", "-n", NS, "moved", check=False).returncode != 0  # nothing written
    before = get_json(cluster, f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/moved")
    low, out = lowest_replicas_while(
        cluster, "moved", lambda: kubectl_promhpa(cluster, "adopt", f"{NS}/moved")
    )
    assert out.returncode == 0, out.stderr
    assert low >= 3
    assert own(cluster, "moved")["status"]["lastScaleTime"] >= before["status"]["lastScaleTime"]
    gone = cluster.kubectl("get", "hpa", "-n", NS, "moved", check=False)
    assert gone.returncode != 0
    live.exporter.set(depth, 50)  # promhpa acts on it now
    wait_until(lambda: replicas(cluster, "moved") == 5, timeout=30, what="promhpa scaling the adopted HPA")
    events = get_json(cluster, f"/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3Dmoved")
    assert any(e["reason"] == "Adopted" and e["source"]["component"] == "promhpa" for e in events["items"])
    low, out = lowest_replicas_while(
        cluster, "moved", lambda: kubectl_promhpa(cluster, "release", f"{NS}/moved")
    )
    assert out.returncode == 0, out.stderr
    assert low >= 5
    live.exporter.set(depth, 40)  # kcm acts on it again
    wait_until(lambda: replicas(cluster, "moved") == 4, timeout=30, what="kcm scaling the released HPA")
    assert cluster.kubectl("get", "phpa", "-n", NS, "moved", check=False).returncode != 0
    events = get_json(cluster, f"/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3Dmoved")
    released = [e for e in events["items"] if e["reason"] == "Released"]
    assert [e["involvedObject"]["apiVersion"] for e in released] == ["autoscaling/v2"]


@pytest.fixture(scope="module")
def webhook(cluster: Cluster, running: Path) -> Iterator[None]:
    """The controller's admission webhook registered for our kind in this test's namespace,
    as the API server calls it: its self-signed certificate is the CA bundle."""
    cert = running.parent / f"{running.stem}-certs" / "apiserver.crt"
    name = "ownkind-validation"
    cluster.apply([{
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "horizontalpodautoscalers.autoscaling.promhpa.io",
            "clientConfig": {"url": f"https://127.0.0.1:{WEBHOOK_PORT}/validate/horizontalpodautoscalers",
                             "caBundle": base64.b64encode(cert.read_bytes()).decode()},
            "rules": [{"apiGroups": ["autoscaling.promhpa.io"], "apiVersions": ["v2"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["horizontalpodautoscalers"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
        }],
    }])  # fmt: skip
    yield
    cluster.kubectl("delete", "validatingwebhookconfiguration", name, check=False)


def test_the_validation_table_refuses_ours_as_the_api_server_refuses_a_builtin_hpa(
    cluster: Cluster, webhook: None
) -> None:
    docs = [{**document(case), "metadata": {"name": "table", "namespace": NS}} for case in CASES]
    ours = [{**d, "apiVersion": "autoscaling.promhpa.io/v2"} for d in docs]
    builtin = asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), docs, HPA.path(NS)))
    mine = asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), ours, OWN_HPA.path(NS)))
    differ = {case["name"]: {"built-in": b, "ours": o}
              for case, b, o in zip(CASES, builtin, mine, strict=True) if sorted(b) != sorted(o)}  # fmt: skip
    assert not differ, json.dumps(differ, indent=1)
    assert all(builtin), "every case is refused"
