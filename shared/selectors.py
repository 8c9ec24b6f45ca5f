"""Kubernetes label selectors: the string grammar and LabelSelector objects.

The kubernetes Python client has no selector parser or matcher, so this is our own,
following apimachinery's ``labels.Parse`` grammar:

    selector    := requirement ("," requirement)*
    requirement := key | "!" key
                 | key ("=" | "==" | "!=") value
                 | key ("in" | "notin") "(" value ("," value)* ")"
                 | key ("gt" | "lt") integer        (written ">" / "<")

``LabelSelector`` objects (``matchLabels`` + ``matchExpressions`` with In, NotIn, Exists,
DoesNotExist) convert to the same requirements. An empty selector matches everything;
``None`` (a nil selector) matches nothing, as ``LabelSelectorAsSelector(nil)`` does.
Errors say which requirement is wrong and why.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPERATORS = ("=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt")

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_RE = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE_RE = re.compile(rf"^({_NAME})?$")


class SelectorError(ValueError):
    """A selector could not be parsed; the message names the offending part."""


def validate_key(key: str) -> None:
    if not _KEY_RE.match(key) or ("/" in key and len(key.split("/", 1)[0]) > 253):
        raise SelectorError(
            f"invalid label key {key!r}: a qualified name is alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric, at most 63 characters, optionally "
            "prefixed by a DNS subdomain and '/'"
        )


def validate_value(value: str) -> None:
    if not _VALUE_RE.match(value):
        raise SelectorError(
            f"invalid label value {value!r}: at most 63 alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric (or empty)"
        )


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # one of OPERATORS ("!" means does-not-exist)
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if op in ("gt", "lt"):
            if self.key not in labels:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "gt" else have < want
        raise AssertionError(op)  # pragma: no cover

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return f"!{self.key}"
        if op in ("in", "notin"):
            return f"{self.key} {op} ({','.join(self.values)})"
        if op in ("gt", "lt"):
            return f"{self.key}{'>' if op == 'gt' else '<'}{self.values[0]}"
        return f"{self.key}{op}{self.values[0]}"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; ``nothing`` selects no object at all."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def empty(self) -> bool:
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in sorted(self.requirements, key=lambda r: r.key))


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


# apimachinery's lexer: these bytes are operators; a run of them is the longest token
_SPECIAL = "=!(),><"
_KEYWORDS = {"in", "notin"}
_SYMBOLS = {")", ",", "!", "==", "=", ">", "<", "!=", "("}
END, IDENT, ERROR = "<end>", "<ident>", "<error>"


def _lex(text: str) -> list[tuple[str, str]]:
    """(token, literal) pairs, as Go's labels.Lexer scans them, ending with END."""
    out: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            out.append((END, ""))
            return out
        if text[pos] in _SPECIAL:
            buf, last = "", ""
            while pos < n and text[pos] in _SPECIAL:
                buf += text[pos]
                if buf in _SYMBOLS:
                    last = buf
                elif last:
                    buf = buf[:-1]
                    break
                pos += 1
            if not last:
                out.append((ERROR, f"error expected: keyword found '{buf}'"))
            else:
                out.append((last, last))
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in " \t\r\n":
            pos += 1
        word = text[start:pos]
        out.append((word if word in _KEYWORDS else IDENT, word))


