"""Providers over a recorded Prometheus (pure, fast): the PromQL a request becomes, and
what reaches the wire, without a Prometheus process."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from adapter.api.requests import parse_path
from adapter.serving.providers import Providers
from adapter.serving.registry import Registry
from promclient.promapi import PrometheusTimeout
from promclient.promapi import Sample
from rules.config import parse_config
from tests.adapter.recorded import RecordedPrometheus

CONFIG = """
externalRules:
- seriesQuery: '{__name__="queue_depth"}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
"""
SERIES = [{"__name__": "queue_depth", "namespace": "shop", "queue": "orders"}]
PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_depth"


def providers(prom: RecordedPrometheus) -> Providers:
    config = parse_config(CONFIG, "test.yaml")
    prom.series_answers['{__name__="queue_depth"}'] = SERIES
    registry = Registry(config, prom, timedelta(minutes=10))
    asyncio.run(registry.relist())
    return Providers(config, registry, prom)


def test_external_request_becomes_one_query_confined_to_its_namespace() -> None:
    prom = RecordedPrometheus()
    p = providers(prom)
    asyncio.run(p.external(parse_path(PATH, {"labelSelector": "queue=orders"})))
    assert prom.asked == ['sum(queue_depth{queue="orders",namespace="shop"}) by (queue)']


def test_non_finite_values_never_reach_the_wire() -> None:
    query = 'sum(queue_depth{namespace="shop"}) by (queue)'
    prom = RecordedPrometheus(
        answers={
            query: [
                Sample({"queue": "a"}, float("nan"), 1.0),
                Sample({"queue": "b"}, float("inf"), 1.0),
                Sample({"queue": "c"}, 2.5, 1.0),
            ]
        }
    )
    body = asyncio.run(providers(prom).external(parse_path(PATH, {})))
    assert [(i["metricLabels"], i["value"]) for i in body["items"]] == [({"queue": "c"}, "2500m")]


def test_a_timed_out_query_propagates_as_a_timeout() -> None:
    prom = RecordedPrometheus()
    p = providers(prom)
    prom.failure = PrometheusTimeout("no answer within 10s")
    with pytest.raises(PrometheusTimeout):
        asyncio.run(p.external(parse_path(PATH, {})))


def zero_providers(prom: RecordedPrometheus) -> Providers:
    config = parse_config(CONFIG.rstrip() + "\n  absent: zero\n", "test.yaml")
    prom.series_answers['{__name__="queue_depth"}'] = SERIES
    registry = Registry(config, prom, timedelta(minutes=10))
    asyncio.run(registry.relist())
    return Providers(config, registry, prom)


def test_an_absent_series_is_no_value_by_default() -> None:
    body = asyncio.run(
        providers(RecordedPrometheus()).external(parse_path(PATH, {"labelSelector": "queue=x"}))
    )
    assert body["items"] == []


def test_an_absent_series_is_zero_for_a_rule_that_says_so() -> None:
    body = asyncio.run(
        zero_providers(RecordedPrometheus()).external(parse_path(PATH, {"labelSelector": "queue=x"}))
    )
    assert [(i["metricName"], i["value"]) for i in body["items"]] == [("queue_depth", "0")]


def test_absent_zero_never_replaces_a_real_value() -> None:
    query = 'sum(queue_depth{queue="orders",namespace="shop"}) by (queue)'
    prom = RecordedPrometheus(answers={query: [Sample({"queue": "orders"}, 7.0, 1.0)]})
    body = asyncio.run(zero_providers(prom).external(parse_path(PATH, {"labelSelector": "queue=orders"})))
    assert [i["value"] for i in body["items"]] == ["7"]


def test_absent_takes_error_or_zero_and_names_the_key() -> None:
    from rules.config import ConfigError

    with pytest.raises(ConfigError, match=r"externalRules\[0\]\.absent: must be 'error'"):
        parse_config(CONFIG.rstrip() + "\n  absent: 'null'\n", "test.yaml")
