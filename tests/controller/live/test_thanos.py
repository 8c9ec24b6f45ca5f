"""Thanos as the backend: custom and external metrics served through a Thanos Querier over
two Prometheus replicas (deduplicated on the ``replica`` label, partial responses refused,
queries POSTed), and an HPA scaled on one of them by the live controller.

Both replicas scrape the same exporter, so without deduplication every series comes back
twice and every sum doubles; the HPA's replica count tells which one was served.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.thanos import ThanosStack
from tests.support import (
    AdapterProcess,
    Exporter,
    PrometheusProcess,
    Recorder,
    cpu_deployment,
    prometheus_binary,
    register_and_start_adapter,
    start_controller_process,
    stop_adapter,
    stop_process,
    thanos_binary,
    wait_until,
)

pytestmark = pytest.mark.cluster
NS = "thanos"


def rules(url: str) -> str:
    return f"""
backends:
- name: thanos
  url: {url}
  method: POST
  params: {{dedup: "true", partial_response: "false"}}
rules:
- seriesQuery: '{{__name__="thanos_requests",namespace!="",pod!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
  backend: thanos
externalRules:
- seriesQuery: '{{__name__="thanos_queue_depth"}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (queue)'
  backend: thanos
"""


@pytest.fixture(scope="module")
def thanos(exporter: Exporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThanosStack]:
    exporter.set(f'thanos_queue_depth{{namespace="{NS}",queue="jobs"}}', 30)
    exporter.set(f'thanos_requests{{namespace="{NS}",pod="p1"}}', 5)
    stack = ThanosStack(
        prometheus_binary(), tmp_path_factory.mktemp("thanos"), exporter.port, thanos_binary()
    )
    stack.start()
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def recorder(thanos: ThanosStack) -> Iterator[Recorder]:
    r = Recorder(thanos.url)  # what the adapter sends the Querier
    r.start()
    yield r
    r.close()


@pytest.fixture(scope="module")
def adapter(
    cluster: Cluster,
    prometheus: PrometheusProcess,
    thanos: ThanosStack,
    recorder: Recorder,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[AdapterProcess]:
    both = 'count(thanos_queue_depth{queue="jobs"})'
    wait_until(
        lambda: [r["value"][1] for r in thanos.query(both, dedup="false")] == ["2"],
        timeout=60,
        what="both replicas' series in the Querier",
    )
    url = f"http://127.0.0.1:{recorder.server.server_address[1]}"
    a = register_and_start_adapter(cluster, prometheus, tmp_path_factory.mktemp("adapter"), rules(url))
    yield a
    stop_adapter(a)


def raw(cluster: Cluster, path: str) -> dict[str, Any]:
    return dict(json.loads(cluster.kubectl("get", "--raw", path).stdout))


def test_external_metric_through_the_querier_is_deduplicated(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    body = raw(cluster, f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/thanos_queue_depth")
    assert [(i["metricLabels"], i["value"]) for i in body["items"]] == [({"queue": "jobs"}, "30")]


def test_custom_metric_through_the_querier_is_deduplicated(cluster: Cluster, adapter: AdapterProcess) -> None:
    body = raw(cluster, f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NS}/pods/p1/thanos_requests")
    assert [(i["describedObject"]["name"], i["value"]) for i in body["items"]] == [("p1", "5")]


def test_the_querier_gets_posts_with_dedup_and_partial_response_off(
    adapter: AdapterProcess, recorder: Recorder
) -> None:
    with recorder.lock:
        queries = [(p, params) for p, params, _ in recorder.calls if p == "/api/v1/query"]
    assert queries, "no query reached the Querier"
    for _, params in queries:
        assert params.get("dedup") == ["true"]
        assert params.get("partial_response") == ["false"]
    assert set(recorder.methods) == {"POST"}


def test_an_hpa_scales_on_a_metric_served_through_thanos(
    cluster: Cluster, adapter: AdapterProcess, tmp_path: Path
) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(cpu_deployment(NS, "worker")))
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "worker", "namespace": NS, "labels": {"thanos-test": "true"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": {
                            "name": "thanos_queue_depth",
                            "selector": {"matchLabels": {"queue": "jobs"}},
                        },
                        "target": {"type": "AverageValue", "averageValue": "10"},
                    },
                }
            ],
        },
    }
    cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa))
    proc = start_controller_process(
        cluster.kubeconfig,
        tmp_path / "controller.log",
        "--horizontal-pod-autoscaler-sync-period=1s",
        "--hpa-selector=thanos-test",
        "--log-format=console",
    )
    try:

        def status() -> dict[str, Any]:
            return dict(
                raw(cluster, f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/worker")[
                    "status"
                ]
            )

        # 30 queued / 10 per replica: 3 replicas (6 would mean the replicas' copies were summed)
        wait_until(lambda: status().get("desiredReplicas") == 3, timeout=60, what="3 desired replicas")
        scale = raw(cluster, f"/apis/apps/v1/namespaces/{NS}/deployments/worker/scale")
        assert scale["spec"]["replicas"] == 3

        def average() -> str:
            return str(status()["currentMetrics"][0]["external"]["current"]["averageValue"])

        # once the 3 replicas are counted: 30 / 3 = 10 per replica, and no further scaling
        wait_until(lambda: average() == "10", timeout=30, what="10 per replica at 3 replicas")
        assert status()["desiredReplicas"] == 3
    finally:
        stop_process(proc)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