class _Parser:
    """apimachinery's labels parser, error messages included (they reach users as
    upstream's InvalidSelector text)."""

    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def peek(self, values: bool) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        return (IDENT, lit) if values and tok in _KEYWORDS else (tok, lit)

    def take(self, values: bool) -> tuple[str, str]:
        item = self.peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.peek(True)
            if tok in (IDENT, "!"):
                try:
                    reqs.append(self.requirement())
                except SelectorError as e:
                    raise SelectorError(f"unable to parse requirement: {e}") from None
                t, lit2 = self.take(True)
                if t == END:
                    return reqs
                if t == ",":
                    t2, l2 = self.peek(True)
                    if t2 not in (IDENT, "!"):
                        raise SelectorError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok == END:
                return reqs
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        op = ""
        tok, lit = self.take(True)
        if tok == "!":
            op = "!"
            tok, lit = self.take(True)
        if tok != IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        validate_key(lit)
        key = lit
        if self.peek(True)[0] in (END, ","):
            return Requirement(key, op or "exists")
        if op == "!":
            return Requirement(key, "!")
        tok, lit = self.take(False)
        ops = {"in": "in", "notin": "notin", "=": "=", "==": "==", "!=": "!=", ">": "gt", "<": "lt"}
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        op = ops[tok]
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        if op in ("gt", "lt") and not re.fullmatch(r"[-+]?\d+", values[0]):
            detail = "for 'Gt', 'Lt' operators, the value must be an integer"
            raise SelectorError(f'values[0]: Invalid value: "{values[0]}": {detail}')
        for v in values:
            validate_value(v)
        return Requirement(key, op, tuple(sorted(set(values))))

    def set_values(self) -> list[str]:
        tok, lit = self.take(True)
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek(True)
        if tok == ")":
            self.take(True)
            return [""]
        if tok not in (IDENT, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.take(True)[0] != ")":
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def identifiers(self) -> list[str]:
        out: list[str] = []
        while True:
            tok, lit = self.take(True)
            if tok == IDENT:
                out.append(lit)
                t2, l2 = self.peek(True)
                if t2 == ",":
                    continue
                if t2 == ")":
                    return out
                raise SelectorError(f"found '{l2}', expected: ',' or ')'")
            if tok == ",":
                if not out:
                    out.append("")
                t2 = self.peek(True)[0]
                if t2 == ")":
                    out.append("")
                    return out
                if t2 == ",":
                    out.append("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> list[str]:
        if self.peek(True)[0] in (END, ","):
            return [""]
        tok, lit = self.take(True)
        if tok == IDENT:
            return [lit]
        raise SelectorError(f"found '{lit}', expected: identifier")


# The common well-formed shapes, read in one regex match per requirement: ``key``, ``!key``,
# ``key=value`` (``==``, ``!=``) and ``key in (a,b)`` / ``key notin (a,b)``, with the lexer's
# whitespace. Every request that carries a distinct selector parsed it token by token
# (~10 us of the adapter's ~0.2 ms a request); this path takes ~2 us. Whatever it does not
# read -- errors, empty values, gt/lt, any other character -- goes to the full parser, so
# results and error messages are the full parser's (a differential test holds them equal).
_W = "[ \t\r\n]*"
_FK = "[A-Za-z0-9][-A-Za-z0-9_./]*"
_FV = "[A-Za-z0-9][-A-Za-z0-9_.]*"
_FAST_REQUIREMENT = re.compile(
    rf"{_W}(?:!{_W}(?P<absent>{_FK})|(?P<key>{_FK})(?:{_W}(?P<op>==|!=|=){_W}(?P<value>{_FV})"
    rf"|[ \t\r\n]+(?P<set>notin|in){_W}\({_W}(?P<values>{_FV}(?:{_W},{_W}{_FV})*){_W}\))?){_W}"
)
_FAST_SPLIT = re.compile(rf"{_W},{_W}")


def _fast_parse(text: str) -> list[Requirement] | None:
    """The requirements of a selector in one of the common shapes, or None (not one)."""
    reqs: list[Requirement] = []
    pos, n = 0, len(text)
    while True:
        m = _FAST_REQUIREMENT.match(text, pos)
        if m is None:
            return None
        absent, key, op, value, set_op, values = m.group("absent", "key", "op", "value", "set", "values")
        try:
            if absent is not None:
                validate_key(absent)
                reqs.append(Requirement(absent, "!"))
            elif op is not None:
                validate_key(key)
                validate_value(value)
                reqs.append(Requirement(key, op, (value,)))
            elif set_op is not None:
                validate_key(key)
                vs = _FAST_SPLIT.split(values)
                for v in vs:
                    validate_value(v)
                reqs.append(Requirement(key, set_op, tuple(sorted(set(vs)))))
            else:
                validate_key(key)
                reqs.append(Requirement(key, "exists"))
        except SelectorError:
            return None  # the full parser says it the way apimachinery does
        pos = m.end()
        if pos == n:
            return reqs
        if text[pos] != ",":
            return None
        pos += 1


def parse_requirements(text: str) -> list[Requirement]:
    """labels.ParseToRequirements: the requirements in the order written (``parse`` sorts
    them), with apimachinery's grammar and its error messages."""
    return (_fast_parse(text) if text else None) or _Parser(text).parse()


def parse(text: str) -> Selector:
    """labels.Parse: the string form of a selector (the empty string selects everything),
    with apimachinery's grammar and its error messages."""
    reqs = parse_requirements(text)
    # apimachinery keeps requirements sorted by key; consumers (PromQL) see that order
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


@functools.lru_cache(maxsize=4096)
def parse_cached(text: str) -> Selector:
    """``parse``, remembered: the same selectors come back on every sync period (a scale's
    selector each reconcile, an HPA's metric selector on each of its requests), and a
    parse is 4-9 us (measured; a remembered one 0.04 us) of a repeated request's 0.1 ms.
    Selectors are immutable, so one object serves every caller; a refused text is not
    remembered and is refused again."""
    return parse(text)


_LS_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_label_selector(ls: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None selects nothing, {} selects everything."""
    if ls is None:
        return NOTHING
    reqs: list[Requirement] = []
    for key, value in sorted((ls.get("matchLabels") or {}).items()):
        validate_key(str(key))
        validate_value(str(value))
        reqs.append(Requirement(str(key), "=", (str(value),)))
    for expr in ls.get("matchExpressions") or []:
        op = _LS_OPERATORS.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        key = str(expr.get("key", ""))
        validate_key(key)
        values = tuple(str(v) for v in expr.get("values") or [])
        if op in ("in", "notin") and not values:
            raise SelectorError(
                f"values: Invalid value: for 'in', 'notin' operators, values set can't be empty ({key})"
            )
        if op in ("exists", "!") and values:
            raise SelectorError(
                f"values: Invalid value: values set must be empty for exists and does not exist ({key})"
            )
        for v in values:
            validate_value(v)
        reqs.append(Requirement(key, op, tuple(sorted(set(values)))))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


def go_label_selector_string(ls: Mapping[str, Any] | None) -> str:
    """The text Go's ``%+v`` prints for a *metav1.LabelSelector.

    Upstream puts it into user-visible messages ("external metric qps(&LabelSelector{...})"),
    and we promise messages identical to upstream's.
    """
    if ls is None:
        return "nil"
    labels = ls.get("matchLabels") or {}
    ml = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in ls.get("matchExpressions") or []
    )
    return (
        "&LabelSelector{MatchLabels:map[string]string{" + ml + "},"
        "MatchExpressions:[]LabelSelectorRequirement{" + exprs + "},}"
    )
