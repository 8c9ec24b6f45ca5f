"""The adapter as a real process against a real Prometheus: every route shape and error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import pods_rules
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

CONFIG = (
    pods_rules("app")
    + """- seriesQuery: '{__name__=~"^node_.*",node!=""}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__=~"^queue_.*"}'
  resources:
    overrides: {namespace: {resource: namespace}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: '{__name__="global_backlog"}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""
)

CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"


@pytest.fixture(scope="module")
def adapter(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdapterProcess]:
    for pod, value, code in (
        ("web-0", 3, "200"),
        ("web-1", 5, "200"),
        ("web-1", 7, "500"),
        ("web-2", "NaN", "200"),
    ):
        exporter.set(f'app_inflight{{namespace="default",pod="{pod}",code="{code}"}}', value)
    exporter.set('app_inflight{namespace="other",pod="web-0",code="200"}', 100)
    exporter.set('node_load{node="kwok-node-0"}', 1.5)
    exporter.set('queue_depth{namespace="default",queue="emails"}', 42)
    exporter.set('queue_depth{namespace="default",queue="sms"}', 8)
    exporter.set('queue_depth{namespace="other",queue="emails"}', 1000)
    exporter.set("global_backlog", 12)
    wait_until(lambda: len(prometheus.query("app_inflight")) == 5, what="first scrape")
    wait_until(lambda: prometheus.query("global_backlog") != [], what="global_backlog scraped")
    flags = ("--metrics-relist-interval=1h", "--query-cache-ttl=0s")
    a = start_adapter(tmp_path_factory.mktemp("adapter"), prometheus.url, CONFIG, *flags)
    yield a
    stop_adapter(a)


def values(body: dict[str, object]) -> dict[str, str]:
    return {i["describedObject"]["name"]: i["value"] for i in body["items"]}  # type: ignore[index, union-attr]


def test_discovery_lists_each_metric_per_resource(adapter: AdapterProcess) -> None:
    code, body = adapter.get(CUSTOM)
    assert code == 200
    assert body["kind"] == "APIResourceList"
    names = {r["name"]: r["namespaced"] for r in body["resources"]}
    assert names["pods/inflight"] is True
    assert names["namespaces/inflight"] is False
    assert names["nodes/node_load"] is False


def test_group_discovery_documents(adapter: AdapterProcess) -> None:
    code, body = adapter.get("/apis")
    assert code == 200
    assert {g["name"] for g in body["groups"]} == {
        "custom.metrics.k8s.io",
        "external.metrics.k8s.io",
        "metrics.k8s.io",
    }
    code, body = adapter.get("/apis/custom.metrics.k8s.io")
    assert body["preferredVersion"]["version"] == "v1beta2"


