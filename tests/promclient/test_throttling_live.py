"""A backend that throttles (429, or 503 with Retry-After), as managed Prometheus services do
when a tenant goes over its query rate: a real Prometheus behind a proxy that answers the
throttling status for the next queries it is told to. The client waits as asked, within the
deadline, sends nothing while it waits, and says which backend asked and for how long."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.promhpa import external_rules
from promclient.promapi import PrometheusThrottled
from promclient.prometheus import Prometheus
from promclient.prometheus import PrometheusSettings
from shared.httpclient import Connections
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import Recorder
from tests.support import probe_scraped
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

METRIC = "throttle_probe"


@pytest.fixture
def proxy(prometheus: PrometheusProcess, exporter: Exporter) -> Iterator[Recorder]:
    probe_scraped(prometheus, exporter, METRIC, "thr", 3)
    with Recorder(prometheus.url) as r:
        yield r


def _query(p: Prometheus, *promql: str) -> list[object]:
    """Each query at once over the loop's connections: its values, or the error it raised."""

    async def go() -> list[object]:
        async with Connections() as connections:
            p.attach(connections)
            try:
                return list(await asyncio.gather(*(p.query(q) for q in promql), return_exceptions=True))
            finally:
                p.attach(None)

    return asyncio.run(go())


def test_a_short_retry_after_is_waited_out_within_the_deadline(proxy: Recorder) -> None:
    counted: list[int] = []
    p = Prometheus(
        PrometheusSettings(proxy.url, timeout=10), cache_ttl=0, on_throttled=lambda: counted.append(1)
    )
    proxy.throttle, proxy.retry_after = 1, "2"
    try:
        [answer] = _query(p, METRIC)
    finally:
        p.close()
    assert not isinstance(answer, Exception), answer
    assert [s.value for s in answer] == [3.0]  # type: ignore[attr-defined]
    first, second = proxy.arrivals
    assert second - first >= 2.0  # asked again only after the wait
    assert counted == [1]


def test_queries_made_during_the_wait_are_not_sent_until_it_ends(proxy: Recorder) -> None:
    p = Prometheus(PrometheusSettings(proxy.url, timeout=10), cache_ttl=0)
    proxy.throttle, proxy.retry_after = 1, "2"

    async def go() -> list[object]:
        async with Connections() as connections:
            p.attach(connections)
            try:
                first = asyncio.ensure_future(p.query(METRIC))
                while not proxy.arrivals:  # sent
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.3)  # and its 429 is in
                later = [p.query(f"{METRIC} + {i}") for i in range(3)]
                return list(await asyncio.gather(first, *later, return_exceptions=True))
            finally:
                p.attach(None)

    try:
        answers = asyncio.run(go())
    finally:
        p.close()
    assert not any(isinstance(a, Exception) for a in answers), answers
    first = proxy.arrivals[0]
    assert len(proxy.arrivals) == 5  # the throttled one, its retry and the three held
    assert all(t - first >= 2.0 for t in proxy.arrivals[1:]), proxy.arrivals


def test_a_wait_past_the_deadline_fails_at_once_naming_the_backend(proxy: Recorder) -> None:
    p = Prometheus(PrometheusSettings(proxy.url, timeout=3, name="mimir"), cache_ttl=0)
    proxy.throttle, proxy.retry_after = 1, "30"
    try:
        started = time.monotonic()
        [first] = _query(p, METRIC)
        took = time.monotonic() - started
        [second] = _query(p, f"{METRIC} + 1")  # inside the hold: not sent
    finally:
        p.close()
    assert isinstance(first, PrometheusThrottled)
    assert took < 1.5  # no waiting for a deadline it cannot meet
    assert f'backend "mimir" at {proxy.url} is throttling queries (HTTP 429, Retry-After 30s)' in str(first)
    assert isinstance(second, PrometheusThrottled)
    assert len(proxy.arrivals) == 1


def test_a_503_with_retry_after_is_throttling_and_without_it_an_outage(proxy: Recorder) -> None:
    p = Prometheus(PrometheusSettings(proxy.url, timeout=3, retries=0), cache_ttl=0)
    try:
        proxy.throttle, proxy.throttle_status, proxy.retry_after = 1, 503, None
        [outage] = _query(p, METRIC)
        proxy.throttle, proxy.retry_after = 1, "30"
        [throttled] = _query(p, f"{METRIC} + 1")
    finally:
        p.close()
    assert not isinstance(outage, PrometheusThrottled)
    assert "did not answer the query: HTTP 503" in str(outage)
    assert isinstance(throttled, PrometheusThrottled)
    assert "HTTP 503, Retry-After 30s" in str(throttled)


def test_without_retry_after_a_429_backs_off_a_second_first(proxy: Recorder) -> None:
    p = Prometheus(PrometheusSettings(proxy.url, timeout=10), cache_ttl=0)
    proxy.throttle, proxy.retry_after = 1, None
    try:
        [answer] = _query(p, METRIC)
    finally:
        p.close()
    assert not isinstance(answer, Exception), answer
    first, second = proxy.arrivals
    assert 1.0 <= second - first < 2.0


def test_the_adapter_answers_503_and_shows_the_throttling_on_readyz_and_in_a_metric(
    proxy: Recorder, tmp_path: Path
) -> None:
    adapter = start_adapter(tmp_path, proxy.url, external_rules(METRIC, by=""), "--query-cache-ttl=0s")
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/thr/{METRIC}"
    try:
        wait_until(lambda: adapter.get(path)[0] == 200, timeout=30, what="the adapter serving the probe")
        proxy.throttle, proxy.retry_after = 1000, "30"
        code, body = adapter.get(path)
        wait_until(lambda: "throttling" in adapter.text("/readyz"), timeout=5, what="/readyz to say so")
        ready = adapter.text("/readyz")
        metrics = adapter.text("/metrics")
    finally:
        stop_adapter(adapter)
    assert code == 503, body
    assert "is throttling queries (HTTP 429, Retry-After 30s)" in str(body["message"])
    assert ready.startswith("ok")  # still ready: a throttling backend is not a down one
    assert "[!]backend default throttling (HTTP 429, Retry-After 30s; 1 such answers)" in ready
    assert 'promhpa_adapter_prometheus_throttled_total{backend="default"} 1.0' in metrics
