"""One metrics API, two providers: promhpa owns the APIServices and forwards to a running
prometheus-adapter v0.12.0 (the real binary) the metrics it routes there.

Through the real aggregator: discovery lists both providers' metrics, an HPA on each
provider's metric is scaled by promhpa's controller, the upstream's own answers (a 404
Status) come back as they were, and a stopped upstream fails only its own metrics.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from tests.support import (
    AdapterProcess,
    Exporter,
    PrometheusProcess,
    apply_items,
    external_metric_app,
    external_rules,
    insecure_tls,
    prometheus_adapter_binary,
    register_and_start_adapter,
    start_controller_process,
    start_prometheus_adapter,
    stop_adapter,
    stop_process,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "mux"
API = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}"


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
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "mux-metrics-reader"},
            "rules": [
                {
                    "apiGroups": ["external.metrics.k8s.io", "custom.metrics.k8s.io"],
                    "resources": ["*"],
                    "verbs": ["get", "list"],
                },
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        },
    ]
    for ns, sa in (("promhpa", "promhpa-adapter"), (NS, "reader")):
        objs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"mux-metrics-reader-{sa}"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "mux-metrics-reader",
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
            }
        )
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return cluster.kubectl("-n", NS, "create", "token", "reader", "--duration=1h").stdout.strip()


@pytest.fixture(scope="module")
def setup(
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Setup]:
    prometheus_adapter_binary()
    work = tmp_path_factory.mktemp("upstreams")
    exporter.set(f'ph_queue_depth{{namespace="{NS}",queue="q"}}', 5)
    exporter.set(f'pa_queue_depth{{namespace="{NS}",queue="q"}}', 5)
    wait_until(lambda: prometheus.query("pa_queue_depth") != [], what="scrape")
    token = reader_rbac(cluster)
    upstream = start_prometheus_adapter(
        cluster, work / "pa", prometheus.url, external_rules("pa_queue_depth", by="")
    )
    rules = (
        external_rules("ph_queue_depth", by="")
        + f"""
upstreams:
- name: pa
  url: https://127.0.0.1:{upstream.port}
  insecureSkipTLSVerify: true
  bearerTokenFile: {work / "promhpa-token"}
  timeout: 3s
  external: ['^pa_.*$']
"""
    )
    # the ServiceAccount promhpa's adapter runs as: its own token is what goes upstream
    cluster.kubectl("create", "namespace", "promhpa", check=False)
    cluster.kubectl("-n", "promhpa", "create", "serviceaccount", "promhpa-adapter", check=False)
    (work / "promhpa-token").write_text(
        cluster.kubectl("-n", "promhpa", "create", "token", "promhpa-adapter", "--duration=1h").stdout.strip()
    )
    ours = register_and_start_adapter(cluster, prometheus, work, rules, "--upstream-discovery-interval=1s")
    try:
        yield Setup(ours, upstream, token)
    finally:
        stop_adapter(ours)
        stop_adapter(upstream)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def raw(cluster: Cluster, path: str) -> tuple[int, dict[str, Any] | str]:
    out = cluster.kubectl("get", "--raw", path, check=False)
    if out.returncode == 0:
        return 0, json.loads(out.stdout)
    return out.returncode, out.stderr


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
    apply_items(cluster, objs)
    for prefix in ("ph", "pa"):
        exporter.set(f'{prefix}_queue_depth{{namespace="{NS}",queue="q"}}', 30)  # 30 / 10 per pod: 3 pods
    controller = start_controller_process(
        cluster.kubeconfig, tmp_path / "controller.log", "--hpa-selector=mux",
        "--horizontal-pod-autoscaler-sync-period=1s", "--log-format=console",
    )  # fmt: skip

    def replicas(name: str) -> int:
        out = cluster.kubectl("get", "--raw", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}/scale")
        return int(json.loads(out.stdout)["spec"]["replicas"])

    try:
        wait_until(
            lambda: replicas("ph-app") == 3 and replicas("pa-app") == 3, timeout=90, what="both scaled to 3"
        )
    finally:
        stop_process(controller)
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
    out = subprocess.run(
        [sys.executable, "-m", "adapter", "check-config", str(rules), f"--prometheus-url={prometheus.url}"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], check=False,
    )  # fmt: skip
    assert out.returncode == 1, out.stdout + out.stderr
    assert "external metric 'pa_queue_depth' is also routed to upstream 'pa'" in out.stderr
