"""The release as users install it, on the real node: docs/install.md's commands run as they
stand (``make release``, ``load-image``, the README's ``helm install``), then what a user
relies on, each a test: the Deployments run, the APIServices answer through their Service,
the HPAs scale real containers, the kubelet enforces the chart's security context, the
adapter stays available through an upgrade and evictions, the controller's leader hands over,
and ``helm uninstall`` leaves nothing.

``E2E_KEEP=DIR make e2e`` runs the same in DIR and leaves the cluster running, the release
installed and the demo scaled, until ``python -m localcluster down --dir DIR``.
"""

from __future__ import annotations

import json
import os
import re
import ssl
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

import localcluster
from localcluster import incluster
from localcluster import node_runtime
from localcluster.node_host import NODE_NAME
from localcluster.tools import ROOT
from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from localcluster.tools import condition_true
from localcluster.tools import wait_until
from tests.live import scale_replicas
from tests.support import missing

RELEASE = "promhpa"  # the helm release and its namespace, as the README names them
VERSION = "0.2.0"
pytestmark = pytest.mark.timeout(900)


def install_block() -> str:
    """docs/install.md's commands for the real node: the first ``sh`` block of its section."""
    text = (ROOT / "docs" / "install.md").read_text()
    section = text.split("## On the real node", 1)[1]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "docs/install.md has no sh block under 'On the real node'"
    return match.group(1)


def _path() -> str:
    b = Binaries(cache_bin())
    tools = [str(Path(sys.executable).parent), str(Path(b.helm).parent), str(Path(b.kubectl).parent)]
    return os.pathsep.join([*tools, os.environ.get("PATH", "")])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[localcluster.Cluster]:
    if os.geteuid() != 0:
        missing("the real node needs root (network namespaces, cgroups, mounts, iptables)")
    keep = os.environ.get("E2E_KEEP")
    directory = Path(keep).resolve() if keep else tmp_path_factory.mktemp("e2e")
    env = {**os.environ, "D": str(directory), "PATH": _path()}
    env.pop("KUBECONFIG", None)
    try:
        c = localcluster.Cluster.load(directory)
        if not (keep and c is not None and c.running() and _installed(c)):  # E2E_KEEP again: reuse
            argv = ["bash", "-euo", "pipefail", "-c", install_block()]
            run = subprocess.run(
                argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
            )
            assert run.returncode == 0, f"docs/install.md's commands failed:\n{run.stderr[-5000:]}"
            c = localcluster.Cluster.load(directory)
        assert c is not None
        c.apply(incluster.demo_app())
        for deployment in _deployments(c, RELEASE):
            c.kubectl(
                "-n", RELEASE, "rollout", "status", f"deployment/{deployment}", "--timeout=180s", timeout=190
            )
        yield c
    finally:
        c = localcluster.Cluster.load(directory)
        if c is not None and not keep:
            c.down()


def _installed(c: localcluster.Cluster) -> bool:
    helm = [Binaries(cache_bin()).helm, "status", RELEASE, "-n", RELEASE, f"--kubeconfig={c.kubeconfig}"]
    return subprocess.run(helm, capture_output=True, check=False).returncode == 0


def _deployments(c: localcluster.Cluster, namespace: str) -> list[str]:
    items = json.loads(c.kubectl("-n", namespace, "get", "deployments", "-o", "json").stdout)["items"]
    return sorted(d["metadata"]["name"] for d in items)


