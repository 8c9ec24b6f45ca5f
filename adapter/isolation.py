"""Confine a namespaced rule's PromQL to its own namespace's series, whatever the team wrote.

Why by parsing, not by a proxy in front of Prometheus: the adapter already holds the
rendered query, so rewriting it costs one parse and one print (microseconds, cached by the
query) instead of a second HTTP hop and a process to deploy beside every backend; and it
works the same for Prometheus, Thanos and any other backend a rule names.

How it stays safe: the query is parsed, and every vector selector -- at any depth, inside
range vectors, subqueries, functions and aggregations -- is printed again by us with
``namespace="<ns>"`` added (never removing what the team wrote: a matcher of its own on
``namespace`` can only narrow the result further). The printed query is then parsed again
and checked: every selector must carry that exact matcher, or the query is refused. What is
sent to Prometheus is that checked text, so what the team wrote never reaches Prometheus
unchecked. Two forms are refused outright, because their series are not all named by
selectors: ``info()`` (it reads ``target_info`` on its own) and ``or`` between matchers
inside one selector's braces (write two selectors joined by ``or`` instead).

Numbers, vector(), absent() and label_replace() read no series of another namespace: a
query may still make up values, but never read them from someone else.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import timedelta
from functools import lru_cache

import promql_parser as pp

NAMESPACE_LABEL = "namespace"
_IDENT = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_OPS = (
    (pp.MatchOp.Equal, "="),
    (pp.MatchOp.NotEqual, "!="),
    (pp.MatchOp.Re, "=~"),
    (pp.MatchOp.NotRe, "!~"),
)  # the enum is not hashable
OR_IN_BRACES = (
    "`or` between matchers inside one selector's braces is not allowed in a namespaced rule "
    "(write two selectors joined by `or`)"
)
# functions whose result reads series no selector names
_IMPLICIT_READS = {"info"}


class IsolationError(ValueError):
    """A namespaced rule's query that cannot be confined to its namespace (the message says why)."""


def _quote(s: str) -> str:
    """A PromQL string literal (Go's escapes, which JSON's are a subset of)."""
    return json.dumps(s)


def _label(name: str) -> str:
    return name if _IDENT.fullmatch(name) else _quote(name)


def _op(op: pp.MatchOp) -> str:
    for known, text in _OPS:
        if op == known:
            return text
    raise IsolationError(f"a matcher operator this adapter does not know: {op}")


def _duration(d: timedelta) -> str:
    ms = round(d / timedelta(milliseconds=1))
    return f"-{-ms}ms" if ms < 0 else f"{ms}ms"


def _at(at: pp.AtModifier) -> str:
    if at.type == pp.AtModifierType.Start:
        return "start()"
    if at.type == pp.AtModifierType.End:
        return "end()"
    if at.at is None:
        raise IsolationError("an @ modifier without a time")
    return f"{at.at.timestamp():.3f}"


def _selector_text(vs: pp.VectorSelector, namespace: str, label: str, window: timedelta | None = None) -> str:
    """The selector (with ``window``: the range vector) printed by us, confined."""
    if vs.matchers.or_matchers:  # refused by _shape before any rewrite
        raise IsolationError("`or` between matchers inside one selector's braces")
    parts = [f"__name__={_quote(vs.name)}"] if vs.name is not None else []
    parts += [f"{_label(m.name)}{_op(m.op)}{_quote(m.value)}" for m in vs.matchers.matchers]
    parts.append(f"{_label(label)}={_quote(namespace)}")
    text = "{" + ",".join(parts) + "}"
    if window is not None:
        text += f"[{_duration(window)}]"
    if vs.offset is not None and vs.offset != timedelta(0):
        text += f" offset {_duration(vs.offset)}"
    if vs.at is not None:
        text += f" @ {_at(vs.at)}"
    return text


def _parse(query: str) -> pp.Expr:
    try:
        return pp.parse(query)
    except (ValueError, RuntimeError) as e:
        raise IsolationError(f"not valid PromQL: {e}") from None


def _selectors(expr: pp.Expr) -> list[pp.VectorSelector]:
    """Every vector selector of ``expr`` (a range vector's too), refusing implicit reads."""
    found: list[pp.VectorSelector] = []

    def visit(node: pp.Expr) -> None:
        if isinstance(node, pp.VectorSelector):
            if node.matchers.or_matchers:
                raise IsolationError(OR_IN_BRACES)
            found.append(node)
        elif isinstance(node, pp.MatrixSelector):
            found.append(node.vector_selector)
        elif isinstance(node, pp.Call) and node.func.name in _IMPLICIT_READS:
            raise IsolationError(f"{node.func.name}() reads series no selector names; not allowed here")

    pp.walk(expr, pre_visit=visit)
    return found


def _is_confined(vs: pp.VectorSelector, namespace: str, label: str) -> bool:
    return not vs.matchers.or_matchers and any(
        m.name == label and m.op == pp.MatchOp.Equal and m.value == namespace for m in vs.matchers.matchers
    )


