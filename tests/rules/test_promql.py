from __future__ import annotations

import pytest

from rules.config import parse_config
from rules.promql import QueryError
from rules.promql import quote
from rules.promql import regex_literal
from rules.promql import requirement_matcher
from rules.queries import ObjectQuery
from rules.queries import custom_query
from rules.queries import external_query
from shared.selectors import parse

CONFIG = parse_config("""
rules:
- seriesQuery: '{__name__="http_requests_total"}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="queue_depth"}'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
""")
PODS = CONFIG.rules[0].resources.overrides or None


def q(names: tuple[str, ...], ns: str = "default", selector: str | None = None) -> str:
    from rules.config import GroupResource

    req = ObjectQuery(GroupResource("", "pods"), ns, names, parse(selector) if selector else None)
    return custom_query(CONFIG.rules[0], "http_requests_total", req)[0]


def test_one_object_uses_an_equality_matcher() -> None:
    assert q(("web-1",)) == ('sum(rate(http_requests_total{namespace="default",pod="web-1"}[2m])) by (pod)')


def test_several_objects_use_an_escaped_alternation() -> None:
    assert q(("web-1", "web.2")) == (
        'sum(rate(http_requests_total{namespace="default",pod=~"web-1|web\\\\.2"}[2m])) by (pod)'
    )


def test_metric_label_selector_comes_first() -> None:
    assert q(("a",), selector="verb in (GET,PUT),code!=500") == (
        'sum(rate(http_requests_total{code!="500",verb=~"GET|PUT",namespace="default",pod="a"}[2m])) by (pod)'
    )


@pytest.mark.parametrize(
    ("selector", "matcher"),
    [
        ("a=b", 'a="b"'),
        ("a==b", 'a="b"'),
        ("a!=b", 'a!="b"'),
        ("a in (x,y)", 'a=~"x|y"'),
        ("a notin (x,y)", 'a!~"x|y"'),
        ("a", 'a!=""'),
        ("!a", 'a=""'),
    ],
)
def test_selector_operators_become_matchers(selector: str, matcher: str) -> None:
    assert str(requirement_matcher(parse(selector).requirements[0])) == matcher


def test_gt_and_lt_are_rejected() -> None:
    with pytest.raises(QueryError, match="cannot be expressed in PromQL"):
        requirement_matcher(parse("a>1").requirements[0])


@pytest.mark.parametrize("hostile", ['x"}or vector(1)#', "a\\", "a|b", ".*", "a\nb", "(?i)x", "\x00"])
def test_hostile_values_cannot_change_the_query(hostile: str) -> None:
    one = q((hostile,))
    # the value stays inside one string literal: exactly the quotes we put there, all escaped inside
    literal = quote(hostile)
    assert f"pod={literal}" in one
    several = q((hostile, "ok"))
    assert f"pod=~{quote(regex_literal(hostile) + '|ok')}" in several
    assert several.count("}[2m]") == 1


def test_external_query_adds_the_namespace_when_namespaced() -> None:
    rule = CONFIG.external_rules[0]
    assert external_query(rule, "queue_depth", "jobs", parse("queue=emails")) == (
        'sum(queue_depth{queue="emails",namespace="jobs"}) by ()'
    )


@pytest.mark.parametrize(
    "milli", [0, 1, -1, 999, 1000, 1500, -1500, 20000, 2_000_000, 6667, 10**21, -(10**12), 123456789]
)
def test_fast_milli_formatting_equals_the_exact_formatter(milli: int) -> None:
    from adapter.api.wire import format_milli
    from shared.quantity import Quantity

    assert format_milli(milli) == str(Quantity.from_milli(milli))


UTF8 = parse_config(
    """
rules:
- seriesQuery: '{"http.server.duration", "k8s.namespace.name"!="", "k8s.pod.name"!=""}'
  resources:
    overrides: {k8s.namespace.name: {resource: namespace}, k8s.pod.name: {resource: pod}}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{"queue.depth"}'
  resources: {namespaced: false}
  metricsQuery: 'max(<<.Series>>) by (queue)'
"""
)


def test_utf8_names_are_quoted_as_prometheus_3_reads_them() -> None:
    from rules.naming import PODS

    q, label = custom_query(
        UTF8.rules[0], "http.server.duration", ObjectQuery(PODS, "shop", ("web-0", "web-1"))
    )
    assert label == "k8s.pod.name"
    assert q == (
        'sum(rate({"http.server.duration","k8s.namespace.name"="shop","k8s.pod.name"=~"web-0|web-1"}[2m]))'
        ' by ("k8s.pod.name")'
    )


def test_a_utf8_series_alone_becomes_a_quoted_selector() -> None:
    assert (
        external_query(UTF8.external_rules[0], "queue.depth", None, None) == 'max({"queue.depth"}) by (queue)'
    )


def test_legacy_names_stay_bare_for_prometheus_2() -> None:
    assert q(("web-0",)) == 'sum(rate(http_requests_total{namespace="default",pod="web-0"}[2m])) by (pod)'
