"""Go's ``regexp`` semantics for every regular expression a rule holds.

prometheus-adapter compiles ``name.matches`` and ``seriesFilters`` with Go's ``regexp``
(RE2 syntax) and names metrics with ``Regexp.ExpandString``. Python's ``re`` is a
different dialect: ``[[:alpha:]]`` is a set of the characters ``[:alph``, ``\\p{L}`` is
refused, a lookahead is accepted, ``\\d`` and ``\\w`` match any Unicode digit or letter and
``$`` matches before a final newline. A rule file that works there must name the same
metrics here, so every pattern is compiled by RE2 (``google-re2``), which accepts exactly
Go's syntax and matches with its leftmost-first semantics.

RE2's Python binding costs about 5 us a search against ``re``'s 0.4 us, and discovery
searches every series name; so a pattern written only in the subset where the two
dialects provably agree (ASCII literals and classes, ``.``, groups, alternation,
quantifiers, ``^``, ``$`` as ``\\Z``, ``\\z``) is searched by ``re`` after RE2 has accepted
it. The regex differential test (tests/rules/test_goregexp.py) holds both paths equal to
Go's ``regexp`` over generated patterns and names.

``expand`` is Go's ``Regexp.Expand``: ``$1``, ``${1}``, ``$name``, ``${name}``, ``$$``; a
name is the longest run of letters, digits and ``_`` (so ``$1_per_second`` names the group
``1_per_second``, which does not exist, and expands to nothing), a number with a leading
zero is a name, and a malformed reference is literal text.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from dataclasses import dataclass, field
from typing import Protocol

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error is ours to report, with the rule's path and line


class GoRegexpError(ValueError):
    """A pattern Go's regexp refuses; str() is RE2's reason."""


class Match(Protocol):
    def group(self, index: int | str = 0) -> str | None: ...


@dataclass(frozen=True)
class GoRegexp:
    """A compiled pattern: ``search`` as Go's ``FindStringSubmatch``."""

    pattern: str
    groups: int
    groupindex: dict[str, int]
    _search: object = field(repr=False, compare=False)
    fast: bool = field(default=False, compare=False)  # searched by ``re`` (the shared subset)

    def search(self, text: str) -> Match | None:
        return self._search(text)  # type: ignore[operator, no-any-return]


def whole(rx: GoRegexp) -> GoRegexp:
    """``rx`` anchored at both ends (Go's ``^(?:re)$`` without multi-line): a whole-name match."""
    anchored = compile(rf"\A(?:{rx.pattern})\z")
    return GoRegexp(rx.pattern, anchored.groups, anchored.groupindex, anchored._search, anchored.fast)


def compile(pattern: str, allow_fast: bool = True) -> GoRegexp:
    """Compile as Go would; ``allow_fast=False`` always searches with RE2 (the tests hold
    both paths to Go's answers)."""
    try:
        compiled = re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        reason = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise GoRegexpError(reason) from None
    groupindex = dict(compiled.groupindex)
    python = _shared_subset(pattern) if allow_fast else None
    if python is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a construct Python means to change: not shared
                fast = re.compile(python)
        except (re.error, OverflowError, FutureWarning):
            fast = None  # e.g. a group name used twice, which Python refuses
        if fast is not None and fast.groups == compiled.groups and dict(fast.groupindex) == groupindex:
            return GoRegexp(pattern, compiled.groups, groupindex, fast.search, fast=True)
    return GoRegexp(pattern, compiled.groups, groupindex, compiled.search)


# Outside a class: what both dialects read alike.
_LITERAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:-/ =,;@%&'\"!~#<>`")
_ESCAPABLE = frozenset(".+*?()|[]{}^$\\/-")
_IN_CLASS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:/ .=,;@%&'\"!~#<>`*+?(){}|$"
)
_GROUP_NAME = re.compile(r"\?P<([A-Za-z_][A-Za-z0-9_]*)>")
_REPEAT = re.compile(r"\{(\d{1,3})(,(\d{1,3})?)?\}")


