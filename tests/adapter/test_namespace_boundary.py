"""The namespace boundary, through the real aggregator with RBAC and straight to the adapter.

Every route of the three APIs, asked for the caller's own namespace, another namespace, an
empty one and at cluster scope, plus the shapes that used to cross the boundary, by three
ServiceAccounts: one allowed in its own namespace only, one allowed cluster-wide, one
allowed nothing. Each namespace's series carry values of their own (11 in bnd-a, 22 in
bnd-b), so any answer is traced back to the namespace it was read from. The expected code
of every request is in the table below; on top of it, no 200 may carry a value from
outside the namespace the kube-apiserver authorized.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.support import AdapterProcess
from tests.support import every_kind_rules
from tests.support import wait_until

pytestmark = pytest.mark.cluster

OWN, OTHER = "bnd-a", "bnd-b"
VALUES = {OWN: "11", OTHER: "22"}
CONFIG = every_kind_rules("bnd")
C2, C1 = "/apis/custom.metrics.k8s.io/v1beta2", "/apis/custom.metrics.k8s.io/v1beta1"
EXT, RES = "/apis/external.metrics.k8s.io/v1beta1", "/apis/metrics.k8s.io/v1beta1"
ROUTES = {  # name -> path template; {ns} the namespace asked for, {pod} a pod of it
    "custom pods/*": C2 + "/namespaces/{ns}/pods/*/bnd_requests?labelSelector=app%3Dweb",
    "custom pods/name v1beta1": C1 + "/namespaces/{ns}/pods/{pod}/bnd_requests",
    "custom namespace object": C2 + "/namespaces/{ns}/metrics/bnd_ns_load",
    "external": EXT + "/namespaces/{ns}/bnd_queue",
    "resource pods": RES + "/namespaces/{ns}/pods",
    "resource pod": RES + "/namespaces/{ns}/pods/{pod}",
}
SHAPES = {  # the shapes that crossed (or could cross) the boundary before
    "namespace inside a namespace": C2 + f"/namespaces/{OWN}/namespaces/{OTHER}/bnd_ns_load",
    "root namespace shape": C2 + f"/namespaces/{OTHER}/bnd_ns_load",
    "all namespaces' pods": RES + "/pods",
    "metricLabelSelector names another namespace": C2
    + f"/namespaces/{OWN}/pods/*/bnd_requests?labelSelector=app%3Dweb"
    + f"&metricLabelSelector=namespace%3D{OTHER}",
    "labelSelector names another namespace": EXT
    + f"/namespaces/{OWN}/bnd_queue?labelSelector=namespace%3D{OTHER}",
    "doubly encoded namespace": EXT + "/namespaces/bnd%252Da/bnd_queue",
    "encoded dot segments": EXT + f"/namespaces/{OWN}%2F..%2F{OTHER}/bnd_queue",
}
# expected code per (user, variant); variants: own / other / empty, and each SHAPES name
EXPECTED: dict[str, dict[str, int]] = {
    "ns-reader": {
        "own": 200,
        "other": 403,
        "empty": 403,  # the apiserver authorizes namespace "" cluster-wide: no grant
        "namespace inside a namespace": 404,  # allowed by the Role in bnd-a; refused by the adapter
        "root namespace shape": 403,
        "all namespaces' pods": 403,
        "metricLabelSelector names another namespace": 200,  # matchers AND: nothing of bnd-b
        "labelSelector names another namespace": 200,
        "doubly encoded namespace": 403,  # namespace "bnd%2Da", never "bnd-a"
        "encoded dot segments": 404,
    },
    "cluster-reader": {
        "own": 200,
        "other": 200,
        "empty": 400,
        "namespace inside a namespace": 404,
        "root namespace shape": 404,
        "all namespaces' pods": 200,
        "metricLabelSelector names another namespace": 200,
        "labelSelector names another namespace": 200,
        "doubly encoded namespace": 400,
        "encoded dot segments": 404,
    },
    "nobody": {},  # 403 everywhere
}


def running_pod(cluster: Cluster, ns: str) -> str:
    items = json.loads(cluster.kubectl("-n", ns, "get", "pods", "-l", "app=web", "-o", "json").stdout)[
        "items"
    ]
    running = [p["metadata"]["name"] for p in items if p["status"].get("phase") == "Running"]
    return running[0] if running else ""


def grants(name: str, ns: str | None) -> list[dict[str, Any]]:
    rule = {
        "apiGroups": ["custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io"],
        "resources": ["*"],
        "verbs": ["get", "list"],
    }
    kind, binding = ("Role", "RoleBinding") if ns else ("ClusterRole", "ClusterRoleBinding")
    meta = {"name": f"bnd-{name}", **({"namespace": ns} if ns else {})}
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": [rule]},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": binding,
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": f"bnd-{name}"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": OWN}],
        },
    ]


@pytest.fixture(scope="module")
def world(live: Live) -> tuple[AdapterProcess, dict[str, str], dict[str, str]]:
    cluster = live.cluster
    pods: dict[str, str] = {}
    for ns in (OWN, OTHER):
        cluster.kubectl("create", "namespace", ns)
        cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=example.invalid/web")
    for ns in (OWN, OTHER):
        wait_until(lambda ns=ns: running_pod(cluster, ns) != "", timeout=60, what=f"a web pod in {ns}")  # type: ignore[misc]
        pods[ns] = running_pod(cluster, ns)
        v = float(VALUES[ns])
        live.exporter.set(f'bnd_requests{{namespace="{ns}",pod="{pods[ns]}"}}', v)
        live.exporter.set(f'bnd_ns_load{{namespace="{ns}"}}', v)
        live.exporter.set(f'bnd_queue{{namespace="{ns}",queue="q"}}', v)
        live.exporter.set(f'bnd_cpu{{namespace="{ns}",pod="{pods[ns]}",container="web"}}', v / 1000)
    live.publish({}, "bnd_cpu", count=2)
    for name in ("ns-reader", "cluster-reader", "nobody"):
        cluster.kubectl("-n", OWN, "create", "serviceaccount", name)
    cluster.apply(grants("ns-reader", OWN) + grants("cluster-reader", None))
    tokens = {
        name: cluster.kubectl("-n", OWN, "create", "token", name).stdout.strip()
        for name in ("ns-reader", "cluster-reader", "nobody")
    }
    a = live.adapter(CONFIG)

    def routed() -> bool:  # the aggregator may still be switching from an earlier adapter
        out = cluster.kubectl("get", "--raw", EXT + f"/namespaces/{OWN}/bnd_queue", check=False)
        return out.returncode == 0 and '"22"' not in out.stdout and '"11"' in out.stdout

    ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))

    def granted() -> bool:  # the apiserver's RBAC cache learns new bindings a moment later
        path = EXT + f"/namespaces/{OWN}/bnd_queue"
        return all(
            get(cluster.server, path, tokens[u], ctx)[0] == 200 for u in ("ns-reader", "cluster-reader")
        )

    wait_until(routed, timeout=30, what="the aggregator routing to this adapter")
    wait_until(granted, timeout=30, what="the new RoleBindings in effect")
    return a, pods, tokens


def get(base: str, path: str, token: str, ctx: ssl.SSLContext) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        with e:
            text = e.read()
            return e.code, json.loads(text) if text.startswith(b"{") else {"raw": text.decode()}


def values_of(body: dict[str, Any]) -> list[str]:
    out = []
    for item in body.get("items", [body] if body.get("kind") == "PodMetrics" else []):
        if "value" in item:
            out.append(str(item["value"]))
        for c in item.get("containers", []):
            out.append(str(c["usage"]["cpu"]).removesuffix("m"))
    return out


def authorized_namespace(path: str) -> str:
    """The kube-apiserver's reading: decode once, split, namespaces/{ns} ("" = cluster)."""
    parts = urllib.parse.unquote(path.split("?", 1)[0]).strip("/").split("/")
    return parts[4] if len(parts) > 5 and parts[3] == "namespaces" else ""


