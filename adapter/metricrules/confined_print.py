"""PromQL printed by us from a parsed tree, with every vector selector confined to one
namespace (``isolation`` checks what this prints by parsing it again).

Every operand of an operator is parenthesized, so precedence cannot regroup what is
printed; a form whose series no selector names (``info()``, ``or`` inside braces) or that
is experimental (binary ``fill``) is refused with ``IsolationError``.
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta

import promql_parser as pp

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
IMPLICIT_READS = {"info"}


class IsolationError(ValueError):
    """A namespaced rule's query that cannot be confined to its namespace (the message says why)."""


def _quote(s: str) -> str:
    """A PromQL string literal (Go's escapes, which JSON's are a subset of)."""
    return json.dumps(s)


def _label(name: str) -> str:
    return name if _IDENT.fullmatch(name) else _quote(name)


def match_op(op: pp.MatchOp) -> str:
    for known, text in _OPS:
        if op == known:
            return text
    raise IsolationError(f"a matcher operator this adapter does not know: {op}")


def millis(d: timedelta | None) -> int | None:
    return None if d is None else round(d / timedelta(milliseconds=1))


def _duration(d: timedelta) -> str:
    ms = millis(d) or 0
    return f"-{-ms}ms" if ms < 0 else f"{ms}ms"


def at_time(at: pp.AtModifier) -> str:
    if at.type == pp.AtModifierType.Start:
        return "start()"
    if at.type == pp.AtModifierType.End:
        return "end()"
    if at.at is None:
        raise IsolationError("an @ modifier without a time")
    return f"{at.at.timestamp():.3f}"


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "(-Inf)"
    text = str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
    return f"({text})" if v < 0 else text


def _modifiers(offset: timedelta | None, at: pp.AtModifier | None) -> str:
    text = ""
    if offset is not None and offset != timedelta(0):
        text += f" offset {_duration(offset)}"
    if at is not None:
        text += f" @ {at_time(at)}"
    return text


def _labels(names: list[str]) -> str:
    return "(" + ", ".join(_label(n) for n in names) + ")"


def _selector_text(vs: pp.VectorSelector, namespace: str, label: str, window: timedelta | None = None) -> str:
    """The selector (with ``window``: the range vector) printed by us, confined."""
    if vs.matchers.or_matchers:
        raise IsolationError(OR_IN_BRACES)
    parts = [f"__name__={_quote(vs.name)}"] if vs.name is not None else []
    parts += [f"{_label(m.name)}{match_op(m.op)}{_quote(m.value)}" for m in vs.matchers.matchers]
    parts.append(f"{_label(label)}={_quote(namespace)}")
    text = "{" + ",".join(parts) + "}"
    if window is not None:
        text += f"[{_duration(window)}]"
    return text + _modifiers(vs.offset, vs.at)


def _binary_modifier(n: pp.BinaryExpr) -> str:
    m = n.modifier
    if m is None:
        return ""
    fill = m.fill_values
    if fill is not None and (fill.lhs is not None or fill.rhs is not None):
        raise IsolationError("fill modifiers are experimental and not allowed in a namespaced rule")
    text = " bool" if m.return_bool else ""
    if m.matching is not None:
        word = "on" if m.matching.type == pp.LabelModifierType.Include else "ignoring"
        text += f" {word} {_labels(list(m.matching.labels))}"
    if m.card == pp.VectorMatchCardinality.ManyToOne:
        text += f" group_left {_labels(list(m.group_labels or []))}"
    elif m.card == pp.VectorMatchCardinality.OneToMany:
        text += f" group_right {_labels(list(m.group_labels or []))}"
    return text


def _operand(n: pp.Expr, namespace: str, label: str) -> str:
    text = print_confined(n, namespace, label)
    return f"({text})" if isinstance(n, pp.BinaryExpr | pp.UnaryExpr) else text


def print_confined(n: pp.Expr, namespace: str, label: str) -> str:
    """``n`` as PromQL with every selector confined. Recursive, but the depth is bounded by
    the size check every caller makes first (``CEILING.max_depth`` at most)."""
    if isinstance(n, pp.VectorSelector):
        return _selector_text(n, namespace, label)
    if isinstance(n, pp.MatrixSelector):
        return _selector_text(n.vector_selector, namespace, label, n.range)
    if isinstance(n, pp.NumberLiteral):
        return _number(n.val)
    if isinstance(n, pp.StringLiteral):
        return _quote(n.val)
    if isinstance(n, pp.ParenExpr):
        return f"({print_confined(n.expr, namespace, label)})"
    if isinstance(n, pp.UnaryExpr):
        return f"-{_operand(n.expr, namespace, label)}"
    if isinstance(n, pp.BinaryExpr):
        lhs, rhs = _operand(n.lhs, namespace, label), _operand(n.rhs, namespace, label)
        return f"{lhs} {n.op}{_binary_modifier(n)} {rhs}"
    if isinstance(n, pp.Call):
        if n.func.name in IMPLICIT_READS:
            raise IsolationError(f"{n.func.name}() reads series no selector names; not allowed here")
        return f"{n.func.name}(" + ", ".join(print_confined(a, namespace, label) for a in n.args) + ")"
    if isinstance(n, pp.AggregateExpr):
        mod = n.modifier
        by = ""
        if mod is not None:
            word = "by" if mod.type == pp.AggModifierType.By else "without"
            by = f" {word} {_labels(list(mod.labels))}"
        args = ([print_confined(n.param, namespace, label)] if n.param is not None else []) + [
            print_confined(n.expr, namespace, label)
        ]
        return f"{n.op}{by}(" + ", ".join(args) + ")"
    if isinstance(n, pp.SubqueryExpr):
        if n.range is None:
            raise IsolationError("a subquery without a range")
        step = "" if n.step is None else _duration(n.step)
        inner = print_confined(n.expr, namespace, label)
        return f"({inner})[{_duration(n.range)}:{step}]" + _modifiers(n.offset, n.at)
    raise IsolationError(f"a PromQL expression this adapter does not know: {type(n).__name__}")
