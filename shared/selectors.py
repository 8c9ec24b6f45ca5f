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


_TOKEN = re.compile(r"\s*(==|!=|=|!|\(|\)|,|>|<|[^\s=!(),<>]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            break
        if m.group(1):
            out.append(m.group(1))
        pos = m.end()
        if text[pos:].strip() == "":
            break
    return out


def parse(text: str) -> Selector:
    """Parse the string form of a selector; the empty string selects everything."""
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def expect(cond: bool, what: str) -> None:
        if not cond:
            near = " ".join(toks[max(0, i - 1) : i + 2]) or "end of input"
            raise SelectorError(f"unable to parse requirement in {text!r}: expected {what} near {near!r}")

    while i < len(toks):
        if toks[i] == "!":
            i += 1
            expect(i < len(toks), "a label key after '!'")
            validate_key(toks[i])
            reqs.append(Requirement(toks[i], "!"))
            i += 1
        else:
            key = toks[i]
            expect(key not in ("=", "==", "!=", "(", ")", ",", ">", "<"), "a label key")
            validate_key(key)
            i += 1
            if i >= len(toks) or toks[i] == ",":
                reqs.append(Requirement(key, "exists"))
            elif toks[i] in ("=", "==", "!="):
                op = toks[i]
                i += 1
                value = ""
                if i < len(toks) and toks[i] not in (",", ")", "("):
                    value = toks[i]
                    i += 1
                validate_value(value)
                reqs.append(Requirement(key, op, (value,)))
            elif toks[i] in ("in", "notin"):
                op = toks[i]
                i += 1
                expect(i < len(toks) and toks[i] == "(", f"'(' after {op!r}")
                i += 1
                values: list[str] = []
                while True:
                    expect(i < len(toks), "a value or ')'")
                    if toks[i] == ")":
                        i += 1
                        break
                    if toks[i] == ",":
                        values.append("")
                        i += 1
                        continue
                    validate_value(toks[i])
                    values.append(toks[i])
                    i += 1
                    expect(i < len(toks) and toks[i] in (",", ")"), "',' or ')'")
                    if toks[i] == ",":
                        i += 1
                expect(bool(values), f"at least one value for {op!r}")
                reqs.append(Requirement(key, op, tuple(sorted(set(values)))))
            elif toks[i] in (">", "<"):
                op = "gt" if toks[i] == ">" else "lt"
                i += 1
                expect(i < len(toks) and re.fullmatch(r"-?\d+", toks[i]) is not None, "an integer")
                reqs.append(Requirement(key, op, (toks[i],)))
                i += 1
            else:
                raise SelectorError(
                    f"unable to parse requirement: found {toks[i]!r}, expected: in, notin, =, ==, !=, gt, lt"
                )
        if i < len(toks):
            expect(toks[i] == ",", "','")
            i += 1
            expect(i < len(toks), "a requirement after ','")
    # apimachinery keeps requirements sorted by key; consumers (PromQL) see that order
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


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
