"""What HPAs cost a managed Prometheus that bills and throttles per query, on the real control
plane: the controller, the adapter behind the aggregator (its default query cache), and a
proxy in front of a real Prometheus that counts every instant query and can throttle.

- Eight HPAs read one External metric: four with selectors of their own, four with the same
  selector. Each distinct query reaches Prometheus at most once per sync period, and the four
  identical ones together no more than one HPA alone (the cache and coalescing).
- The proxy then throttles (429, ``Retry-After``): each HPA's ScalingActive condition names
  the throttling, and no HPA scales (a broken metric never scales down).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.live import hpa
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Recorder
from tests.support import external_metric_app
from tests.support import external_rules
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "qrate"
METRIC = "qr_queue_depth"
SYNC = 3.0
WINDOW = 18.0
OWN = [f"own-{i}" for i in range(4)]  # a selector each
SHARED = [f"shared-{i}" for i in range(4)]  # one selector for all four


@pytest.fixture(scope="module")
def proxy(live: Live) -> Iterator[Recorder]:
    samples = {f'{METRIC}{{namespace="{NS}",queue="{q}"}}': 20 for q in [*OWN, "shared"]}
    live.publish(samples, METRIC, count=len(samples))
    with Recorder(live.prometheus.url) as r:
        yield r


@pytest.fixture(scope="module")
def adapter(live: Live, proxy: Recorder) -> AdapterProcess:
    # the adapter's default query cache, which the live adapter of other tests turns off
    return live.adapter(external_rules(METRIC), f"--prometheus-url={proxy.url}", "--query-cache-ttl=5s")


def _objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for name in [*OWN, *SHARED]:
        queue = name if name in OWN else "shared"
        out += external_metric_app(NS, name, METRIC, labels={"qrate": "true"}, replicas=2, max_replicas=2,
                                   average_value="10", selector={"queue": queue})  # fmt: skip
    return out


def _condition(cluster: Cluster, name: str, kind: str) -> dict[str, Any]:
    conditions = hpa(cluster, NS, name).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), {})


@pytest.fixture(scope="module")
def controller(cluster: Cluster, live: Live, adapter: AdapterProcess) -> Iterator[None]:
    cluster.apply(_objects())
    live.controller("--hpa-selector=qrate", f"--horizontal-pod-autoscaler-sync-period={SYNC:g}s")

    def reading() -> bool:
        return all(
            _condition(cluster, n, "ScalingActive").get("reason") == "ValidMetricFound"
            for n in [*OWN, *SHARED]
        )

    wait_until(reading, timeout=60, what="every HPA reading its metric")
    yield
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_each_query_reaches_prometheus_at_most_once_per_sync_period(
    proxy: Recorder, controller: None
) -> None:
    with proxy.lock:
        start = len(proxy.queries)
    time.sleep(WINDOW)
    with proxy.lock:
        sent = Counter(q for q, _ in proxy.queries[start:])
    periods = WINDOW / SYNC
    per_query = {q: n / periods for q, n in sent.items()}
    assert len(sent) == len(OWN) + 1, sent  # four selectors of their own, one shared
    assert all(rate <= 1.1 for rate in per_query.values()), per_query  # +10 %: a window's edges
    shared = next(n for q, n in sent.items() if '"shared"' in q)
    # the four HPAs on one selector cost what one does: per HPA, a quarter of a query a period
    assert shared / periods / len(SHARED) <= 0.3, sent
    per_hpa = sum(sent.values()) / periods / (len(OWN) + len(SHARED))
    print(f"\nqueries per HPA per period ({SYNC:g}s, {WINDOW:g}s): {per_hpa:.2f}; per query: {per_query}")


def test_a_throttling_backend_is_named_in_each_hpas_condition_and_nothing_scales(
    cluster: Cluster, proxy: Recorder, controller: None
) -> None:
    proxy.retry_after, proxy.throttle = "5", 10**6
    try:

        def named() -> bool:
            return all(
                "is throttling queries" in _condition(cluster, n, "ScalingActive").get("message", "")
                for n in [*OWN, *SHARED]
            )

        wait_until(named, timeout=30, what="the throttling in every HPA's condition")
        c = _condition(cluster, OWN[0], "ScalingActive")
        assert (c["status"], c["reason"]) == ("False", "FailedGetExternalMetric"), json.dumps(c)
        assert "429" in c["message"], c["message"]
        assert [scale_replicas(cluster, NS, n) for n in [*OWN, *SHARED]] == [2] * 8
    finally:
        proxy.throttle = 0
