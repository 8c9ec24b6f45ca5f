"""Confine a namespaced rule's PromQL to its own namespace's series, whatever the team wrote.

Why by parsing, not by a proxy in front of Prometheus: the adapter already holds the
rendered query. Rewriting it costs one parse and one print (microseconds, cached by the
query) instead of a second HTTP hop and a process to deploy beside every backend. It also
works the same for Prometheus, Thanos and any other backend a rule names.

How it stays safe:

1. The text is measured before any parse (``adapter.metricrules.query_size``): the parser is never
   given a query deep enough to crash it.
2. The query is parsed once and printed by us in one walk. Every vector selector, at any
   depth (inside range vectors, subqueries, functions and aggregations), gets
   ``namespace="<ns>"`` added. Nothing the team wrote is removed: a matcher of its own on
   ``namespace`` can only narrow the result further. Every operand of an operator is
   parenthesized, so precedence cannot regroup what we print.
3. The printed text is parsed once more and checked. Every selector must carry that exact
   matcher, and the tree must mean what the team's meant (the same nodes, operators,
   ranges, steps, offsets and matchers, our matcher aside). Otherwise the query is refused.
   What reaches Prometheus is that checked text: our printer is trusted with nothing.

Every walk is iterative and each visits a node once, so confining is linear in the size of
the tree. ``promql_parser.walk`` is not used: in 0.12.0 it calls back with a copy of each
subtree, which made confining a 300-term sum take 40 s.

Two forms are refused outright, because their series are not all named by selectors:
``info()`` (it reads ``target_info`` on its own), and ``or`` between matchers inside one
selector's braces (write two selectors joined by ``or`` instead). Binary ``fill``
modifiers, which are experimental, are refused too. Numbers, vector(), absent() and
label_replace() read no series of another namespace: a query may still make up values, but
never read them from someone else's series.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import promql_parser as pp

from .confined_print import (
    IMPLICIT_READS,
    OR_IN_BRACES,
    IsolationError,
    at_time,
    match_op,
    millis,
    print_confined,
)
from .query_size import CEILING, QueryTooLarge, check_size

NAMESPACE_LABEL = "namespace"
__all__ = ["NAMESPACE_LABEL", "OR_IN_BRACES", "IsolationError"]  # where the adapter looks for them


@dataclass(frozen=True)
class Reach:
    """What a query reads, for the cost limits (``adapter.metricrules.query_cost``): the longest single
    window, how far before the evaluation time its oldest sample can lie (windows and offsets
    along each path, summed), the smallest explicit subquery step, and the earliest time an
    ``@`` modifier pins (None: none does)."""

    longest_range_ms: int = 0
    lookback_ms: int = 0
    smallest_step_ms: int | None = None
    earliest_at: float | None = None


@dataclass(frozen=True)
class Confined:
    query: str  # what is sent: checked, every selector confined
    reach: Reach


def _measured_parse(query: str) -> pp.Expr:
    """Parse text a user wrote, after measuring it against ``CEILING``: the parser is never
    handed a query deep enough to crash it (``adapter.metricrules.query_size``)."""
    try:
        check_size(query, CEILING)
    except QueryTooLarge as e:
        raise QueryTooLargeError(str(e)) from None
    return _parse(query)


def _parse(query: str) -> pp.Expr:
    """Parse a query that was measured, or printed by us from a measured one."""
    try:
        return pp.parse(query)
    except (ValueError, RuntimeError) as e:  # RecursionError is a RuntimeError
        raise IsolationError(f"not valid PromQL: {e}") from None


def _children(n: pp.Expr) -> list[pp.Expr]:
    if isinstance(n, pp.BinaryExpr):
        return [n.lhs, n.rhs]
    if isinstance(n, pp.Call):
        return list(n.args)
    if isinstance(n, pp.AggregateExpr):
        return [n.expr] if n.param is None else [n.param, n.expr]
    if isinstance(n, pp.ParenExpr | pp.UnaryExpr | pp.SubqueryExpr):
        return [n.expr]
    if isinstance(n, pp.MatrixSelector):
        return [n.vector_selector]
    return []


def _walk(expr: pp.Expr) -> Iterator[pp.Expr]:
    """Every node in pre-order, once each, with no recursion."""
    stack = [expr]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(_children(n)))


Shape = list[tuple[object, ...]]


def _shape(expr: pp.Expr, namespace: str, label: str) -> Shape:
    """The tree in pre-order, as what it means (the confining matcher and parentheses left
    out), so the printed query can be compared with the one the team wrote."""
    out: Shape = []
    for n in _walk(expr):
        t = type(n).__name__
        if isinstance(n, pp.ParenExpr):
            continue
        if isinstance(n, pp.VectorSelector):
            if n.matchers.or_matchers:
                raise IsolationError(OR_IN_BRACES)
            ms = {(m.name, match_op(m.op), m.value) for m in n.matchers.matchers}
            if n.name is not None:
                ms.add(("__name__", "=", n.name))
            ms.discard((label, "=", namespace))
            at = None if n.at is None else at_time(n.at)
            out.append((t, frozenset(ms), millis(n.offset) or 0, at))
        elif isinstance(n, pp.MatrixSelector):
            out.append((t, millis(n.range)))
        elif isinstance(n, pp.SubqueryExpr):
            at = None if n.at is None else at_time(n.at)
            out.append((t, millis(n.range), millis(n.step), millis(n.offset) or 0, at))
        elif isinstance(n, pp.Call):
            out.append((t, n.func.name, len(n.args)))
        elif isinstance(n, pp.AggregateExpr):
            mod = n.modifier
            out.append((t, str(n.op), None if mod is None else (str(mod.type), tuple(mod.labels))))
        elif isinstance(n, pp.BinaryExpr):
            b = n.modifier
            how = (
                None
                if b is None
                else (
                    str(b.card),
                    None if b.matching is None else (str(b.matching.type), tuple(b.matching.labels)),
                    b.return_bool,
                    tuple(b.group_labels or ()),
                )
            )
            out.append((t, str(n.op), how))
        elif isinstance(n, pp.NumberLiteral):
            out.append((t, "NaN" if math.isnan(n.val) else n.val))
        elif isinstance(n, pp.StringLiteral):
            out.append((t, n.val))
        else:
            out.append((t,))
    return out


def reach_of(expr: pp.Expr) -> Reach:
    """How far back ``expr`` reads: one walk carrying each path's windows and offsets."""
    longest = lookback = 0
    smallest: int | None = None
    earliest: float | None = None
    stack: list[tuple[pp.Expr, int]] = [(expr, 0)]
    while stack:
        n, above = stack.pop()  # ``above``: the enclosing subqueries' ranges and offsets
        at = getattr(n, "at", None) if isinstance(n, pp.VectorSelector | pp.SubqueryExpr) else None
        if at is not None and at.type == pp.AtModifierType.At and at.at is not None:
            t = at.at.timestamp()
            earliest = t if earliest is None else min(earliest, t)
        if isinstance(n, pp.VectorSelector):
            lookback = max(lookback, above + max(0, millis(n.offset) or 0))
        elif isinstance(n, pp.MatrixSelector):
            window = millis(n.range) or 0
            longest = max(longest, window)
            vs = n.vector_selector
            lookback = max(lookback, above + window + max(0, millis(vs.offset) or 0))
            continue  # its selector is counted here, with the window
        elif isinstance(n, pp.SubqueryExpr):
            window = millis(n.range) or 0
            longest = max(longest, window)
            step = millis(n.step)
            if step is not None:
                smallest = step if smallest is None else min(smallest, step)
            stack.append((n.expr, above + window + max(0, millis(n.offset) or 0)))
            continue
        stack.extend((c, above) for c in _children(n))
    return Reach(longest, lookback, smallest, earliest)


