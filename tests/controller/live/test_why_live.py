"""``why`` on the real control plane: the leader found through its Lease and reached through
the API server's port-forward (kwok's kubelet server forwards the pod's port to the
controller on loopback), and a shadow-mode controller explaining what the owner did.

Three HPAs: one that scaled up, one held by its scale-down stabilization window, one
limited by a scale-up policy; their proposals and limiting steps are also on ``/metrics``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import ROOT
from localcluster import Cluster
from localcluster.tools import FORWARDED_POD_PORT
from tests.live import Live
from tests.live import get_json
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import controller_get
from tests.support import external_metric_app
from tests.support import free_port
from tests.support import prefixed_rules
from tests.support import python_m
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "why"
HOME = "promhpa-why"  # the controller's namespace: its Lease and its (kwok) pod
POD = "promhpa-controller-why-0"


WHY = ("--hpa-selector=why", "--horizontal-pod-autoscaler-sync-period=1s")


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    depths = {"up": 30, "held": 10, "limited": 50}
    live.publish({f'why_queue_depth{{namespace="{NS}",queue="{q}"}}': v for q, v in depths.items()},
                 "why_queue_depth", count=3)  # fmt: skip
    return live.adapter(prefixed_rules("why"))


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in (NS, HOME)
    ]
    labels = {"why": "true"}
    for name, replicas, behavior in (
        ("up", 1, None),
        ("held", 4, {"scaleDown": {"stabilizationWindowSeconds": 600}}),
        ("limited", 1, {"scaleUp": {"stabilizationWindowSeconds": 0,
                                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}}),
    ):  # fmt: skip
        app = external_metric_app(NS, name, "why_queue_depth", labels=labels, replicas=replicas,
                                  max_replicas=8, selector={"queue": name})  # fmt: skip
        if behavior:
            app[1]["spec"]["behavior"] = behavior
        out += app
    # the leader's pod as the chart runs it: its name starts the Lease holder's identity, its
    # port "metrics" is the controller's endpoints
    out.append({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": HOME},
        "spec": {"containers": [{"name": "controller", "image": "example.invalid/promhpa",
                                 "ports": [{"name": "metrics", "containerPort": FORWARDED_POD_PORT}]}]},
    })  # fmt: skip
    return out


@pytest.fixture(scope="module")
def leader(cluster: Cluster, live: Live, adapter: AdapterProcess) -> Iterator[Path]:
    cluster.apply(objects())
    pod = f"/api/v1/namespaces/{HOME}/pods/{POD}"
    wait_until(lambda: get_json(cluster, pod)["status"].get("phase") == "Running", timeout=60,
               what="the leader's pod to run")  # fmt: skip
    lease = (f"--leader-elect-resource-namespace={HOME}", "--leader-elect-resource-name=promhpa-controller")
    c = live.controller(*WHY, f"--secure-port={cluster.ports['forwarded']}", "--leader-elect", *lease,
                        name="leader", env={"POD_NAME": POD})  # fmt: skip
    wait_until(
        lambda: scale_replicas(cluster, NS, "up") == 3, timeout=90, what="the leader to scale `up` to 3"
    )
    wait_until(lambda: scale_replicas(cluster, NS, "limited") == 2, timeout=60, what="`limited` to 2")
    yield c.log
    cluster.kubectl("delete", "namespace", NS, HOME, "--wait=false", check=False)


def why(cluster: Cluster, hpa: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """``kubectl promhpa why`` as a user runs it: the plugin on PATH, the cluster's kubeconfig."""
    plugin = Path(sys.executable).parent / "kubectl-promhpa"
    return subprocess.run(
        [str(plugin), "why", hpa, f"--kubeconfig={cluster.kubeconfig}",
         f"--leader-elect-resource-namespace={HOME}", "--insecure-skip-tls-verify", *flags],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip


def latest(cluster: Cluster, hpa: str, *flags: str) -> dict[str, Any]:
    out = why(cluster, hpa, "-o", "json", *flags)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout)["items"][-1])


def test_why_finds_the_leader_and_explains_a_scale_up(cluster: Cluster, leader: Path) -> None:
    out = why(cluster, f"{NS}/up")
    assert out.returncode == 0, out.stderr
    assert f"of leader {HOME}/{POD}" in out.stdout
    assert "External why_queue_depth" in out.stdout
    assert "Result: rescale 1 -> 3" in out.stdout or "desired 3 (current 3)" in out.stdout
    entry = latest(cluster, f"{NS}/up")
    assert entry["proposals"] == [{"metric": "External why_queue_depth", "replicas": 3}]
    assert entry["mode"] == "active"


