"""A ``pods/*`` request over 1,000 pods, through the real aggregator: the adapter's query
names every pod (a ~20 KB regex, over twice the limit), which it POSTs; a proxy in front of
Prometheus with nginx's 8 KB URL limit lets it through. 1,000 rather than 5,000: the limit is
passed either way, and the scheduler and kwok take three minutes to run 5,000 pods
(``tests/promclient/test_prometheus_access.py`` POSTs a 5,000-name query, and
``make bench-scale`` serves pods/* over 10,000 pods)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import Recorder
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS, PODS = "big", 1000
CONFIG = """
rules:
- seriesQuery: '{__name__="big_inflight",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""


def running(cluster: Cluster) -> list[str]:
    out = cluster.kubectl("-n", NS, "get", "pods", "-l", "app=big", "-o", "json", check=False)
    items = json.loads(out.stdout or '{"items": []}')["items"]
    return [p["metadata"]["name"] for p in items if p["status"].get("phase") == "Running"]


@pytest.fixture(scope="module")
def proxy(prometheus: PrometheusProcess) -> Iterator[Recorder]:
    with Recorder(prometheus.url, max_url=8192) as r:
        yield r


@pytest.fixture(scope="module")
def adapter(live: Live, proxy: Recorder) -> AdapterProcess:
    live.publish({f'big_inflight{{namespace="{NS}",pod="seed"}}': 0}, "big_inflight")
    return live.adapter(CONFIG, f"--prometheus-url={proxy.url}")


@pytest.mark.timeout(400)
def test_pods_star_over_1000_pods_is_posted_and_served(
    cluster: Cluster, exporter: Exporter, adapter: AdapterProcess, proxy: Recorder
) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl(
        "-n", NS, "create", "deployment", "big", "--image=example.invalid/big", f"--replicas={PODS}"
    )
    try:
        wait_until(lambda: len(running(cluster)) == PODS, timeout=240, what=f"{PODS} running pods")
        names = sorted(running(cluster))
        exporter.set(f'big_inflight{{namespace="{NS}",pod="{names[0]}"}}', 3)
        exporter.set(f'big_inflight{{namespace="{NS}",pod="{names[-1]}"}}', 4)
        path = (
            f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NS}/pods/*/big_inflight?labelSelector=app%3Dbig"
        )
        answer: dict[str, str] = {}
        last: list[str] = [""]

        def served() -> bool:
            out = cluster.kubectl("get", "--raw", path, check=False)
            last[0] = (out.stderr or out.stdout)[:500]
            if out.returncode != 0:
                return False
            answer.clear()
            answer.update({i["describedObject"]["name"]: i["value"] for i in json.loads(out.stdout)["items"]})
            return answer == {names[0]: "3", names[-1]: "4"}

        try:
            wait_until(served, timeout=60, what="both pods' values through the aggregator")
        except AssertionError:
            print("last answer:", last[0], answer, proxy.methods[-5:])
            raise
        posted = [q for q, _ in proxy.take() if q.count("|") >= PODS - 1]
        assert posted, f"the {PODS}-name query reached Prometheus"
        assert max(len(q) for q in posted) > 2 * 8192  # well past the proxy's URL limit
        assert "POST" in proxy.methods
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
