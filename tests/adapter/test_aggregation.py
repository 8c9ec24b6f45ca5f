"""The adapter behind the real kube-apiserver's aggregation layer.

Registered as a cluster would do it (ExternalName Service to 127.0.0.1, APIServices with a
real caBundle, a serving certificate for promhpa-adapter.promhpa.svc), running as a process
with a ServiceAccount's token and exactly the RBAC it is granted, serving the pods of a real
Deployment run by kwok.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from localcluster import Cluster
from localcluster import service_account_kubeconfig
from localcluster.manifests import binding
from localcluster.manifests import cluster_role
from localcluster.pki import issue
from tests.live import Live
from tests.live import try_get
from tests.support import AdapterProcess
from tests.support import pods_rules
from tests.support import wait_until

pytestmark = pytest.mark.cluster

NS, SERVICE = "promhpa", "promhpa-adapter"
CONFIG = (
    pods_rules("agg")
    + """externalRules:
- seriesQuery: '{__name__="agg_queue_messages"}'
  resources:
    overrides: {namespace: {resource: namespace}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum(agg_container_cpu{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(agg_node_cpu{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}
    containerLabel: container
  window: 1m
"""
)


def pod_names(cluster: Cluster, ns: str, selector: str) -> list[str]:
    pods = json.loads(cluster.kubectl("-n", ns, "get", "pods", "-l", selector, "-o", "json").stdout)["items"]
    return sorted(p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running")


@pytest.fixture(scope="module")
def registered(live: Live) -> tuple[AdapterProcess, list[str]]:
    cluster = live.cluster
    cluster.kubectl("create", "namespace", "shop")
    cluster.kubectl(
        "-n", "shop", "create", "deployment", "web", "--image=example.invalid/web", "--replicas=2"
    )
    wait_until(lambda: len(pod_names(cluster, "shop", "app=web")) == 2, timeout=60, what="2 running web pods")
    pods = pod_names(cluster, "shop", "app=web")
    samples = {'agg_requests{namespace="shop",pod="not-a-web-pod"}': 999.0}
    for i, name in enumerate(pods):
        samples[f'agg_requests{{namespace="shop",pod="{name}"}}'] = 10 * (i + 1)
        samples[f'agg_container_cpu{{namespace="shop",pod="{name}",container="web"}}'] = 0.1 * (i + 1)
    live.publish(samples, "agg_requests", count=3)
    live.publish({'agg_queue_messages{namespace="shop",queue="orders"}': 17}, "agg_queue_messages")
    return live.adapter(CONFIG), pods


def raw(cluster: Cluster, path: str, kubeconfig: Path | None = None) -> tuple[int, Any]:
    return try_get(cluster, path, kubeconfig)


def test_apiservices_are_available_and_listed(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    wanted = {
        "custom.metrics.k8s.io/v1beta2",
        "custom.metrics.k8s.io/v1beta1",
        "external.metrics.k8s.io/v1beta1",
        "metrics.k8s.io/v1",
        "metrics.k8s.io/v1beta1",
    }
    # the apiserver's aggregated discovery refreshes a little after an APIService turns Available
    wait_until(
        lambda: wanted <= set(cluster.kubectl("api-versions").stdout.split()),
        timeout=30,
        what="the metric groups in discovery",
    )
    resources = cluster.kubectl("api-resources").stdout
    for group in (  # each group's preferred version
        "custom.metrics.k8s.io/v1beta2",
        "external.metrics.k8s.io/v1beta1",
        "metrics.k8s.io/v1",
    ):
        assert group in resources
    _, listing = raw(cluster, "/apis/custom.metrics.k8s.io/v1beta2")
    assert "pods/requests" in {r["name"] for r in listing["resources"]}


def test_kubectl_top_reads_metrics_k8s_io_v1(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    """kubectl 1.37 asks for the first metrics.k8s.io version discovery lists that it
    supports (v1, then v1beta1): promhpa's v1 answers it."""
    _, pods = registered
    wait_until(
        lambda: "metrics.k8s.io/v1" in cluster.kubectl("api-versions").stdout.split(),
        timeout=30,
        what="metrics.k8s.io/v1 in discovery",
    )
    out = cluster.kubectl("-n", "shop", "top", "pods", "-l", "app=web", "-v=6")
    assert "/apis/metrics.k8s.io/v1/namespaces/shop/pods" in out.stderr, out.stderr[-2000:]
    assert "/apis/metrics.k8s.io/v1beta1/" not in out.stderr
    rows = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()[1:]}
    assert rows == {pods[0]: "100m", pods[1]: "200m"}


def test_custom_metric_for_deployment_pods_through_the_aggregator(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    _, pods = registered
    code, body = raw(
        cluster, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/requests?labelSelector=app%3Dweb"
    )
    assert code == 0, body
    assert {i["describedObject"]["name"]: i["value"] for i in body["items"]} == {pods[0]: "10", pods[1]: "20"}


def test_external_metric_through_the_aggregator(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    code, body = raw(cluster, "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/agg_queue_messages")
    assert code == 0, body
    assert [(i["metricLabels"], i["value"]) for i in body["items"]] == [({"queue": "orders"}, "17")]


def test_resource_metrics_through_the_aggregator(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    _, pods = registered
    code, body = raw(cluster, "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods?labelSelector=app%3Dweb")
    assert code == 0, body
    usage = {i["metadata"]["name"]: i["containers"][0]["usage"]["cpu"] for i in body["items"]}
    assert usage == {pods[0]: "100m", pods[1]: "200m"}


def test_direct_request_without_credentials_is_401(registered: tuple[AdapterProcess, list[str]]) -> None:
    adapter, _ = registered
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{adapter.url}/apis/custom.metrics.k8s.io/v1beta2", context=ctx, timeout=10)
    with e.value:
        assert e.value.code == 401
        assert json.loads(e.value.read())["reason"] == "Unauthorized"


def _front_proxy_call(adapter: AdapterProcess, cert: Path) -> int:
    """Status of a request that presents ``cert`` and claims system:masters in the headers."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(cert.with_suffix(".crt")), str(cert.with_suffix(".key")))
    req = urllib.request.Request(
        f"{adapter.url}/apis/custom.metrics.k8s.io/v1beta2",
        headers={"X-Remote-User": "someone", "X-Remote-Group": "system:masters"},
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        with e:
            return e.code


def test_identity_headers_count_only_under_the_front_proxys_allowed_name(
    registered: tuple[AdapterProcess, list[str]], cluster: Cluster, tmp_path: Path
) -> None:
    adapter, _ = registered
    front_proxy_ca = (
        load_pem_private_key((cluster.pki / "front-proxy-ca.key").read_bytes(), None),
        x509.load_pem_x509_certificate((cluster.pki / "front-proxy-ca.crt").read_bytes()),
    )
    issue(tmp_path / "other", front_proxy_ca, "not-the-front-proxy")  # the right CA, another name
    assert _front_proxy_call(adapter, cluster.pki / "front-proxy-client") == 200
    assert _front_proxy_call(adapter, tmp_path / "other") == 401


def _reader(cluster: Cluster, name: str, grant: bool, tmp: Path) -> Path:
    cluster.kubectl("-n", "shop", "create", "serviceaccount", name)
    if grant:
        reads = (["custom.metrics.k8s.io", "external.metrics.k8s.io"], ["*"], ["get", "list"])
        cluster.apply(
            [
                cluster_role(f"{name}-metrics", reads),
                binding(f"{name}-metrics", f"{name}-metrics", "shop", name),
            ]
        )
    return service_account_kubeconfig(cluster, "shop", name, tmp / f"{name}.kubeconfig")


def test_service_account_without_rbac_gets_403(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]], tmp_path: Path
) -> None:
    kc = _reader(cluster, "no-grants", grant=False, tmp=tmp_path)
    out = cluster.kubectl(
        "get",
        "--raw",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/requests",
        check=False,
        kubeconfig=kc,
    )
    assert out.returncode != 0
    assert "Forbidden" in out.stderr or "forbidden" in out.stderr


def test_service_account_with_rbac_gets_200(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]], tmp_path: Path
) -> None:
    kc = _reader(cluster, "metrics-reader", grant=True, tmp=tmp_path)
    code, body = raw(
        cluster,
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/requests?labelSelector=app%3Dweb",
        kubeconfig=kc,
    )
    assert code == 0, body
    assert len(body["items"]) == 2


def test_bearer_token_straight_to_the_adapter_is_reviewed(
    cluster: Cluster, registered: tuple[AdapterProcess, list[str]]
) -> None:
    adapter, _ = registered
    cluster.kubectl("-n", "shop", "create", "serviceaccount", "direct", check=False)
    token = cluster.kubectl("-n", "shop", "create", "token", "direct").stdout.strip()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(
        f"{adapter.url}/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/x/requests",
        headers={"Authorization": f"Bearer {token}"},
    )
    with pytest.raises(urllib.error.HTTPError) as e:  # authenticated by TokenReview, refused by SAR
        urllib.request.urlopen(req, context=ctx, timeout=10)
    with e.value:
        assert e.value.code == 403
