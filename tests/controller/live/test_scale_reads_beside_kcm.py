"""Reading scales from watches keeps upstream's answer on every path a scale read can fail.

kube-controller-manager's HPA controller and promhpa (``--dry-run``, ``--scale-reads=watch``)
run side by side as the same ServiceAccount, whose ClusterRole grants what both need --
except ``get`` on one custom resource's ``scale``, which it may still list and watch (the
case where a watch would answer although the GET is refused). Each HPA takes one path:

* ``missing``: its Deployment does not exist;
* ``unknownkind``: no API serves its kind;
* ``noscale``: a custom resource whose CRD has no scale subresource;
* ``forbidden``: a custom resource whose ``scale`` the identity may not get;
* ``badselector``: a custom resource whose scale selector does not parse;
* ``watched`` and ``deployment``: scales read from the watch.

promhpa's conditions (type, status, reason, message) and events (reason, message; ours say
``DryRun``) must be kube-controller-manager's, and the last two must come from the watch.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.manifests import custom_resource_definition
from localcluster.manifests import hpa_manifest
from localcluster.manifests import pods_metric
from localcluster.manifests import service_account_kubeconfig
from tests.live import running_controller
from tests.support import controller_get
from tests.support import controller_get_json
from tests.support import cpu_deployment
from tests.support import free_port
from tests.support import insecure_tls
from tests.support import start_hpa_only_kcm
from tests.support import stop_process
from tests.support import wait_http
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "scalereads"
GROUP = "scalereads.example.com"
SA = "hpa-identity"
SYNC = "2s"
# HPA name -> its scaleTargetRef
TARGETS: dict[str, dict[str, str]] = {
    "missing": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "absent"},
    "unknownkind": {"apiVersion": "apps/v1", "kind": "Nonesuch", "name": "x"},
    "noscale": {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "name": "g1"},
    "forbidden": {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": "w1"},
    "badselector": {"apiVersion": f"{GROUP}/v1", "kind": "Sprocket", "name": "bad"},
    "watched": {"apiVersion": f"{GROUP}/v1", "kind": "Sprocket", "name": "good"},
    "deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
}
# each failing HPA's path, as the message names it (the comparison is not between two blanks)
FAILING = {
    "missing": 'deployments.apps "absent" not found',
    "unknownkind": 'no matches for kind "Nonesuch" in group "apps"',
    "noscale": f'gadgets.{GROUP} "g1" not found',  # though g1 exists: its CRD has no scale
    "forbidden": f'cannot get resource "widgets/scale" in API group "{GROUP}"',
    "badselector": "failed to parse target selector",
}


def identity_rbac() -> list[dict[str, Any]]:
    """What both controllers need, minus ``get`` on widgets/scale (list and watch stay)."""
    rules = [
        ([["autoscaling"], ["horizontalpodautoscalers"], ["get", "list", "watch"]]),
        ([["autoscaling"], ["horizontalpodautoscalers/status"], ["update"]]),
        ([["apps"], ["deployments/scale"], ["get", "update"]]),
        ([[GROUP], ["sprockets/scale", "gadgets/scale"], ["get", "update"]]),
        ([["apps"], ["deployments"], ["list", "watch"]]),
        ([[GROUP], ["widgets", "sprockets", "gadgets"], ["list", "watch"]]),
        ([["apiextensions.k8s.io"], ["customresourcedefinitions"], ["get"]]),
        ([[""], ["pods"], ["list", "watch"]]),
        ([[""], ["events"], ["create", "update", "patch", "get"]]),
        ([["custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io"], ["*"], ["get", "list"]]),
    ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA, "namespace": NS}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "scalereads-identity"},
            "rules": [{"apiGroups": g, "resources": r, "verbs": v} for g, r, v in rules],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "scalereads-identity"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "scalereads-identity",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
        },
    ]


def custom(kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 1},
    }


@pytest.fixture
def objects(cluster: Cluster) -> Iterator[None]:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.apply(
        [
            custom_resource_definition(GROUP, "Gadget", "gadgets", scale=False),
            custom_resource_definition(GROUP, "Widget", "widgets"),
            custom_resource_definition(GROUP, "Sprocket", "sprockets"),
        ]
    )
    for plural in ("gadgets", "widgets", "sprockets"):
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{plural}.{GROUP}", "--timeout=60s")
    cluster.apply(identity_rbac())
    cluster.apply(
        [
            custom("Gadget", "g1"),
            custom("Widget", "w1"),
            custom("Sprocket", "bad"),
            custom("Sprocket", "good"),
            cpu_deployment(NS, "web"),
        ]
    )
    for name, selector in (("bad", "app in ("), ("good", "app=good")):
        status = json.dumps({"status": {"replicas": 1, "selector": selector}})
        cluster.kubectl(
            "-n", NS, "patch", "sprocket", name, "--subresource=status", "--type=merge", "-p", status
        )
    try:
        yield
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        cluster.kubectl("delete", "clusterrole,clusterrolebinding", "scalereads-identity", check=False)
        for plural in ("gadgets", "widgets", "sprockets"):
            cluster.kubectl("delete", "crd", f"{plural}.{GROUP}", "--wait=false", check=False)


def hpas() -> list[dict[str, Any]]:
    items = []
    for name, ref in TARGETS.items():
        item = hpa_manifest(
            NS, name, pods_metric("scalereads_absent", "1"), labels={"scalereads-test": "true"}
        )
        item["spec"]["scaleTargetRef"] = ref
        items.append(item)
    return items


def conditions(status: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return sorted(
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions") or []
    )


def events(cluster: Cluster, component: str) -> dict[str, set[tuple[str, str]]]:
    """HPA name -> the (reason, message) of its events from ``component`` (DryRun cut off)."""
    out = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json").stdout)["items"]
    found: dict[str, set[tuple[str, str]]] = {}
    for e in out:
        if e.get("source", {}).get("component") == component:
            reason = e["reason"].removeprefix("DryRun")
            found.setdefault(e["involvedObject"]["name"], set()).add((reason, e["message"]))
    return found


@pytest.mark.timeout(240)
def test_scale_read_failures_match_kube_controller_manager_with_watched_scales(
    cluster: Cluster, objects: None, tmp_path: Path
) -> None:
    kubeconfig = service_account_kubeconfig(cluster, NS, SA, tmp_path / "identity.kubeconfig")
    port = free_port()
    flags = ("--dry-run", "--hpa-selector=scalereads-test", "--scale-reads=watch", "--insecure-skip-auth",
             f"--secure-port={port}", f"--horizontal-pod-autoscaler-sync-period={SYNC}")  # fmt: skip
    kcm: subprocess.Popen[bytes] | None = None
    try:
        with running_controller(kubeconfig, tmp_path / "promhpa.log", *flags):
            kcm = start_hpa_only_kcm(
                cluster, tmp_path / "kcm.log", free_port(), f"--kubeconfig={kubeconfig}",
                f"--horizontal-pod-autoscaler-sync-period={SYNC}",
            )  # fmt: skip
            wait_http(f"https://127.0.0.1:{port}/healthz", "the dry-run controller", context=insecure_tls())
            cluster.apply(hpas())

            def compared() -> dict[str, dict[str, Any]]:
                items = controller_get_json(cluster.kubeconfig, port, "/debug/shadow").get("items", [])
                return {i["name"]: i for i in items if i.get("ownerStatus", {}).get("conditions")}

            wait_until(
                lambda: set(compared()) == set(TARGETS), timeout=90, what="kcm's conditions on every HPA"
            )
            time.sleep(5)  # a few more syncs of both
            items = compared()
            for name in FAILING:
                ours, theirs = conditions(items[name]["status"]), conditions(items[name]["ownerStatus"])
                assert ours == theirs, name
                assert FAILING[name] in next(c[3] for c in ours if c[0] == "AbleToScale")
            for name in TARGETS:
                able = [c for c in conditions(items[name]["ownerStatus"]) if c[0] == "AbleToScale"]
                assert able
                assert able == [c for c in conditions(items[name]["status"]) if c[0] == "AbleToScale"]
            kcm_events, our_events = events(cluster, "horizontal-pod-autoscaler"), events(cluster, "promhpa")
            for name in FAILING:
                assert kcm_events.get(name), name
                assert our_events.get(name) == kcm_events[name], name
            # the scales that could come from the watch did
            metrics = controller_get(cluster.kubeconfig, port, "/metrics").decode()
            watched = [
                ln
                for ln in metrics.splitlines()
                if ln.startswith('promhpa_controller_scale_reads_total{source="watch"}')
            ]
            assert watched, metrics
            assert float(watched[0].split()[-1]) > 0, metrics
    finally:
        if kcm is not None:
            stop_process(kcm, timeout=10)
