"""Prometheus 3's UTF-8 metric and label names (OpenTelemetry style) served end to end.

A real Prometheus 3 scrapes series such as ``{"http.server.duration", "k8s.pod.name"=...}``;
rules select them with the quoted form and map dotted labels to resources; the adapter
quotes every non-legacy name in the PromQL it builds. (Prometheus 2 has no such names: with
`make test PROMETHEUS=2` these tests are skipped; every other test covers legacy names.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localcluster.tools import prometheus_major
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.skipif(prometheus_major() != "3", reason="UTF-8 names need Prometheus 3")
CONFIG = """
rules:
- seriesQuery: '{"http.server.active_requests", "k8s.namespace.name"!="", "k8s.pod.name"!=""}'
  resources:
    overrides: {k8s.namespace.name: {resource: namespace}, k8s.pod.name: {resource: pod}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{"messaging.queue.depth"}'
  resources:
    overrides: {k8s.namespace.name: {resource: namespace}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by ("messaging.queue.name")'
"""


@pytest.fixture(scope="module")
def adapter(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdapterProcess]:
    for pod, value in (("web-0", 4), ("web-1", 6)):
        exporter.set(
            f'{{"http.server.active_requests","k8s.namespace.name"="shop","k8s.pod.name"="{pod}"}}', value
        )
    exporter.set('{"http.server.active_requests","k8s.namespace.name"="other","k8s.pod.name"="web-0"}', 99)
    exporter.set('{"messaging.queue.depth","k8s.namespace.name"="shop","messaging.queue.name"="orders"}', 17)
    wait_until(
        lambda: len(prometheus.query('{"http.server.active_requests"}')) == 3, timeout=30, what="scrape"
    )
    wait_until(lambda: prometheus.query('{"messaging.queue.depth"}') != [], timeout=30, what="scrape")
    a = start_adapter(tmp_path_factory.mktemp("utf8"), prometheus.url, CONFIG, "--query-cache-ttl=0s")
    yield a
    stop_adapter(a)


def test_a_dotted_metric_of_a_pod_is_served_from_its_dotted_labels(adapter: AdapterProcess) -> None:
    code, body = adapter.get(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-1/http.server.active_requests"
    )
    assert code == 200, body
    (item,) = body["items"]
    assert (item["describedObject"]["name"], item["value"]) == ("web-1", "6")


def test_discovery_lists_the_dotted_metric(adapter: AdapterProcess) -> None:
    code, body = adapter.get("/apis/custom.metrics.k8s.io/v1beta2")
    assert code == 200
    assert "pods/http.server.active_requests" in {r["name"] for r in body["resources"]}


def test_a_dotted_external_metric_keeps_its_dotted_labels(adapter: AdapterProcess) -> None:
    code, body = adapter.get("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/messaging.queue.depth")
    assert code == 200, body
    (item,) = body["items"]
    assert item["value"] == "17"
    assert item["metricLabels"] == {"messaging.queue.name": "orders"}


def test_the_namespace_boundary_holds_for_dotted_labels(adapter: AdapterProcess) -> None:
    code, body = adapter.get(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/web-0/http.server.active_requests"
    )
    assert code == 200
    assert body["items"][0]["value"] == "4"  # not the other namespace's 99
