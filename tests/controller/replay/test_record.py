"""What a replay reads from a real Prometheus: the pods' start-up from kube-state-metrics."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC
from datetime import datetime
from datetime import timedelta

from controller.replay.record import default_pod_regex
from controller.replay.record import pod_startup
from controller.replay.record import prometheus
from promclient.prometheus import Prometheus
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import wait_until

NS = "record"


def ksm(exporter: Exporter, pod: str, created: float, startup: float) -> None:
    exporter.set(f'kube_pod_created{{namespace="{NS}",pod="{pod}"}}', f"{created:.0f}")
    exporter.set(f'kube_pod_status_ready_time{{namespace="{NS}",pod="{pod}"}}', f"{created + startup:.0f}")


def drop(exporter: Exporter, pod: str) -> None:
    exporter.lines = {k: v for k, v in exporter.lines.items() if f'pod="{pod}"' not in k}


def test_pod_startup_counts_a_pod_that_lived_between_two_steps_of_a_long_range(
    exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    now = time.time()
    ksm(exporter, "shop-5d9c-aaaaa", now - 20, 3)
    ksm(exporter, "other-5d9c-ccccc", now - 20, 60)  # not the workload's
    wait_until(lambda: prometheus.query(f'kube_pod_created{{namespace="{NS}"}}') != [], what="scrape")
    # two scrapes of the short-lived pod, then it is gone
    twice = f'count_over_time(kube_pod_created{{namespace="{NS}",pod="shop-5d9c-aaaaa"}}[1m]) >= 2'
    wait_until(lambda: prometheus.query(twice) != [], timeout=10, what="two scrapes of the short-lived pod")
    drop(exporter, "shop-5d9c-aaaaa")
    ksm(exporter, "shop-5d9c-bbbbb", now - 10, 5)
    wait_until(
        lambda: (
            {s["metric"]["pod"] for s in prometheus.query(f'kube_pod_created{{namespace="{NS}"}}')}
            == {"shop-5d9c-bbbbb", "other-5d9c-ccccc"}
        ),
        what="the short-lived pod gone",
    )
    end = datetime.now(UTC)
    start = end - timedelta(minutes=10)  # a grid of 50 steps would be 12 s a step here

    seen = asyncio.run(pod_startup(prometheus_client(prometheus), NS, default_pod_regex("shop"), start, end))

    assert seen == (timedelta(seconds=5), 2)  # 3 s and 5 s: the upper median, over both pods


def test_pod_startup_is_none_without_kube_state_metrics(prometheus: PrometheusProcess) -> None:
    end = datetime.now(UTC)
    seen = asyncio.run(
        pod_startup(prometheus_client(prometheus), "nowhere", ".*", end - timedelta(minutes=5), end)
    )
    assert seen is None


def prometheus_client(p: PrometheusProcess) -> Prometheus:
    return prometheus(p.url, 5.0)
