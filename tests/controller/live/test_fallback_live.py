"""The opt-in fallback on the real control plane, with Prometheus really stopped.

Two HPAs read one External metric through the adapter: ``with`` carries a Static fallback
(4 replicas after 3 s of failure), ``without`` carries none. Prometheus is stopped: ``with``
goes to 4 and says so in its status; ``without`` holds its count, as upstream does. Prometheus
is started again: ``with`` decides from its metric again within one sync period of the metric
being served. A rule with ``absent: zero`` answers 0 for a series that does not exist.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.live import hpa_conditions
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import PrometheusProcess
from tests.support import external_metric_app
from tests.support import prefixed_rules
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "fallback"
SYNC = 1.0
FALLBACK = {"policy": "Static", "replicas": 4, "failureDurationSeconds": 3}
ABSENT_RULES = """- seriesQuery: '{__name__="fb_absent_zero"}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
  absent: zero
- seriesQuery: '{__name__="fb_absent_error"}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
"""
RULES = prefixed_rules("fb").replace("resourceRules:", ABSENT_RULES + "resourceRules:")


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    samples = {f'fb_queue_depth{{namespace="{NS}",queue="{name}"}}': 20 for name in ("with", "without")}
    samples |= {
        f'{metric}{{namespace="{NS}",queue="a"}}': 5 for metric in ("fb_absent_zero", "fb_absent_error")
    }
    live.publish(samples, "fb_queue_depth", count=2)
    return live.adapter(RULES)


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for name in ("with", "without"):
        app = external_metric_app(NS, name, "fb_queue_depth", labels={"fallback": "true"}, replicas=2,
                                  max_replicas=8, selector={"queue": name})  # fmt: skip
        app[1]["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 0}}
        if name == "with":
            app[1]["metadata"]["annotations"] = {"promhpa.io/fallback": json.dumps(FALLBACK)}
        out += app
    return out


def conditions(cluster: Cluster, name: str) -> dict[str, tuple[str, str]]:
    return hpa_conditions(cluster, NS, name)


def replicas(cluster: Cluster, name: str) -> int:
    return scale_replicas(cluster, NS, name)


def served(cluster: Cluster, metric: str, queue: str) -> list[str] | None:
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/{metric}?labelSelector=queue%3D{queue}"
    out = cluster.kubectl("get", "--raw", path, check=False)
    return [i["value"] for i in json.loads(out.stdout)["items"]] if out.returncode == 0 else None


@pytest.fixture(scope="module")
def controller(cluster: Cluster, live: Live, adapter: AdapterProcess) -> Iterator[Path]:
    cluster.apply(objects())
    c = live.controller("--hpa-selector=fallback", f"--horizontal-pod-autoscaler-sync-period={SYNC:g}s")

    def reading(name: str) -> bool:
        return conditions(cluster, name).get("ScalingActive", ("", ""))[1] == "ValidMetricFound"

    wait_until(
        lambda: reading("with") and reading("without"), timeout=60, what="both HPAs reading their metric"
    )
    yield c.log
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_a_stopped_prometheus_brings_the_configured_replicas_and_recovery_ends_it_within_a_period(
    cluster: Cluster, prometheus: PrometheusProcess, controller: Path
) -> None:
    assert (replicas(cluster, "with"), replicas(cluster, "without")) == (2, 2)
    prometheus.stop()
    try:
        wait_until(lambda: replicas(cluster, "with") == 4, timeout=60, what="the fallback's 4 replicas")
        c = conditions(cluster, "with")
        assert c["FallbackActive"] == ("True", "Static")
        assert c["ScalingActive"][0] == "False"  # the metric did fail, and the status says so
        # without a fallback: upstream's behaviour, the count held and nothing else said
        without = conditions(cluster, "without")
        assert without["ScalingActive"] == ("False", "FailedGetExternalMetric")
        assert "FallbackActive" not in without
        assert replicas(cluster, "without") == 2
        time.sleep(3 * SYNC)
        assert replicas(cluster, "with") == 4  # held while the outage lasts
    finally:
        prometheus.start()
    wait_until(
        lambda: served(cluster, "fb_queue_depth", "with") == ["20"],
        timeout=60,
        what="the metric served again",
    )
    back = time.monotonic()
    wait_until(
        lambda: "FallbackActive" not in conditions(cluster, "with"), timeout=30, what="the fallback to end"
    )
    assert time.monotonic() - back <= SYNC + 2.0  # one period, and the time to read the HPA
    wait_until(lambda: replicas(cluster, "with") == 2, timeout=30, what="the metric's 2 replicas again")
    assert conditions(cluster, "with")["ScalingActive"] == ("True", "ValidMetricFound")


def test_an_absent_series_is_zero_only_for_a_rule_that_says_so(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    wait_until(
        lambda: served(cluster, "fb_absent_zero", "a") == ["5"], timeout=60, what="both rules discovered"
    )
    assert served(cluster, "fb_absent_zero", "missing") == ["0"]
    assert served(cluster, "fb_absent_error", "missing") == []