def test_why_names_stabilization_when_the_window_holds_a_scale_down(cluster: Cluster, leader: Path) -> None:
    entry = latest(cluster, f"{NS}/held")
    assert (entry["desiredReplicas"], entry["limitingStep"]) == (4, "stabilization")
    assert entry["proposals"][0]["replicas"] == 1
    assert entry["conditions"]["AbleToScale"]["reason"] == "ScaleDownStabilized"


def test_why_names_the_policy_that_limits_a_scale_up(cluster: Cluster, leader: Path) -> None:
    wait_until(
        lambda: latest(cluster, f"{NS}/limited")["currentReplicas"] == 2, timeout=30, what="a decision at 2"
    )
    entry = latest(cluster, f"{NS}/limited")
    assert (entry["desiredReplicas"], entry["limitingStep"]) == (2, "policy")
    assert entry["proposals"][0]["replicas"] == 5
    assert entry["conditions"]["ScalingLimited"]["reason"] == "ScaleUpLimit"


def test_why_says_what_changed_between_decisions(cluster: Cluster, leader: Path) -> None:
    items = json.loads(why(cluster, f"{NS}/up", "-o", "json", "--last=10").stdout)["items"]
    assert len(items) >= 2
    assert any(
        "desired replicas" in c or "current replicas 1 -> 3" in c for e in items[1:] for c in e["changes"]
    )


def test_proposals_and_limiting_steps_are_on_metrics(cluster: Cluster, leader: Path) -> None:
    text = controller_get(cluster.kubeconfig, cluster.ports["forwarded"], "/metrics").decode()
    assert ('promhpa_controller_metric_proposed_replicas{metric="External why_queue_depth",metric_index="0",'
            f'name="limited",namespace="{NS}"}} 5.0') in text  # fmt: skip
    assert (
        f'promhpa_controller_limiting_step{{name="held",namespace="{NS}",step="stabilization"}} 1.0' in text
    )
    assert f'promhpa_controller_limiting_step{{name="limited",namespace="{NS}",step="policy"}} 1.0' in text
    assert f'promhpa_controller_recommended_replicas{{name="up",namespace="{NS}"}} 3.0' in text


def test_in_shadow_mode_why_explains_what_the_owner_did_and_whether_promhpa_agrees(
    cluster: Cluster, leader: Path, tmp_path: Path
) -> None:
    port = free_port()
    url = f"--controller-url=https://127.0.0.1:{port}"
    with running_controller(
        cluster.kubeconfig, tmp_path / "shadow.log", *WHY, "--dry-run", f"--secure-port={port}"
    ):
        wait_until(
            lambda: why(cluster, f"{NS}/up", url).returncode == 0, timeout=60, what="a shadow decision"
        )
        wait_until(lambda: latest(cluster, f"{NS}/up", url).get("owner", {}).get("agrees") is not None,
                   timeout=30, what="a comparison with the owner")  # fmt: skip
        entry = latest(cluster, f"{NS}/up", url)
        assert entry["mode"] == "shadow"
        assert entry["owner"]["desiredReplicas"] == 3
        assert entry["owner"]["agrees"] is True, entry["owner"]
        assert "owner: desired 3" in why(cluster, f"{NS}/up", url).stdout


def test_why_for_an_hpa_the_leader_has_not_reconciled_says_so(cluster: Cluster, leader: Path) -> None:
    out = why(cluster, f"{NS}/absent")
    assert out.returncode == 1
    assert "has not been reconciled by the leader" in out.stderr


def test_a_snapshot_from_the_leader_carries_its_memory_and_decides_as_it_did(
    cluster: Cluster, leader: Path, tmp_path: Path
) -> None:
    out = python_m(
        "controller", "snapshot", f"{NS}/held", "--from-leader", f"--kubeconfig={cluster.kubeconfig}",
        f"--leader-elect-resource-namespace={HOME}", "--insecure-skip-tls-verify",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    snap = tmp_path / "held.yaml"
    snap.write_text(out.stdout)
    # the leader's recommendations, which hold `held` at 4 inside its 600 s window, came with it
    recommendations = yaml.safe_load(out.stdout)["history"]["recommendations"]
    assert {r["replicas"] for r in recommendations} >= {4, 1}
    decided = python_m("controller", "decide", "-o", "text", str(snap))  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    assert "ScaleDownStabilized" in decided.stdout