def confine(query: str, namespace: str, label: str = NAMESPACE_LABEL) -> str:
    """``query`` with every selector confined to ``label="namespace"``, checked; or IsolationError."""
    return confine_query(query, namespace, label).query


@lru_cache(maxsize=8192)
def confine_query(query: str, namespace: str, label: str = NAMESPACE_LABEL) -> Confined:
    """``query`` confined and checked, with what it reads (``Reach``); IsolationError (or its
    subclass for a query past what the parser survives) says why not."""
    if not namespace:
        raise IsolationError("no namespace to confine the query to")
    expr = _measured_parse(query)
    wrote = _shape(expr, namespace, label)  # also refuses `or` in braces
    out = print_confined(expr, namespace, label)  # also refuses implicit reads and fill
    printed = _parse(out)
    _check(printed, namespace, label)
    if _shape(printed, namespace, label) != wrote:
        raise IsolationError(
            f"{query!r} cannot be confined without changing its meaning (printed as {out!r}); "
            "please report this as a bug"
        )
    return Confined(out, reach_of(expr))


class QueryTooLargeError(IsolationError):
    """A query over a size limit (``adapter.metricrules.query_size``), refused before any parse."""


def check(query: str, namespace: str, label: str = NAMESPACE_LABEL) -> None:
    """Refuse ``query`` unless every selector in it carries ``label="namespace"``."""
    _check(_measured_parse(query), namespace, label)


def _is_confined(vs: pp.VectorSelector, namespace: str, label: str) -> bool:
    return not vs.matchers.or_matchers and any(
        m.name == label and m.op == pp.MatchOp.Equal and m.value == namespace for m in vs.matchers.matchers
    )


def _check(expr: pp.Expr, namespace: str, label: str) -> None:
    loose = []
    for n in _walk(expr):  # a range vector's selector is a node of its own
        if isinstance(n, pp.VectorSelector):
            if n.matchers.or_matchers:
                raise IsolationError(OR_IN_BRACES)
            if not _is_confined(n, namespace, label):
                loose.append(str(n))
        elif isinstance(n, pp.Call) and n.func.name in IMPLICIT_READS:
            raise IsolationError(f"{n.func.name}() reads series no selector names; not allowed here")
    if loose:
        raise IsolationError(f"selectors not confined to {label}={namespace!r}: {', '.join(loose)}")


def confine_selector(selector: str, namespace: str, label: str = NAMESPACE_LABEL) -> str:
    """A series selector (a rule's ``seriesQuery``, sent as ``match[]``) confined likewise."""
    expr = _measured_parse(selector)
    if not isinstance(expr, pp.VectorSelector):
        raise IsolationError(f"{selector!r} is not a series selector")
    return confine(selector, namespace, label)
