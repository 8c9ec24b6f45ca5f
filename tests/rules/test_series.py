"""How a discovery answer becomes the served metrics (``rules.series.index_series``)."""

from __future__ import annotations

from rules.config import GroupResource
from rules.config import parse_config
from rules.series import index_series

CUSTOM = """
rules:
- seriesQuery: '{__name__=~"^app_.*_total$"}'
  seriesFilters: [{isNot: "^app_debug_.*"}]
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__=~"^queue_.*"}'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""
POD, NS = GroupResource("", "pods"), GroupResource("", "namespaces")


def series(name: str, **labels: str) -> dict[str, str]:
    return {"__name__": name, **labels}


def test_many_series_of_one_name_serve_one_metric_per_resource() -> None:
    rule = parse_config(CUSTOM).rules[0]
    answer = [series("app_requests_total", namespace="a", pod=f"p-{i}") for i in range(1000)]
    custom, external = index_series(rule, answer)
    assert custom == [
        (NS, "app_requests_per_second", "app_requests_total"),
        (POD, "app_requests_per_second", "app_requests_total"),
    ]
    assert external == []


def test_a_label_present_on_only_some_series_of_a_name_still_maps_once() -> None:
    rule = parse_config(CUSTOM).rules[0]
    answer = [
        series("app_requests_total", namespace="a"),
        series("app_requests_total", namespace="a", pod="p-0"),
        series("app_requests_total", namespace="b", pod="p-1"),
    ]
    custom, _ = index_series(rule, answer)
    assert custom == [
        (NS, "app_requests_per_second", "app_requests_total"),
        (POD, "app_requests_per_second", "app_requests_total"),
    ]


def test_filtered_and_unnamed_series_serve_nothing() -> None:
    rule = parse_config(CUSTOM).rules[0]
    answer = [
        series("app_debug_total", namespace="a", pod="p"),  # seriesFilters drop it
        series("app_requests", namespace="a", pod="p"),  # name.matches does not match
        {"namespace": "a", "pod": "p"},  # no __name__
        series("app_errors_total", namespace="a", pod="p"),
    ]
    custom, _ = index_series(rule, answer)
    assert {m for _, m, _ in custom} == {"app_errors_per_second"}


def test_labels_that_name_no_resource_are_not_served() -> None:
    rule = parse_config(CUSTOM).rules[0]
    custom, _ = index_series(rule, [series("app_requests_total", pod="p", zone="z", le="0.5")])
    assert custom == [(POD, "app_requests_per_second", "app_requests_total")]


def test_external_rules_list_each_series_name_once() -> None:
    rule = parse_config(CUSTOM).external_rules[0]
    answer = [series("queue_depth", queue=f"q{i}") for i in range(50)] + [series("queue_age", queue="q0")]
    custom, external = index_series(rule, answer)
    assert custom == []
    assert external == [("queue_depth", "queue_depth"), ("queue_age", "queue_age")]