def test_one_pod(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-1/inflight")
    assert code == 200
    assert body["kind"] == "MetricValueList"
    item = body["items"][0]
    assert item["describedObject"] == {
        "kind": "Pod",
        "name": "web-1",
        "apiVersion": "v1",
        "namespace": "default",
    }
    assert item["metric"]["name"] == "inflight"
    assert item["value"] == "12"


def test_all_pods_in_a_namespace_and_nan_is_dropped(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/*/inflight")
    assert code == 200
    assert values(body) == {"web-0": "3", "web-1": "12"}


def test_metric_label_selector_narrows_the_series(adapter: AdapterProcess) -> None:
    code, body = adapter.get(
        f"{CUSTOM}/namespaces/default/pods/web-1/inflight?metricLabelSelector=code%3D500"
    )
    assert code == 200
    assert values(body) == {"web-1": "7"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("code%3D200", {"web-0": "3", "web-1": "5"}),
        ("code!%3D200", {"web-1": "7"}),
        ("code+in+(500)", {"web-1": "7"}),
        ("code+notin+(500)", {"web-0": "3", "web-1": "5"}),
        ("code", {"web-0": "3", "web-1": "12"}),
        ("!code", {}),
    ],
)
def test_every_selector_operator(adapter: AdapterProcess, selector: str, expected: dict[str, str]) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/*/inflight?metricLabelSelector={selector}")
    assert code == 200
    assert values(body) == expected


def test_namespace_object_metric(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/other/metrics/inflight")
    assert code == 200
    assert body["items"][0]["describedObject"]["kind"] == "Namespace"
    assert body["items"][0]["value"] == "100"


def test_cluster_scoped_resource(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/nodes/kwok-node-0/node_load")
    assert code == 200
    assert body["items"][0]["value"] == "1500m"


def test_v1beta1_shape(adapter: AdapterProcess) -> None:
    code, body = adapter.get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/web-0/inflight")
    assert code == 200
    assert body["apiVersion"] == "custom.metrics.k8s.io/v1beta1"
    assert body["items"][0]["metricName"] == "inflight"
    assert "metric" not in body["items"][0]


def test_external_metric_namespaced_with_label_selector(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{EXTERNAL}/namespaces/default/queue_depth?labelSelector=queue%3Demails")
    assert code == 200
    assert body["kind"] == "ExternalMetricValueList"
    assert [(i["metricLabels"], i["value"]) for i in body["items"]] == [({"queue": "emails"}, "42")]


def test_external_metric_not_namespaced(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{EXTERNAL}/namespaces/anything/global_backlog")
    assert code == 200
    assert [i["value"] for i in body["items"]] == ["12"]


def test_unknown_metric_is_404_naming_it(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-0/no_such_metric")
    assert code == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert "no_such_metric" in body["message"]


def test_bad_selector_is_400(adapter: AdapterProcess) -> None:
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/*/inflight?metricLabelSelector=a+in+b")
    assert code == 400
    assert body["reason"] == "BadRequest"


def test_hostile_names_cannot_widen_the_query(adapter: AdapterProcess) -> None:
    # an unescaped regex would match both web-0 and web-1
    code, _ = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-0%7Cweb-1/inflight")
    assert code == 404
    code, _ = adapter.get(f"{CUSTOM}/namespaces/default/pods/x%22%7D%20or%20vector(1)%23/inflight")
    assert code == 404


def test_metric_appearing_after_start_is_served_on_demand(
    adapter: AdapterProcess, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    exporter.set('app_fresh{namespace="default",pod="web-0"}', 9)
    wait_until(lambda: prometheus.query("app_fresh") != [], what="app_fresh scraped")
    code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-0/fresh")
    assert code == 200  # relist interval is 1h: this came from the on-demand lookup
    assert body["items"][0]["value"] == "9"


def test_metric_asked_for_before_it_exists_is_served_within_5s_of_appearing(
    adapter: AdapterProcess, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    """A "not found" is remembered only briefly (2 s), so a new series that a controller was
    already asking for is served within seconds, not after the next relist."""
    path = f"{CUSTOM}/namespaces/default/pods/web-0/early"
    assert adapter.get(path)[0] == 404  # asked for before the series exists
    exporter.set('app_early{namespace="default",pod="web-0"}', 4)
    wait_until(lambda: prometheus.query("app_early") != [], what="app_early scraped")
    appeared = time.monotonic()
    wait_until(lambda: adapter.get(path)[0] == 200, timeout=10, what="the new series served")
    assert time.monotonic() - appeared < 5


def test_own_metrics_and_health(adapter: AdapterProcess) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        assert adapter.text(path) == "ok"
    text = adapter.text("/metrics")
    assert "promhpa_adapter_requests_total" in text
    assert 'promhpa_adapter_discovery_runs_total{result="success"}' in text
    assert "promhpa_adapter_series_known" in text


def test_requests_for_unserved_groups_are_counted_under_one_label(adapter: AdapterProcess) -> None:
    for i in range(3):
        code, _ = adapter.get(f"/apis/no-such-group-{i}.example.com/v1/x")
        assert code == 404
    text = adapter.text("/metrics")
    assert 'promhpa_adapter_requests_total{code="404",group="other"}' in text
    assert "no-such-group" not in text  # a label set per path would grow without bound


def test_prometheus_down_is_503_and_recovers(
    adapter: AdapterProcess, prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    prometheus.stop()
    try:
        code, body = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-0/inflight")
        assert code == 503
        assert body["reason"] == "ServiceUnavailable"
        assert prometheus.url in body["message"]
    finally:
        prometheus.start()
    code, _ = adapter.get(f"{CUSTOM}/namespaces/default/pods/web-0/inflight")
    assert code == 200