def requests_for(pods: dict[str, str]) -> list[tuple[str, str, str]]:
    """(variant, route, path) for every route and namespace variant, then every shape."""
    out = []
    for route, template in ROUTES.items():
        for variant, ns in (("own", OWN), ("other", OTHER), ("empty", "")):
            out.append((variant, route, template.format(ns=ns, pod=pods.get(ns) or pods[OWN])))
    out += [(shape, shape, path) for shape, path in SHAPES.items()]
    return out


@pytest.mark.parametrize("channel", ["aggregator", "direct"])
@pytest.mark.parametrize("user", ["ns-reader", "cluster-reader", "nobody"])
def test_every_route_answers_within_the_authorized_namespace(
    cluster: Cluster,
    world: tuple[AdapterProcess, dict[str, str], dict[str, str]],
    user: str,
    channel: str,
    tmp_path: Path,
) -> None:
    adapter, pods, tokens = world
    if channel == "aggregator":
        base, ctx = cluster.server, ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
    else:
        base, ctx = adapter.url, adapter.ctx
    got: dict[tuple[str, str], int] = {}
    want: dict[tuple[str, str], int] = {}
    leaks: list[str] = []
    for variant, route, path in requests_for(pods):
        code, body = get(base, path, tokens[user], ctx)
        got[(variant, route)] = code
        want[(variant, route)] = EXPECTED[user].get(variant, 403)
        if code == 200:
            ns = authorized_namespace(path)
            allowed = {VALUES[ns]} if ns else set(VALUES.values())
            if not set(values_of(body)) <= allowed:
                leaks.append(f"{path}: authorized {ns or 'cluster'}, answered {values_of(body)}")
        elif code != 403 or channel == "direct":  # the aggregator's own 403 is not ours to shape
            assert body.get("kind") == "Status", (path, body)
            assert body.get("code") == code, (path, body)
    print(user, channel, {f"{v}|{r}": c for (v, r), c in got.items()})
    assert leaks == []
    assert got == want
