"""The offline PromQL parser agrees with Prometheus' own: every query of a corpus (the
default rules rendered, rule files' shapes, and broken ones) is accepted or refused by both
alike, against a real Prometheus."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from adapter.serving.default_rules import DEFAULT_RULES
from localcluster.tools import prometheus_major
from rules.config import parse_config
from rules.rule_lint import _example_query
from rules.rule_lint import parse_promql
from tests.support import PrometheusProcess

CORPUS = [
    'sum(rate(http_requests_total{namespace="a",pod=~"x|y"}[2m])) by (pod)',
    "sum(rate(x[2m]) by (pod)",
    "queue_depth{",
    '{__name__=~".+"}',
    '{"utf8.metric", namespace="a"}',
    "histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))",
    "max_over_time(x[5m:30s])",
    "x offset 5m",
    "x @ 1700000000",
    'label_replace(x, "a", "$1", "b", "(.*)")',
    "sum without (namespace) (x) or on() vector(1)",
    "absent(x)",
    "rate(x[2m] offset -1m)",
    "x{a='b'}",
    "x{a=b}",
    "sum(x) by pod",
    "1 +",
    "x[5m]",
    "rate(x)",
    "sum(x) by (pod) > bool 3",
    'count_values("v", x)',
    "topk(3, x)",
    "x and ignoring(a) y",
    "quantile_over_time(0.5, x[1h])",
    'sum by (pod) (irate(container_cpu_usage_seconds_total{container!=""}[1m]))',
]


def prometheus_accepts(prometheus: PrometheusProcess, query: str) -> bool:
    url = f"{prometheus.url}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return bool(json.load(r)["status"] == "success")
    except urllib.error.HTTPError as e:
        body = json.load(e)
        assert body["errorType"] == "bad_data", body
        return False


def test_the_offline_parser_agrees_with_prometheus(prometheus: PrometheusProcess) -> None:
    rules = parse_config(DEFAULT_RULES, "<defaults>")
    rendered = [q for r in rules.rules + rules.external_rules if (q := _example_query(r)) is not None]
    assert len(rendered) >= 4
    disagree = []
    corpus = CORPUS
    if prometheus_major() == "2":  # quoted (UTF-8) metric names are Prometheus 3's syntax
        corpus = [q for q in CORPUS if '"utf8.metric"' not in q]
    for query in corpus + rendered:
        ours = parse_promql(query) is None
        theirs = prometheus_accepts(prometheus, query)
        if ours != theirs:
            disagree.append(f"{query!r}: offline {'accepts' if ours else 'refuses'}, Prometheus the other")
    assert disagree == []