def _pods(c: localcluster.Cluster, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    args = ["-n", namespace, "get", "pods", "-o", "json", *(["-l", selector] if selector else [])]
    return list(json.loads(c.kubectl(*args).stdout)["items"])


def _ready(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and condition_true(pod, "Ready")


def _context(c: localcluster.Cluster) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(c.pki / "ca.crt"))
    ctx.load_cert_chain(str(c.pki / "admin.crt"), str(c.pki / "admin.key"))
    return ctx


def _api(
    c: localcluster.Cluster, path: str, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, Any]]:
    """One API request as the admin: (status code, JSON body)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{c.server}{path}",
        data=data,
        method="POST" if body else "GET",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, context=_context(c), timeout=10) as r:
            return r.status, _json(r.read())
    except urllib.error.HTTPError as e:
        return e.code, _json(e.read())
    except OSError as e:  # no answer at all
        return 0, {"message": str(e)}


def _json(body: bytes) -> dict[str, Any]:
    try:
        return dict(json.loads(body or b"{}"))
    except ValueError:
        return {"message": body.decode(errors="replace")}


# --- what the install gives -----------------------------------------------------------------


def test_both_deployments_run_ready_on_the_real_node(installed: localcluster.Cluster) -> None:
    assert _deployments(installed, RELEASE) == ["promhpa-adapter", "promhpa-controller"]
    pods = _pods(installed, RELEASE)
    assert len(pods) == 4  # two replicas each
    assert all(p["spec"]["nodeName"] == NODE_NAME and _ready(p) for p in pods), [
        (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase")) for p in pods
    ]


def test_every_apiservice_is_available_through_its_service(installed: localcluster.Cluster) -> None:
    def ours() -> list[dict[str, Any]]:
        items = json.loads(installed.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
        return [a for a in items if (a["spec"].get("service") or {}).get("namespace") == RELEASE]

    def available() -> bool:
        return all(condition_true(a, "Available") for a in ours())

    wait_until(available, timeout=60, what="promhpa's APIServices Available")
    names = sorted(a["metadata"]["name"] for a in ours())
    expected = ["v1.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"]
    assert names == [*expected, "v1beta1.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"]


def test_kubectl_top_pods_answers_from_cadvisor(installed: localcluster.Cluster) -> None:
    def top() -> str:
        out = installed.kubectl("top", "pods", "-n", incluster.DEMO, "--no-headers", check=False)
        return out.stdout if out.returncode == 0 else ""

    wait_until(lambda: "shop-" in top(), timeout=120, what="kubectl top pods to list shop's pod")
    row = next(line.split() for line in top().splitlines() if line.startswith("shop-"))
    assert row[1].endswith("m"), row  # CPU in millicores
    assert row[2].endswith("Mi"), row  # memory


def test_each_metrics_api_answers_get_raw(installed: localcluster.Cluster) -> None:
    installed.apply(incluster.demo_autoscaling()[:2])  # the MetricRules
    demo = incluster.DEMO
    paths = [
        f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{demo}/pods/*/requests_per_second",
        f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/{demo}/pods/*/requests_per_second",
        f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{demo}/shop_requests_per_second",
        f"/apis/metrics.k8s.io/v1beta1/namespaces/{demo}/pods",
    ]
    for path in paths:
        wait_until(lambda p=path: _items(installed, p), timeout=120, what=f"items from {path}")


def _items(c: localcluster.Cluster, path: str) -> bool:
    out = c.kubectl("get", "--raw", path, check=False)
    return out.returncode == 0 and bool(json.loads(out.stdout).get("items"))


# --- what it does ---------------------------------------------------------------------------


def test_hpas_scale_the_demo_up_under_load_and_down_after(installed: localcluster.Cluster) -> None:
    """``shop`` stays a built-in HPA; ``worker`` is adopted into promhpa's own kind first, as a
    user on a managed cluster would, and both scale the real containers up and back down."""
    installed.apply(incluster.demo_autoscaling())
    adopt = _plugin(installed, "adopt", f"{incluster.DEMO}/worker")
    assert adopt.returncode == 0, adopt.stderr
    assert (
        installed.kubectl("-n", incluster.DEMO, "get", "hpa.autoscaling/worker", check=False).returncode != 0
    )
    assert _adopted_worker(installed)["spec"]["maxReplicas"] == 6
    installed.kubectl("-n", incluster.DEMO, "scale", "deployment/load", "--replicas=3")  # 30 requests/s

    def replicas(name: str) -> int:
        return scale_replicas(installed, incluster.DEMO, name)

    for name in ("shop", "worker"):  # 10 requests/s a pod: 3 pods each
        wait_until(lambda n=name: replicas(n) >= 3, timeout=240, what=f"{name} scaled up to 3")
    installed.kubectl("-n", incluster.DEMO, "scale", "deployment/load", "--replicas=0")
    for name in ("shop", "worker"):
        wait_until(lambda n=name: replicas(n) == 1, timeout=240, what=f"{name} back to 1")
    status = _adopted_worker(installed)["status"]
    assert status["desiredReplicas"] == 1, status
    assert status.get("lastScaleTime"), status
    reasons = {e["reason"] for e in _events(installed, "worker")}
    assert {"Adopted", "SuccessfulRescale"} <= reasons, reasons


def _adopted_worker(c: localcluster.Cluster) -> dict[str, Any]:
    out = c.kubectl(
        "-n", incluster.DEMO, "get", "horizontalpodautoscalers.autoscaling.promhpa.io/worker", "-o", "json"
    )
    return dict(json.loads(out.stdout))


def _events(c: localcluster.Cluster, name: str) -> list[dict[str, Any]]:
    out = c.kubectl(
        "-n", incluster.DEMO, "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
    )
    return [
        e
        for e in json.loads(out.stdout)["items"]
        if e["involvedObject"].get("apiVersion", "").startswith("autoscaling.promhpa.io")
    ]


def test_the_charts_webhook_refuses_an_invalid_object_of_the_own_kind(
    installed: localcluster.Cluster,
) -> None:
    """The chart registers the controller's admission webhook behind its Service with its CA:
    the API server's own cross-field refusal, reached through the Service (failurePolicy
    Ignore would store the object if the webhook were not reached)."""
    bad = {
        "apiVersion": "autoscaling.promhpa.io/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "inverted", "namespace": incluster.DEMO},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
            "minReplicas": 5, "maxReplicas": 2,
        },
    }  # fmt: skip
    code, body = _api(
        installed,
        f"/apis/autoscaling.promhpa.io/v2/namespaces/{incluster.DEMO}/horizontalpodautoscalers",
        bad,
    )
    assert code == 422, body
    assert (
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
        in body["message"]
    )


def test_why_explains_each_hpa(installed: localcluster.Cluster) -> None:
    for name, kind in (("shop", "hpa"), ("worker", "phpa")):  # worker was adopted
        out = _plugin_why(installed, name, "--last=5", f"--kind={kind}")
        assert out.returncode == 0, out.stderr
        assert f"HPA {incluster.DEMO}/{name}" in out.stdout
        assert "limiting step" in out.stdout
        assert re.search(r"desired [3-6] \(current", out.stdout), out.stdout  # the scale-up is remembered


def test_kubelet_enforces_the_charts_security_context(installed: localcluster.Cluster) -> None:
    for pod in _pods(installed, RELEASE):
        for status in pod["status"]["containerStatuses"]:
            container = status["containerID"].split("://", 1)[1]
            info = json.loads(node_runtime.crictl(installed, "inspect", container).stdout)["info"]
            pid = info["pid"]
            fields = dict(
                line.split(":\t", 1)
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ":\t" in line
            )
            where = f"{pod['metadata']['name']}/{status['name']} (pid {pid})"
            assert fields["Uid"].split()[0] != "0", where
            assert fields["NoNewPrivs"].strip() == "1", where
            assert fields["CapEff"].strip() == "0000000000000000", where
            assert fields["Seccomp"].strip() == "2", where
            root = next(
                line
                for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
                if line.split()[4] == "/"
            )
            assert "ro" in root.split()[5].split(","), f"{where}: root mounted {root.split()[5]}"


def test_upgrade_and_evictions_lose_no_read(installed: localcluster.Cluster) -> None:
    """A reader asks for an external metric every 250 ms through a ``helm upgrade`` to a new
    tag and the eviction of each adapter pod in turn: no read fails, and the PDB refuses the
    eviction that would leave no ready adapter."""
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{incluster.DEMO}/shop_requests_per_second"
    failures: list[str] = []
    reads = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not stop.wait(0.25):
            code, body = _api(installed, path)
            reads += 1
            if code != 200:
                failures.append(f"{time.monotonic() - t0:.1f}s {code}: {body.get('message', body)}")

    steps: list[str] = []

    def step(what: str) -> None:
        steps.append(f"{time.monotonic() - t0:.1f}s {what}")

    t0 = time.monotonic()
    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        _upgrade_to_new_tag(installed)
        step("upgraded")
        _wait_adapters_ready(installed, 2)  # the old ReplicaSet's pods gone (their shutdown delay)
        adapters = [
            p["metadata"]["name"] for p in _pods(installed, RELEASE, "app.kubernetes.io/component=adapter")
        ]
        assert len(adapters) == 2
        code, _ = _evict(installed, adapters[0])
        step(f"evicted {adapters[0]}")
        assert code == 201
        code, body = _evict(installed, adapters[1])  # the first one's replacement is not ready yet
        assert code == 429, (code, body)
        assert "disruption budget" in body.get("message", ""), body
        _wait_adapters_ready(installed, 2)
        step("both ready")
        code, _ = _evict(installed, adapters[1])
        step(f"evicted {adapters[1]}")
        assert code == 201
        _wait_adapters_ready(installed, 2)
        time.sleep(2)  # reads across the last replacement's first seconds
    finally:
        stop.set()
        thread.join()
    assert reads >= 20  # the reader ran throughout (4 a second)
    assert failures == [], f"{len(failures)} of {reads} reads failed: {failures[:5]}; steps: {steps}"


def _upgrade_to_new_tag(c: localcluster.Cluster) -> None:
    archive = ROOT / "dist" / f"promhpa-{VERSION}-amd64.oci.tar"
    tag = f"0.2.1-{int(time.time())}"  # new each run: a kept cluster (E2E_KEEP) rolls again
    node_runtime.load_image(c, archive, f"registry.example.com/promhpa:{tag}")
    helm = Binaries(cache_bin()).helm
    subprocess.run(
        [
            helm,
            "upgrade",
            RELEASE,
            str(ROOT / "dist" / f"promhpa-{VERSION}.tgz"),
            "-n",
            RELEASE,
            "--reuse-values",
            "--set",
            f"image.tag={tag}",
            "--set",
            "adapter.replicas=2",
            "--wait",
            "--timeout=5m",
            f"--kubeconfig={c.kubeconfig}",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=330,
    )
    # the spec's image (the runtime reports one name of the two the image has)
    images = {x["image"] for p in _pods(c, RELEASE) if _ready(p) for x in p["spec"]["containers"]}
    assert images == {f"registry.example.com/promhpa:{tag}"}, images


def _evict(c: localcluster.Cluster, pod: str) -> tuple[int, dict[str, Any]]:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": RELEASE}}
    return _api(c, f"/api/v1/namespaces/{RELEASE}/pods/{pod}/eviction", body)


def _wait_adapters_ready(c: localcluster.Cluster, n: int) -> None:
    def ready() -> bool:
        pods = _pods(c, RELEASE, "app.kubernetes.io/component=adapter")
        return len(pods) == n and all(_ready(p) for p in pods)

    wait_until(ready, timeout=120, what=f"{n} adapter pods Ready")


def test_leader_pod_deleted_hands_over_within_a_retry_period(installed: localcluster.Cluster) -> None:
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{RELEASE}/leases/promhpa-controller"
    _, lease = _api(installed, lease_path)
    leader = lease["spec"]["holderIdentity"].split("_")[0]
    before = _why(installed, "shop")
    last_reconcile = max(_stamp(d["to"]) for d in before["items"])
    deleted_at = time.time()
    installed.kubectl("-n", RELEASE, "delete", "pod", leader, "--wait=true", timeout=60)
    gone_after = time.time() - deleted_at
    assert gone_after < 30, f"the leader took {gone_after:.0f}s to end (grace period 30s)"
    wait_until(lambda: _holder(installed, lease_path) not in ("", leader), timeout=10, what="a new leader")
    _, lease = _api(installed, lease_path)
    acquired = _stamp(lease["spec"]["acquireTime"])
    assert acquired - deleted_at < gone_after + 2 + 1, (acquired - deleted_at, gone_after)
    wait_until(lambda: bool(_why(installed, "shop", check=False).get("items")), timeout=40, what="a decision")
    first = min(_stamp(d["from"]) for d in _why(installed, "shop")["items"])
    assert first - last_reconcile <= 30, f"shop went {first - last_reconcile:.0f}s without a reconcile"


def _holder(c: localcluster.Cluster, path: str) -> str:
    _, lease = _api(c, path)
    return str(lease.get("spec", {}).get("holderIdentity") or "").split("_")[0]


def _plugin_why(c: localcluster.Cluster, name: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """``kubectl promhpa why demo/NAME`` as a user runs it: the plugin, the cluster's kubeconfig."""
    return _plugin(c, "why", f"{incluster.DEMO}/{name}", "--insecure-skip-tls-verify", *flags)


