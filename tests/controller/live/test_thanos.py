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
from localcluster.manifests import external_metric
from localcluster.manifests import hpa_manifest
from localcluster.thanos import ThanosStack
from tests.live import Live
from tests.live import get_json
from tests.live import hpa
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import Recorder
from tests.support import cpu_deployment
from tests.support import prometheus_binary
from tests.support import thanos_binary
from tests.support import wait_until

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
    with Recorder(thanos.url) as r:  # what the adapter sends the Querier
        yield r


@pytest.fixture(scope="module")
def adapter(live: Live, thanos: ThanosStack, recorder: Recorder) -> AdapterProcess:
    both = 'count(thanos_queue_depth{queue="jobs"})'
    wait_until(lambda: [r["value"][1] for r in thanos.query(both, dedup="false")] == ["2"], timeout=60,
               what="both replicas' series in the Querier")  # fmt: skip
    return live.adapter(rules(recorder.url))


def raw(cluster: Cluster, path: str) -> dict[str, Any]:
    return dict(get_json(cluster, path))


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
    obj = hpa_manifest(NS, "worker", external_metric("thanos_queue_depth", "10", {"queue": "jobs"}),
                       labels={"thanos-test": "true"})  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))
    flags = ("--horizontal-pod-autoscaler-sync-period=1s", "--hpa-selector=thanos-test")

    def status() -> dict[str, Any]:
        return dict(hpa(cluster, NS, "worker")["status"])

    try:
        with running_controller(cluster.kubeconfig, tmp_path / "controller.log", *flags):
            # 30 queued / 10 per replica: 3 replicas (6 would mean the replicas' copies were summed)
            wait_until(lambda: status().get("desiredReplicas") == 3, timeout=60, what="3 desired replicas")
            assert scale_replicas(cluster, NS, "worker") == 3

            def average() -> str:
                return str(status()["currentMetrics"][0]["external"]["current"]["averageValue"])

            # once the 3 replicas are counted: 30 / 3 = 10 per replica, and no further scaling
            wait_until(lambda: average() == "10", timeout=30, what="10 per replica at 3 replicas")
            assert status()["desiredReplicas"] == 3
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