def _shared_subset(pattern: str) -> str | None:
    """The pattern in Python's syntax when it uses only constructs both dialects read and
    match alike, else None. ``$`` becomes ``\\Z`` (Go's ``$`` is the end of the text) and
    ``\\z`` too; everything else is copied."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0
    previous_quantifiable = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                return None
            nxt = pattern[i + 1]
            if nxt == "z":
                out.append(r"\Z")
                previous_quantifiable = False
            elif nxt in _ESCAPABLE:
                out.append(pattern[i : i + 2])
                previous_quantifiable = True
            else:
                return None
            i += 2
            continue
        if ch == "[":
            end = _class_end(pattern, i)
            if end < 0:
                return None
            out.append(pattern[i : end + 1])
            i = end + 1
            previous_quantifiable = True
            continue
        if ch == "(":
            if pattern.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif pattern.startswith("(?P<", i):
                m = _GROUP_NAME.match(pattern, i + 1)
                if not m:
                    return None
                out.append("(" + m.group(0))
                i = m.end()
            elif pattern.startswith("(?", i):
                return None  # flags, (?<name>: left to RE2
            else:
                out.append("(")
                i += 1
            depth += 1
            previous_quantifiable = False
            continue
        if ch == ")":
            if depth == 0:
                return None
            depth -= 1
            out.append(")")
            i += 1
            previous_quantifiable = True
            continue
        if ch in "*+?":
            if not previous_quantifiable:
                return None
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "?":  # lazy
                out.append("?")
                i += 1
            if i < n and pattern[i] in "*+?{":
                return None  # a repeated repetition: the dialects differ
            previous_quantifiable = False
            continue
        if ch == "{":
            m = _REPEAT.match(pattern, i)
            if not m or not previous_quantifiable:
                return None
            lo, hi = int(m.group(1)), m.group(3)
            if hi is not None and int(hi) < lo:
                return None
            out.append(m.group(0))
            i = m.end()
            if i < n and pattern[i] == "?":
                out.append("?")
                i += 1
            if i < n and pattern[i] in "*+?{":
                return None
            previous_quantifiable = False
            continue
        if ch == "|":
            out.append("|")
            i += 1
            previous_quantifiable = False
            continue
        if ch == "^":
            out.append(r"\A")
            i += 1
            previous_quantifiable = False
            continue
        if ch == "$":
            out.append(r"\Z")
            i += 1
            previous_quantifiable = False
            continue
        if ch == ".":
            out.append(".")
            i += 1
            previous_quantifiable = True
            continue
        if ch in _LITERAL:
            out.append(re.escape(ch))
            i += 1
            previous_quantifiable = True
            continue
        return None
    return "".join(out) if depth == 0 else None


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing a class of ASCII literals and ranges, or -1 when the
    class holds anything else (negation and escapes included: left to RE2)."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "^]":
        return -1
    first = True
    while i < len(pattern):
        ch = pattern[i]
        if ch == "]" and not first:
            return i
        if ch == "[" or ch == "\\" or (ch not in _IN_CLASS and ch != "-"):
            return -1
        if ch == "-" and (first or i + 1 >= len(pattern) or pattern[i + 1] == "]"):
            return -1  # a literal dash: read alike, but kept simple
        if ch == "-" and pattern[i - 1] > pattern[i + 1]:
            return -1
        if i + 1 < len(pattern) and ch in "&~|" and pattern[i + 1] == ch:
            return -1  # Python warns of a future set operation
        first = False
        i += 1
    return -1


def _reference(template: str) -> tuple[str, int, str] | None:
    """Go's ``extract``: the name after a ``$``, its number (-1: a name), and the rest."""
    brace = template.startswith("{")
    body = template[1:] if brace else template
    i = 0
    while i < len(body) and (body[i] == "_" or unicodedata.category(body[i])[0] == "L" or
                             unicodedata.category(body[i]) == "Nd"):  # fmt: skip
        i += 1
    if i == 0:
        return None
    name = body[:i]
    if brace:
        if i >= len(body) or body[i] != "}":
            return None
        i += 1
    num = 0
    for c in name:
        if not "0" <= c <= "9" or num >= 100_000_000:
            num = -1
            break
        num = num * 10 + int(c)
    if name[0] == "0" and len(name) > 1:
        num = -1
    return name, num, body[i:]


def expand(rx: GoRegexp, template: str, match: Match) -> str:
    """Go's ``Regexp.ExpandString`` of ``template`` with ``match``."""
    out: list[str] = []
    while True:
        before, sep, after = template.partition("$")
        if not sep:
            break
        out.append(before)
        template = after
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        ref = _reference(template)
        if ref is None:
            out.append("$")
            continue
        name, num, template = ref
        if num >= 0:
            if num <= rx.groups:
                out.append(match.group(num) or "")
        elif name in rx.groupindex:
            out.append(match.group(rx.groupindex[name]) or "")
    out.append(template)
    return "".join(out)