def _plugin(c: localcluster.Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``kubectl promhpa ARGS`` as a user runs it: the plugin, the cluster's kubeconfig."""
    plugin = Path(sys.executable).parent / "kubectl-promhpa"
    argv = [str(plugin), *args, f"--kubeconfig={c.kubeconfig}"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, check=False)


def _why(c: localcluster.Cluster, name: str, check: bool = True) -> dict[str, Any]:
    out = _plugin_why(c, name, "-o", "json")
    if out.returncode != 0:
        assert not check, out.stderr
        return {}
    return dict(json.loads(out.stdout))


def _stamp(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_helm_uninstall_leaves_nothing(installed: localcluster.Cluster) -> None:
    """After ``helm uninstall``: no object of the release anywhere, and in its namespace only
    what Kubernetes puts in every namespace (the CRDs stay, as Helm keeps ``crds/``)."""
    if os.environ.get("E2E_KEEP"):
        pytest.skip("E2E_KEEP: the release stays installed for inspection")
    assert any("/promhpa-adapter" in o for o in _cluster_objects(installed))
    helm = Binaries(cache_bin()).helm
    uninstall = [helm, "uninstall", RELEASE, "-n", RELEASE, "--wait", f"--kubeconfig={installed.kubeconfig}"]
    subprocess.run(uninstall, check=True, capture_output=True, text=True, timeout=300)
    every_namespace = {"ConfigMap/promhpa/kube-root-ca.crt", "ServiceAccount/promhpa/default"}
    deadline = time.monotonic() + 60
    while _left(installed, every_namespace) and time.monotonic() < deadline:
        time.sleep(1)
    assert _left(installed, every_namespace) == []


def _left(c: localcluster.Cluster, every_namespace: set[str]) -> list[str]:
    """What remains in the release's namespace, and cluster-wide objects named for it (not
    the APIService Kubernetes serves for the kept CRDs' group, promhpa.io)."""
    out = []
    for o in _cluster_objects(c):
        _, namespace, name = o.split("/", 2)
        if o in every_namespace or name.endswith(".promhpa.io"):
            continue
        if namespace == RELEASE or (not namespace and "promhpa" in name):
            out.append(o)
    return out


def _cluster_objects(c: localcluster.Cluster) -> list[str]:
    """Every object of the kinds a release makes, cluster-wide, as kind/namespace/name."""
    kinds = ",".join(
        [
            "all",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "roles",
            "rolebindings",
            "clusterroles",
            "clusterrolebindings",
            "apiservices",
            "poddisruptionbudgets",
            "validatingwebhookconfigurations",
            "leases",
            "networkpolicies",
        ]
    )
    out = c.kubectl("get", kinds, "-A", "-o", "json", timeout=120).stdout
    items = json.loads(out)["items"]
    return [f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in items]
