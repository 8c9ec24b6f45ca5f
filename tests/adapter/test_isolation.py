"""A namespaced rule's PromQL confined to its namespace (pure: parsing and printing only;
the adversarial matrix against a real Prometheus is in test_isolation_live.py)."""

from __future__ import annotations

from datetime import timedelta

import promql_parser as pp
import pytest

from adapter.metricrules.isolation import IsolationError
from adapter.metricrules.isolation import _shape
from adapter.metricrules.isolation import check
from adapter.metricrules.isolation import confine
from adapter.metricrules.isolation import confine_selector

NS = "team-a"


def selectors(query: str) -> list[pp.VectorSelector]:
    found: list[pp.VectorSelector] = []

    def visit(n: pp.Expr) -> None:
        if isinstance(n, pp.VectorSelector):
            found.append(n)
        elif isinstance(n, pp.MatrixSelector):
            found.append(n.vector_selector)

    pp.walk(pp.parse(query), pre_visit=visit)
    return found


def confined(vs: pp.VectorSelector) -> bool:
    return any(
        m.name == "namespace" and m.value == NS and str(m.op) == "MatchOp.Equal" for m in vs.matchers.matchers
    )


ESCAPES = [
    "sum(foo)",
    "foo or on() vector(1)",
    '{__name__=~".+"}',
    'label_replace(bar, "namespace", "team-a", "namespace", ".*")',
    "max_over_time(foo[10m:1m])",
    "rate(foo[5m] offset 1h)",
    "foo @ 1700000000",
    "foo @ start()",
    "absent(nothing_here)",
    "sum without (namespace) (foo)",
    'count by (namespace) ({__name__=~"foo|bar"})',
    "foo / on(pod) group_left(node) bar",
    "foo unless bar",
    'foo{namespace="team-b"}',
    'foo{namespace=~".*"}',
    'foo{namespace!="team-a"}',
    "topk(1, foo) + bottomk(1, bar)",
    "scalar(sum(foo)) * vector(2)",
    "-(foo)",
    "histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))",
    "quantile_over_time(0.5, foo[1h] offset -5m)",
    'count_values("v", foo)',
    "sum(rate(x[1m] @ end() offset 30s)) > bool 3",
]


@pytest.mark.parametrize("query", ESCAPES)
def test_every_selector_of_an_adversarial_query_is_confined(query: str) -> None:
    out = confine(query, NS)
    found = selectors(out)
    assert found, out
    assert all(confined(vs) for vs in found), out


def test_a_query_that_reads_no_series_is_left_as_it_is() -> None:
    assert confine("vector(1) + 2", NS) == "vector(1) + 2"


def test_the_teams_own_matchers_are_kept_so_they_can_only_narrow() -> None:
    out = confine('foo{namespace="team-b",pod=~"web-.*"}', NS)
    (vs,) = selectors(out)
    have = {(m.name, m.value) for m in vs.matchers.matchers}
    assert {("namespace", "team-b"), ("namespace", NS), ("pod", "web-.*"), ("__name__", "foo")} == have


def test_offsets_ranges_and_at_survive_the_rewrite() -> None:
    call = pp.parse(confine("rate(foo[5m] offset 1m @ 1700000000)", NS))
    assert isinstance(call, pp.Call)
    (matrix,) = call.args
    assert matrix.range == timedelta(minutes=5)
    assert matrix.vector_selector.offset == timedelta(minutes=1)
    assert matrix.vector_selector.at.at.timestamp() == 1700000000


def test_strings_with_quotes_and_backslashes_keep_their_value() -> None:
    out = confine(r'label_replace(foo{pod=~"web-\\d+"}, "dst", "a\"b", "src", "(.*)\\.svc")', NS)
    call = pp.parse(out)
    assert [a.val for a in call.args[1:]] == ["dst", 'a"b', "src", r"(.*)\.svc"]
    (vs,) = selectors(out)
    assert [m.value for m in vs.matchers.matchers if m.name == "pod"] == [r"web-\d+"]


def test_a_label_value_that_looks_like_promql_stays_a_value() -> None:
    out = confine(r'foo{a="x\"} or bar{\""}', NS)
    (vs,) = selectors(out)
    assert [m.value for m in vs.matchers.matchers if m.name == "a"] == ['x"} or bar{"']


def test_or_between_matchers_in_braces_is_refused_with_the_way_out() -> None:
    with pytest.raises(IsolationError, match="two selectors joined by `or`"):
        confine('foo{namespace="team-b" or job=~".+"}', NS)


def test_info_is_refused_because_it_reads_series_no_selector_names() -> None:
    with pytest.raises(IsolationError, match="info"):
        confine("info(foo)", NS)


def test_a_subquery_without_a_step_keeps_prometheus_default_step() -> None:
    sub = pp.parse(confine("rate(foo[5m:])", NS)).args[0]
    assert isinstance(sub, pp.SubqueryExpr)
    assert (sub.range, sub.step) == (timedelta(minutes=5), None)


PRECEDENCE = [
    "a - b - c",
    "a - (b - c)",
    "a ^ b ^ c",
    "-a ^ b",
    "(-a) ^ b",
    "a + b * c",
    "(a + b) * c",
    "a or b and c",
    "a > bool 2 * 3",
    "a - -1",
    "1 - Inf",
    "a / on(pod) group_left(node) b * c",
    "sum by (x) (a) / ignoring(y) sum without (z) (b)",
    "topk by (q) (3, a)",
    'count_values by (q) ("v", a)',
    "max_over_time((a - b)[10m:1m] offset 5m)",
]


@pytest.mark.parametrize("query", PRECEDENCE)
def test_what_a_query_means_survives_the_rewrite(query: str) -> None:
    """The printed query parses to the same tree as the team's, parentheses and our matcher
    aside: precedence cannot regroup what is printed."""
    out = confine(query, NS)
    assert _shape(pp.parse(out), NS, "namespace") == _shape(pp.parse(query), NS, "namespace"), out


def test_invalid_promql_is_refused_with_the_parsers_message() -> None:
    with pytest.raises(IsolationError, match="not valid PromQL"):
        confine("sum(foo", NS)


def test_no_namespace_is_refused() -> None:
    with pytest.raises(IsolationError, match="no namespace"):
        confine("foo", "")


def test_check_refuses_a_query_with_an_unconfined_selector() -> None:
    check(confine("foo + bar", NS), NS)
    with pytest.raises(IsolationError, match="bar"):
        check('foo{namespace="team-a"} + bar', NS)


def test_a_series_selector_is_confined_and_anything_else_refused() -> None:
    assert confine_selector('{__name__=~"^http_.*"}', NS) == '{__name__=~"^http_.*",namespace="team-a"}'
    with pytest.raises(IsolationError, match="not a series selector"):
        confine_selector("sum(foo)", NS)
