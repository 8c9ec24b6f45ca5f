"""The adversarial matrix against a real Prometheus holding two namespaces' series.

team-a's series hold small values, team-b's values no query here writes (7,777,777 and up):
an answer that carries one read another namespace's series. Each query is confined to
team-a as a namespaced rule's would be; the same queries unconfined are the control that
shows the matrix can see a leak.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from typing import Any

import pytest

from adapter.metricrules.isolation import confine
from localcluster.prometheus import Exporter
from localcluster.prometheus import PrometheusProcess
from localcluster.tools import wait_until

OURS, THEIRS = "team-a", "team-b"
SECRET = 7_777_777.0  # team-b's smallest value

ADVERSARIAL = [
    "foo",
    "sum(foo)",
    "foo or on() vector(1)",
    "vector(1) or on() foo",
    '{__name__=~".+"}',
    '{__name__=~"secret_.*"}',
    "secret_b",
    'foo{namespace="team-b"}',
    'foo{namespace=~".*"}',
    'foo{namespace!="team-a"}',
    'label_replace(foo, "namespace", "team-a", "namespace", ".*")',
    'label_replace({__name__=~".+"}, "namespace", "team-a", "", "")',
    "max_over_time(foo[1m:1s])",
    "max_over_time(foo[1m])",
    "max_over_time(foo[1m] offset 2s)",
    "foo offset 2s",
    "foo @ end()",
    "foo @ start()",
    "absent(secret_b)",
    "absent_over_time(secret_b[1m])",
    "sum without (namespace) (foo)",
    'sum by (namespace) ({__name__=~"foo|secret_b"})',
    "count(foo) without (namespace)",
    "foo + ignoring(namespace) group_left foo",
    "foo * on() group_left secret_b",
    "foo unless secret_b",
    "foo and on() secret_b",
    'topk(10, {__name__=~".+"})',
    "max(foo) > bool 0",
    "scalar(sum(foo)) * vector(1)",
    'count_values("v", foo)',
    "quantile(0.5, foo)",
    "sort_desc(foo)",
    "timestamp(foo)",
    "-(-foo)",
    "(foo)",
]


@pytest.fixture(scope="module")
def two_namespaces(exporter: Exporter, prometheus: PrometheusProcess) -> PrometheusProcess:
    for i, pod in enumerate(("a0", "a1")):
        exporter.set(f'foo{{namespace="{OURS}",pod="{pod}"}}', i + 1)
    for i, pod in enumerate(("b0", "b1")):
        exporter.set(f'foo{{namespace="{THEIRS}",pod="{pod}"}}', SECRET + i)
    exporter.set(f'secret_b{{namespace="{THEIRS}"}}', SECRET + 10)
    wait_until(lambda: len(prometheus.query("foo")) == 4 and prometheus.query("secret_b"), what="scrape")
    return prometheus


def answer(prometheus: PrometheusProcess, promql: str) -> list[tuple[dict[str, str], float]]:
    url = f"{prometheus.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as r:
        data: dict[str, Any] = json.loads(r.read())["data"]
    if data["resultType"] == "scalar":
        return [({}, float(data["result"][1]))]
    return [(s["metric"], float(s["value"][1])) for s in data["result"]]


def leaked(samples: list[tuple[dict[str, str], float]]) -> list[tuple[dict[str, str], float]]:
    # team-b's values and sums of them (timestamps, ~1.8e9, are not theirs)
    return [(m, v) for m, v in samples if SECRET <= abs(v) < 1e9 or m.get("namespace") == THEIRS]


@pytest.mark.parametrize("query", ADVERSARIAL)
def test_no_confined_answer_carries_another_namespaces_value(
    two_namespaces: PrometheusProcess, query: str
) -> None:
    confined = confine(query, OURS)
    assert leaked(answer(two_namespaces, confined)) == [], confined


def test_the_matrix_sees_a_leak_when_queries_are_not_confined(two_namespaces: PrometheusProcess) -> None:
    leaking = [q for q in ADVERSARIAL if leaked(answer(two_namespaces, q))]
    assert len(leaking) >= len(ADVERSARIAL) // 2, leaking


def test_a_confined_query_still_answers_with_its_own_namespaces_series(
    two_namespaces: PrometheusProcess,
) -> None:
    got = answer(two_namespaces, confine("sum by (pod) (foo)", OURS))
    assert sorted((m["pod"], v) for m, v in got) == [("a0", 1.0), ("a1", 2.0)]
