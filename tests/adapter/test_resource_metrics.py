"""metrics.k8s.io from resourceRules, against a real Prometheus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

CONFIG = """
resourceRules:
  cpu:
    containerQuery: 'sum(test_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(test_node_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}
    containerLabel: container
  memory:
    containerQuery: 'sum(test_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(test_node_memory_bytes{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources:
      overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}
    containerLabel: container
  window: 1m
"""
BASE = "/apis/metrics.k8s.io/v1beta1"


@pytest.fixture(scope="module")
def adapter(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdapterProcess]:
    exporter.set('test_cpu_cores{namespace="default",pod="web-0",container="app"}', 0.25)
    exporter.set('test_cpu_cores{namespace="default",pod="web-0",container="proxy"}', "NaN")
    exporter.set('test_memory_bytes{namespace="default",pod="web-0",container="app"}', 64 * 1024 * 1024)
    exporter.set('test_cpu_cores{namespace="jobs",pod="batch-0",container="main"}', 1.5)
    exporter.set('test_node_cpu_cores{node="kwok-node-0"}', 3)
    exporter.set('test_node_memory_bytes{node="kwok-node-0"}', 2 * 1024**3)
    wait_until(lambda: len(prometheus.query("test_cpu_cores")) == 3, what="scrape")
    wait_until(lambda: prometheus.query("test_node_memory_bytes") != [], what="scrape")
    a = start_adapter(tmp_path_factory.mktemp("adapter"), prometheus.url, CONFIG, "--query-cache-ttl=0s")
    yield a
    stop_adapter(a)


def test_pod_metrics_per_container(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{BASE}/namespaces/default/pods/web-0")
    assert code == 200
    assert body["kind"] == "PodMetrics"
    assert body["window"] == "1m"
    containers = {c["name"]: c["usage"] for c in body["containers"]}
    assert containers["app"] == {"cpu": "250m", "memory": "64Mi"}
    assert containers["proxy"]["cpu"] == "0"  # NaN becomes 0


def test_pods_in_a_namespace_and_across_namespaces(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{BASE}/namespaces/default/pods")
    assert code == 200
    assert [i["metadata"]["name"] for i in body["items"]] == ["web-0"]
    code, body = adapter.get(f"{BASE}/pods")
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]} == {
        ("default", "web-0"),
        ("jobs", "batch-0"),
    }


def test_node_metrics(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{BASE}/nodes/kwok-node-0")
    assert code == 200
    assert body["usage"] == {"cpu": "3", "memory": "2Gi"}
    code, body = adapter.get(f"{BASE}/nodes")
    assert body["kind"] == "NodeMetricsList"


def test_missing_pod_is_404(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{BASE}/namespaces/default/pods/nope")
    assert code == 404
    assert "nope" in body["message"]


def test_v1_serves_the_same_pod_metrics_as_v1beta1(adapter: AdapterProcess) -> None:
    code, v1 = adapter.get("/apis/metrics.k8s.io/v1/namespaces/default/pods/web-0")
    assert code == 200
    assert v1["apiVersion"] == "metrics.k8s.io/v1"
    _, beta = adapter.get(f"{BASE}/namespaces/default/pods/web-0")
    assert v1["containers"] == beta["containers"]


def test_discovery_prefers_v1(adapter: AdapterProcess) -> None:
    code, group = adapter.get("/apis/metrics.k8s.io")
    assert code == 200
    assert group["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
