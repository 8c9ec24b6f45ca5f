"""One metrics API, two providers: promhpa owns the APIServices and forwards to a running
prometheus-adapter v0.12.0 (the real binary) the metrics it routes there.

Through the real aggregator: discovery lists both providers' metrics, an HPA on each
provider's metric is scaled by promhpa's controller, the upstream's own answers (a 404
Status) come back as they were, and a stopped upstream fails only its own metrics.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.manifests import binding
from localcluster.manifests import cluster_role
from tests.live import Live
from tests.live import adapter_token
from tests.live import running_controller
from tests.live import scale_replicas
from tests.live import try_get
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_metric_app
from tests.support import external_rules
from tests.support import insecure_tls
from tests.support import prometheus_adapter_binary
from tests.support import python_m
from tests.support import start_prometheus_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "mux"
API = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}"
METRICS_APIS = ["external.metrics.k8s.io", "custom.metrics.k8s.io"]


@dataclass
class Setup:
    ours: AdapterProcess
    upstream: AdapterProcess
    token: str


def reader_rbac(cluster: Cluster) -> str:
    """promhpa's ServiceAccount may read what it forwards (its own identity upstream); a reader
    account may read the metrics APIs and /metrics (for the test's own looks)."""
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader", "namespace": NS}},
        cluster_role(
            "mux-metrics-reader",
            (METRICS_APIS, ["*"], ["get", "list"]),
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ),
    ]
    objs += [binding(f"mux-metrics-reader-{sa}", "mux-metrics-reader", ns, sa)
             for ns, sa in (("promhpa", "promhpa-adapter"), (NS, "reader"))]  # fmt: skip
    cluster.apply(objs)
    return cluster.kubectl("-n", NS, "create", "token", "reader", "--duration=1h").stdout.strip()


@pytest.fixture(scope="module")
def setup(live: Live) -> Iterator[Setup]:
    prometheus_adapter_binary()
    cluster, prometheus, work = live.cluster, live.prometheus, live.folder("upstreams")
    live.publish(
        {f'{p}_queue_depth{{namespace="{NS}",queue="q"}}': 5 for p in ("ph", "pa")}, "pa_queue_depth"
    )
    token = reader_rbac(cluster)
    upstream = start_prometheus_adapter(
        cluster, work / "pa", prometheus.url, external_rules("pa_queue_depth", by="")
    )
    live.on_exit(lambda: stop_adapter(upstream))
    rules = (
        external_rules("ph_queue_depth", by="")
        + f"""
upstreams:
- name: pa
  url: https://127.0.0.1:{upstream.port}
  insecureSkipTLSVerify: true
  bearerTokenFile: {adapter_token(cluster, work / "promhpa-token")}
  timeout: 3s
  external: ['^pa_.*$']
"""
    )
    ours = live.adapter(rules, "--upstream-discovery-interval=1s", folder=work)
    yield Setup(ours, upstream, token)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def raw(cluster: Cluster, path: str) -> tuple[int, Any]:
    return try_get(cluster, path)


def test_discovery_lists_both_providers_metrics(cluster: Cluster, setup: Setup) -> None:
    def names() -> set[str]:
        _code, body = raw(cluster, "/apis/external.metrics.k8s.io/v1beta1")
        return {r["name"] for r in body["resources"]} if isinstance(body, dict) else set()

    wait_until(lambda: {"ph_queue_depth", "pa_queue_depth"} <= names(), timeout=60, what="both in discovery")


def test_each_providers_metric_is_served_through_one_apiservice(cluster: Cluster, setup: Setup) -> None:
    for metric in ("ph_queue_depth", "pa_queue_depth"):
        _, body = raw(cluster, f"{API}/{metric}")
        assert isinstance(body, dict), body
        assert body["items"][0]["metricName"] == metric
        assert body["items"][0]["value"] == "5"


def test_an_upstreams_own_error_comes_back_as_it_was(cluster: Cluster, setup: Setup) -> None:
    code, text = raw(cluster, f"{API}/pa_nothing_here")  # routed upstream, which has no such metric
    assert code != 0
    assert "NotFound" in str(text) or "not found" in str(text).lower(), text


def test_an_hpa_on_each_providers_metric_scales(
    cluster: Cluster, exporter: Exporter, setup: Setup, tmp_path: Path
) -> None:
    objs: list[dict[str, Any]] = []
    for prefix in ("ph", "pa"):
        objs += external_metric_app(NS, f"{prefix}-app", f"{prefix}_queue_depth", labels={"mux": "true"})
    cluster.apply(objs)
    for prefix in ("ph", "pa"):
        exporter.set(f'{prefix}_queue_depth{{namespace="{NS}",queue="q"}}', 30)  # 30 / 10 per pod: 3 pods
    flags = ("--hpa-selector=mux", "--horizontal-pod-autoscaler-sync-period=1s")

    def replicas(name: str) -> int:
        return scale_replicas(cluster, NS, name)

    try:
        with running_controller(cluster.kubeconfig, tmp_path / "controller.log", *flags):
            wait_until(lambda: replicas("ph-app") == 3 and replicas("pa-app") == 3, timeout=90,
                       what="both scaled to 3")  # fmt: skip
    finally:
        for prefix in ("ph", "pa"):
            exporter.set(f'{prefix}_queue_depth{{namespace="{NS}",queue="q"}}', 5)


def test_a_stopped_upstream_fails_only_its_own_metrics(cluster: Cluster, setup: Setup) -> None:
    stop_adapter(setup.upstream)
    code, text = raw(cluster, f"{API}/pa_queue_depth")
    assert code != 0
    assert "upstream 'pa'" in str(text), text
    _, body = raw(cluster, f"{API}/ph_queue_depth")  # promhpa's own still serves
    assert isinstance(body, dict), body
    assert body["items"][0]["metricName"] == "ph_queue_depth"

    def readyz() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{setup.ours.health_port}/readyz", timeout=5) as r:
                return str(r.read().decode())
        except urllib.error.HTTPError as e:
            with e:
                return str(e.read().decode())

    wait_until(lambda: "[-]upstream pa" in readyz(), timeout=30, what="the upstream listed down on /readyz")
    assert readyz().startswith("ok")  # still ready: only the upstream's metrics fail
    req = urllib.request.Request(
        setup.ours.url + "/metrics", headers={"Authorization": f"Bearer {setup.token}"}
    )
    with urllib.request.urlopen(req, timeout=10, context=insecure_tls()) as r:
        metrics = r.read().decode()
    assert 'promhpa_adapter_upstream_up{upstream="pa"} 0.0' in metrics
    assert 'promhpa_adapter_upstream_requests_total{code="503",upstream="pa"}' in metrics


def test_check_config_refuses_a_name_from_two_providers(
    prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        external_rules("pa_queue_depth", by="")
        + "upstreams:\n- name: pa\n  url: https://127.0.0.1:1\n  external: ['^pa_.*$']\n"
    )
    out = python_m("adapter", "check-config", str(rules), f"--prometheus-url={prometheus.url}")  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "external metric 'pa_queue_depth' is also routed to upstream 'pa'" in out.stderr
