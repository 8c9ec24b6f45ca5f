"""The per-namespace cost limits on MetricRules, against a real Prometheus and a real
kube-apiserver: each test fails if its limit is taken away.

One adapter runs with tight limits, in front of a real Prometheus through a TCP proxy that
counts the requests waiting for an answer at once, and can hold answers (a slow
Prometheus). How many queries reached Prometheus is read from Prometheus' own counter
(``prometheus_http_requests_total``), not from the adapter."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.netproxy import Proxy
from tests.support import AdapterProcess
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import install_metric_rule_crds
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "limits-a"
RATE, BURST, CONCURRENT, SERIES = 2, 6, 2, 3


def rule(name: str, query: str, ns: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "promhpa.io/v1alpha1",
        "kind": "MetricRule",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"metric": name.replace("-", "_"), "query": query},
    }


def path(metric: str, ns: str = NS) -> str:
    return f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}"


def condition(cluster: Cluster, name: str, kind: str, ns: str = NS) -> dict[str, Any]:
    out = cluster.kubectl("-n", ns, "get", "metricrule", name, "-o", "json", check=False)
    if out.returncode != 0:
        return {}
    conditions = json.loads(out.stdout).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), {})


def queries_sent(prometheus: PrometheusProcess) -> int:
    """Instant queries Prometheus has answered, by its own count."""
    with urllib.request.urlopen(f"{prometheus.url}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("prometheus_http_requests_total{") and 'handler="/api/v1/query"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def get(a: AdapterProcess, p: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    try:
        with urllib.request.urlopen(a.url + p, timeout=15, context=a.ctx) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read()), dict(e.headers)


@pytest.fixture(scope="module")
def proxy(prometheus: PrometheusProcess) -> Iterator[Proxy]:
    p = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    yield p
    p.close()


@pytest.fixture(scope="module")
def adapter(live: Live, proxy: Proxy) -> Iterator[AdapterProcess]:
    install_metric_rule_crds(live.cluster)
    live.cluster.kubectl("create", "namespace", NS, check=False)
    samples = {f'wide_series{{namespace="{NS}",i="{i}"}}': i for i in range(5)}
    samples |= {f'slow_q{i}{{namespace="{NS}"}}': i for i in range(6)}
    samples |= {f'rated{{namespace="{NS}"}}': 1, f'old_enough{{namespace="{NS}"}}': 1}
    live.publish(samples, "wide_series", count=5)
    yield live.local_adapter(
        external_rules("wide_series", by=""), "--team-rules", "--query-cache-ttl=0s",
        f"--team-rule-max-series={SERIES}", f"--team-rule-max-concurrent-queries={CONCURRENT}",
        f"--team-rule-queries-per-second={RATE}", f"--team-rule-query-burst={BURST}",
        "--team-rule-query-timeout=8s", prometheus_url=f"http://127.0.0.1:{proxy.port}",
    )  # fmt: skip
    live.cluster.kubectl("-n", NS, "delete", "metricrules", "--all", check=False)


def served(a: AdapterProcess, metric: str) -> bool:
    return a.get(path(metric))[0] != 404


def test_an_answer_over_the_series_limit_is_refused_and_said_on_the_rule(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([rule("wide", "wide_series"), rule("narrow", "sum(wide_series)")])
    wait_until(lambda: served(adapter, "wide") and served(adapter, "narrow"), timeout=10, what="served")
    time.sleep(1.1)  # a fresh second of the namespace's rate
    code, body, _ = get(adapter, path("wide"))
    assert (code, body["reason"]) == (422, "Invalid"), body
    assert f"5 series, over the limit of {SERIES}" in body["message"]
    assert "--team-rule-max-series" in body["message"]
    assert get(adapter, path("narrow"))[0] == 200  # aggregated, it is within the limit
    wait_until(
        lambda: condition(cluster, "wide", "WithinLimits").get("reason") == "LimitExceeded",
        timeout=5,
        what="the limit on the rule's status",
    )
    assert "--team-rule-max-series" in condition(cluster, "wide", "WithinLimits")["message"]


def test_no_more_than_the_limit_of_a_namespaces_queries_reach_prometheus_at_once(
    cluster: Cluster, adapter: AdapterProcess, proxy: Proxy
) -> None:
    """Six different rules asked at once while Prometheus takes 1 s per answer: at most
    ``CONCURRENT`` are sent at a time, and every one is answered within the time limit."""
    cluster.apply([rule(f"slow-{i}", f"sum(slow_q{i})") for i in range(6)])
    wait_until(lambda: all(served(adapter, f"slow_{i}") for i in range(6)), timeout=10, what="served")
    time.sleep(BURST / RATE)  # the namespace's bucket full again
    codes: list[int] = []
    proxy.most_pending = 0
    proxy.delay = 1.0
    try:
        threads = [
            threading.Thread(target=lambda i=i: codes.append(adapter.get(path(f"slow_{i}"))[0]))
            for i in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        proxy.delay = 0.0
    assert codes == [200] * 6
    assert proxy.most_pending == CONCURRENT, (
        f"{proxy.most_pending} queries were waiting at Prometheus at once"
    )


def test_a_namespace_past_its_rate_is_told_to_retry_and_prometheus_sees_no_more(
    cluster: Cluster, adapter: AdapterProcess, prometheus: PrometheusProcess
) -> None:
    cluster.apply([rule("rated", "sum(rated)")])
    wait_until(lambda: served(adapter, "rated"), timeout=10, what="served")
    time.sleep(BURST / RATE)
    before, t0 = queries_sent(prometheus), time.monotonic()
    answers = [get(adapter, path("rated")) for _ in range(30)]
    elapsed = time.monotonic() - t0
    sent = queries_sent(prometheus) - before
    allowed = BURST + RATE * elapsed + 1
    assert sent <= allowed, (
        f"Prometheus answered {sent} queries in {elapsed:.1f}s; the limit allows {allowed:.0f}"
    )
    refused = [(code, body, headers) for code, body, headers in answers if code != 200]
    assert refused, "every request was sent"
    code, body, headers = refused[0]
    assert (code, body["reason"]) == (429, "TooManyRequests")
    assert "--team-rule-queries-per-second" in body["message"]
    assert int(headers["Retry-After"]) >= 1
    assert body["details"]["retryAfterSeconds"] == int(headers["Retry-After"])


@pytest.mark.parametrize(
    ("query", "flag"),
    [
        ("max_over_time(old_enough[2h])", "--team-rule-max-range"),
        ("old_enough offset 7h", "--team-rule-max-lookback"),
        ("max_over_time(old_enough[10m:1s])", "--team-rule-min-subquery-step"),
    ],
)
def test_a_query_over_a_cost_limit_is_invalid_and_never_sent(
    cluster: Cluster, adapter: AdapterProcess, prometheus: PrometheusProcess, query: str, flag: str
) -> None:
    name = "costly-" + flag.rsplit("-", 1)[1]
    before = queries_sent(prometheus)
    cluster.apply([rule(name, query)])
    wait_until(
        lambda: condition(cluster, name, "Accepted").get("reason") == "Invalid", timeout=5, what="Invalid"
    )
    assert flag in condition(cluster, name, "Accepted")["message"]
    code, body = adapter.get(path(name.replace("-", "_")))
    assert code == 404, body
    assert queries_sent(prometheus) == before
