"""The local control plane is a real one: scheduling, kwok pods, scale subresources, RBAC."""

from __future__ import annotations

import itertools
import json
import socket
import time
from pathlib import Path

import pytest

from localcluster import Cluster
from localcluster import cluster as cluster_module
from localcluster.tools import FAKE_NODES
from localcluster.tools import free_port
from localcluster.tools import prometheus_major

pytestmark = pytest.mark.cluster


def wait_for(predicate: object, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_fake_nodes_are_ready(cluster: Cluster) -> None:
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert {n["metadata"]["name"] for n in nodes} >= {"kwok-node-0", "kwok-node-1", "kwok-node-2"}


def test_a_node_back_from_not_ready_keeps_its_address_for_the_api_servers_kubelet_calls(
    cluster: Cluster,
) -> None:
    """As after an API server restart: kwok makes it Ready again, still at 127.0.0.1 (the
    API server reaches kwok's kubelet server there: logs, port-forward)."""
    node = json.loads(cluster.kubectl("get", "node", "kwok-node-2", "-o", "json").stdout)
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"], c["reason"] = "Unknown", "NodeStatusUnknown"
    cluster.kubectl("replace", "--subresource=status", "-f", "-", input=json.dumps(node))

    def status() -> dict[str, object]:
        return dict(json.loads(cluster.kubectl("get", "node", "kwok-node-2", "-o", "json").stdout)["status"])

    def ready() -> bool:
        return any(c["type"] == "Ready" and c["status"] == "True" for c in status()["conditions"])  # type: ignore[attr-defined]

    wait_for(ready, timeout=30, what="kwok to make the node Ready again")
    after = status()
    assert after["addresses"] == [{"address": "127.0.0.1", "type": "InternalIP"}]
    assert after["daemonEndpoints"] == {"kubeletEndpoint": {"Port": cluster.ports["kwok"]}}


def test_deployment_pods_are_scheduled_and_become_running_and_ready(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "cp-test")
    cluster.kubectl(
        "-n", "cp-test", "create", "deployment", "web", "--image=example.invalid/web", "--replicas=3"
    )

    def ready() -> bool:
        pods = json.loads(cluster.kubectl("-n", "cp-test", "get", "pods", "-o", "json").stdout)["items"]
        return len(pods) == 3 and all(
            p["status"].get("phase") == "Running"
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
            for p in pods
        )

    wait_for(ready, what="3 Running and Ready pods")


def test_scale_subresource_reports_replicas_and_selector(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "scale-test")
    cluster.kubectl(
        "-n", "scale-test", "create", "deployment", "api", "--image=example.invalid/api", "--replicas=2"
    )
    scale = json.loads(
        cluster.kubectl("get", "--raw", "/apis/apps/v1/namespaces/scale-test/deployments/api/scale").stdout
    )
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == "app=api"


def test_builtin_hpa_controller_is_off(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "hpa-off")
    cluster.kubectl(
        "-n", "hpa-off", "create", "deployment", "web", "--image=example.invalid/web", "--replicas=1"
    )
    cluster.kubectl("-n", "hpa-off", "autoscale", "deployment", "web", "--min=3", "--max=5", "--cpu=50")
    time.sleep(3)  # the built-in controller would raise replicas to min at once
    hpa = json.loads(cluster.kubectl("-n", "hpa-off", "get", "hpa", "web", "-o", "json").stdout)
    scale = json.loads(
        cluster.kubectl("get", "--raw", "/apis/apps/v1/namespaces/hpa-off/deployments/web/scale").stdout
    )
    assert scale["spec"]["replicas"] == 1
    assert not hpa.get("status", {}).get("conditions")


def test_rbac_denies_a_service_account_without_grants(cluster: Cluster) -> None:
    out = cluster.kubectl(
        "auth", "can-i", "list", "pods", "--as=system:serviceaccount:default:default", check=False
    )
    assert out.stdout.strip() == "no"


def test_prometheus_is_up_on_loopback(cluster: Cluster) -> None:
    import urllib.request

    assert cluster.prometheus_url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(f"{cluster.prometheus_url}/api/v1/status/buildinfo", timeout=5) as r:
        version = json.loads(r.read())["data"]["version"]
    assert version.startswith(f"{prometheus_major()}."), version  # the one PROMETHEUS= selects


def test_a_port_taken_during_start_up_is_replaced_and_the_start_up_redone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kwok's port is picked before etcd starts; something else listening on it by the time
    kwok binds (here a real listener, in CI an outgoing connection's ephemeral port) must
    not fail the whole run. Only the choice of port is steered; the bind fails for real."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks = itertools.count()
    real = free_port

    def steered() -> int:  # the sixth pick of the first round is kwok's (cluster.PORTS)
        return int(taken.getsockname()[1]) if next(picks) == cluster_module.PORTS.index("kwok") else real()

    monkeypatch.setattr(cluster_module, "free_port", steered)
    c = Cluster(tmp_path / "cluster")
    try:
        c.up()
        assert c.ports["kwok"] != taken.getsockname()[1]
        assert c.kubectl("get", "nodes", "-o", "name").stdout.strip()
    finally:
        c.down(quiet=True)
        taken.close()


def test_without_a_scheduler_pods_bound_to_a_fake_node_still_run(tmp_path: Path) -> None:
    """bench-scale's control plane: no kube-scheduler, its pods created with their node."""
    c = Cluster(tmp_path / "cluster", scheduler=False)
    try:
        c.up()
        assert "scheduler" not in c.pids
        pod = {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "namespace": "default"},
            "spec": {"nodeName": FAKE_NODES[0], "containers": [{"name": "c", "image": "example.invalid/x"}]},
        }  # fmt: skip
        c.kubectl("apply", "-f", "-", input=json.dumps(pod))
        wait_for(
            lambda: c.kubectl("get", "pod", "bound", "-o", "jsonpath={.status.phase}").stdout == "Running",
            what="the bound pod Running",
        )
    finally:
        c.down(quiet=True)
