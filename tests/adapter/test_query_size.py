"""A team query's size, measured before any parse (pure)."""

from __future__ import annotations

import promql_parser as pp
import pytest

from adapter.metricrules.query_size import CEILING
from adapter.metricrules.query_size import QueryTooLarge
from adapter.metricrules.query_size import SizeLimits
from adapter.metricrules.query_size import check_size
from adapter.metricrules.query_size import measure


def tree_depth(query: str) -> int:
    """The parsed tree's depth, walked without recursion."""

    def children(n: object) -> list[object]:
        out = []
        for name in ("lhs", "rhs", "expr", "param", "vector_selector"):
            child = getattr(n, name, None)
            if isinstance(child, pp.Expr):
                out.append(child)
        out += [a for a in getattr(n, "args", []) or [] if isinstance(a, pp.Expr)]
        return out

    deepest, stack = 0, [(pp.parse(query), 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack += [(c, d + 1) for c in children(n)]
    return deepest


SHAPES = [
    "x",
    'sum(rate(http_requests_total{job=~"a|b"}[5m])) by (pod)',
    "a + b - c * d / e % f ^ g",
    "((((a))))",
    "-(-(-a))",
    "a and b or c unless d",
    "max_over_time(rate(x[1m])[10m:1m])",
    "min_over_time(max_over_time(rate(x[1m])[10m:1m])[30m:5m])",
    'label_replace(sum by (a) (x{a="("}), "b", "$1", "a", "(.*)")',
    "topk(3, a) > bool on(x) group_left(y) b",
]


@pytest.mark.parametrize("query", SHAPES)
def test_the_measured_depth_is_never_below_the_parsed_trees(query: str) -> None:
    assert measure(query).depth >= tree_depth(query)


def test_brackets_and_operators_inside_strings_and_comments_do_not_count() -> None:
    plain = measure('x{a="b"}')
    assert measure('x{a="((((+-*/"}').depth == plain.depth
    assert measure("x # ((((((\n").depth == measure("x").depth


def test_matchers_inside_braces_are_not_operators() -> None:
    assert measure('x{a="1",b!="2",c=~"3",d!~"4"}').depth == measure("x{}").depth


def test_a_long_chain_is_deep_and_its_parenthesized_groups_are_not() -> None:
    chain = "+".join(["x"] * 100)
    grouped = "+".join("(" + "+".join(["x"] * 10) + ")" for _ in range(10))
    assert measure(chain).depth >= 100
    assert measure(grouped).depth < 30


def test_a_query_over_the_length_limit_names_the_flag_and_the_way_out() -> None:
    with pytest.raises(QueryTooLarge, match=r"--team-rule-max-query-length.*recording rule"):
        check_size("x" * 5000, SizeLimits())


def test_a_query_over_the_depth_limit_names_the_flag_and_the_way_out() -> None:
    with pytest.raises(QueryTooLarge, match=r"--team-rule-max-query-depth.*parentheses"):
        check_size("+".join(["x"] * 100), SizeLimits())


def test_a_query_over_the_token_limit_names_the_flag() -> None:
    wide = "sum by (" + ",".join(f"l{i}" for i in range(600)) + ") (x)"
    with pytest.raises(QueryTooLarge, match="--team-rule-max-query-tokens"):
        check_size(wide, SizeLimits())


def test_the_chain_that_crashes_the_parser_is_refused_by_the_ceiling() -> None:
    """promql-parser 0.12.0 ends the process on this one (docs/security.md)."""
    with pytest.raises(QueryTooLarge, match="depth"):
        check_size("+".join(["x"] * 5000), CEILING)


def test_an_unterminated_string_is_measured_to_the_end() -> None:
    assert measure('x{a="((((').length == 9