@lru_cache(maxsize=8192)
def confine(query: str, namespace: str, label: str = NAMESPACE_LABEL) -> str:
    """``query`` with every selector confined to ``label="namespace"``, checked; or IsolationError."""
    if not namespace:
        raise IsolationError("no namespace to confine the query to")
    expr = _parse(query)
    wrote = _shape(expr, namespace, label)  # also refuses implicit reads and `or` in braces

    # The parser's printer writes label values and strings without escaping them, so what
    # carries text is printed by us: each selector and string literal is swapped for a
    # placeholder name no query can contain, the tree is printed, then each placeholder is
    # replaced by our own text.
    token = f"promhpa_{secrets.token_hex(8)}_"
    texts: dict[str, str] = {}

    def hold(text: str) -> str:
        key = f"{token}{len(texts)}"
        texts[key] = text
        return key

    def rewrite(node: pp.Expr) -> pp.Expr | None:
        if isinstance(node, pp.MatrixSelector):
            vs = node.vector_selector
            return pp.parse(hold(_selector_text(vs, namespace, label, node.range)))
        if isinstance(node, pp.VectorSelector):
            if node.name is not None and node.name.startswith(token):
                return None
            return pp.parse(hold(_selector_text(node, namespace, label)))
        if isinstance(node, pp.StringLiteral) and not node.val.startswith(token):
            return pp.parse(_quote(hold(_quote(node.val))))
        return None

    try:
        skeleton = str(pp.transform(expr, pre_visit=rewrite))
    except (ValueError, RuntimeError) as e:
        raise IsolationError(f"cannot rewrite {query!r}: {e}") from None
    placed = re.compile(r'"?\b(' + re.escape(token) + r'\d+)\b(?:\{\})?"?')
    out = placed.sub(lambda m: texts[m.group(1)], skeleton)
    printed = _parse(out)
    _check(printed, namespace, label)
    if _shape(printed, namespace, label) != wrote:
        # the printer lost something (e.g. a subquery's default step): never send a query
        # that means something other than what the team wrote
        raise IsolationError(
            f"{query!r} cannot be confined without changing its meaning (printed as {out!r}); "
            "spell it out, e.g. give a subquery its step ([5m:1m])"
        )
    return out


Shape = list[tuple[object, ...]]


def _ms(d: timedelta | None) -> int | None:
    return None if d is None else round(d / timedelta(milliseconds=1))


def _shape(expr: pp.Expr, namespace: str, label: str) -> Shape:
    """The tree in pre-order, as what it means (the confining matcher left out), so a
    rewritten query can be compared with the one the team wrote."""
    out: Shape = []

    def visit(n: pp.Expr) -> None:
        t = type(n).__name__
        if isinstance(n, pp.VectorSelector):
            if n.matchers.or_matchers:
                raise IsolationError(OR_IN_BRACES)
            ms = {(m.name, _op(m.op), m.value) for m in n.matchers.matchers}
            if n.name is not None:
                ms.add(("__name__", "=", n.name))
            ms.discard((label, "=", namespace))
            at = None if n.at is None else _at(n.at)
            out.append((t, frozenset(ms), _ms(n.offset) or 0, at))
        elif isinstance(n, pp.MatrixSelector):
            out.append((t, _ms(n.range)))
        elif isinstance(n, pp.SubqueryExpr):
            at = None if n.at is None else _at(n.at)
            out.append((t, _ms(n.range), _ms(n.step), _ms(n.offset) or 0, at))
        elif isinstance(n, pp.Call):
            if n.func.name in _IMPLICIT_READS:
                raise IsolationError(f"{n.func.name}() reads series no selector names; not allowed here")
            out.append((t, n.func.name, len(n.args)))
        elif isinstance(n, pp.AggregateExpr):
            mod = n.modifier
            out.append((t, str(n.op), None if mod is None else (str(mod.type), tuple(mod.labels))))
        elif isinstance(n, pp.BinaryExpr):
            b = n.modifier
            how = (
                None
                if b is None
                else (str(b.card), str(b.matching), b.return_bool, tuple(b.group_labels or ()))
            )
            out.append((t, str(n.op), how))
        elif isinstance(n, pp.NumberLiteral | pp.StringLiteral):
            out.append((t, repr(n.val)))
        else:
            out.append((t,))

    pp.walk(expr, pre_visit=visit)
    return out


def check(query: str, namespace: str, label: str = NAMESPACE_LABEL) -> None:
    """Refuse ``query`` unless every selector in it carries ``label="namespace"``."""
    _check(_parse(query), namespace, label)


def _check(expr: pp.Expr, namespace: str, label: str) -> None:
    selectors = _selectors(expr)
    loose = [str(vs) for vs in selectors if not _is_confined(vs, namespace, label)]
    if loose:
        raise IsolationError(f"selectors not confined to {label}={namespace!r}: {', '.join(loose)}")


def confine_selector(selector: str, namespace: str, label: str = NAMESPACE_LABEL) -> str:
    """A series selector (a rule's ``seriesQuery``, sent as ``match[]``) confined likewise."""
    expr = _parse(selector)
    if not isinstance(expr, pp.VectorSelector):
        raise IsolationError(f"{selector!r} is not a series selector")
    return confine(selector, namespace, label)
