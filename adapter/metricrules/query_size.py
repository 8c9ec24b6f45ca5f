"""How big a PromQL query is, measured before anything parses it.

Why before the parser: promql-parser (0.12.0) converts its tree to Python objects by
recursion. A chain of about 1,000 binary operators ends in a RecursionError, and about
5,000 (``x+x+...``, a 10 KB query) kill the process with a segmentation fault
(docs/security.md). Its parse time also grows with the square of a chain's length. A
MetricRule is written by any namespace editor, so the adapter measures every team query
here in one linear pass over the text. A query over a limit never reaches the parser.

What is measured:

* ``length``: characters.
* ``tokens``: lexical tokens, standing in for the node count the parser would build.
* ``depth``: an upper bound on how deep the parsed tree can be. Each bracket opens a level.
  A level is as deep as one, plus its operators (binary, unary, and a ``[`` range or
  subquery, which chains too), plus its deepest inner level: in the worst case every
  operator of a level stands above its deepest part.
"""

from __future__ import annotations

from dataclasses import dataclass

_OPERATOR_WORDS = frozenset({"and", "or", "unless", "atan2"})
_TWO_CHAR = frozenset({"==", "!=", "<=", ">=", "=~", "!~"})
_ONE_CHAR_OPS = frozenset("+-*/%^<>")
_OPEN, _CLOSE = "([{", ")]}"
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:")
_IDENT_REST = _IDENT_START | frozenset("0123456789")
_NUMBER = frozenset("0123456789.abcdefABCDEFxXpP_+-smhdwyi")  # numbers, hex, durations (5m30s)


@dataclass(frozen=True)
class Size:
    length: int
    tokens: int
    depth: int


@dataclass(frozen=True)
class SizeLimits:
    """The largest team query the adapter parses. The defaults leave room for any rule seen
    in practice (prometheus-adapter's own defaults are under 200 characters and depth 6)."""

    max_length: int = 4096
    max_tokens: int = 1024
    max_depth: int = 64


# What no configuration may raise the limits past: the parser itself is unsafe beyond them
# (RecursionError at a depth of about 1,000; a segmentation fault at about 5,000).
CEILING = SizeLimits(max_length=65_536, max_tokens=16_384, max_depth=256)


class QueryTooLarge(ValueError):  # noqa: N818 - reads as what the query is
    """A query over a size limit; the message names the limit and what to write instead."""


def measure(query: str) -> Size:
    """One pass over the text: no parse, no recursion, linear in its length."""
    tokens = 0
    levels: list[list[int]] = [[0, 0]]  # per open bracket level: [operators, deepest inner level]
    braces = 0  # inside {...} the matcher operators (=, !=, =~, or) are not expression operators
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch in " \t\r\n":
            i += 1
            continue
        if ch == "#":  # a comment, to the end of the line
            end = query.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        tokens += 1
        if ch in "\"'`":
            i = _string_end(query, i)
            continue
        is_op = False
        if ch in _OPEN:
            if ch == "[" and braces == 0:
                levels[-1][0] += 1  # a range or subquery applies to what precedes it: it chains
            if ch == "{":
                braces += 1
            levels.append([0, 0])
            i += 1
            continue
        if ch in _CLOSE:
            if ch == "}" and braces:
                braces -= 1
            if len(levels) > 1:
                _close(levels)
            i += 1
            continue
        if ch in _IDENT_START:
            j = i + 1
            while j < n and query[j] in _IDENT_REST:
                j += 1
            is_op = braces == 0 and query[i:j].lower() in _OPERATOR_WORDS
            i = j
        elif ch.isdigit() or (ch == "." and i + 1 < n and query[i + 1].isdigit()):
            j = i + 1
            while j < n and (query[j] in _NUMBER) and not (query[j] in "+-" and query[j - 1] not in "eE"):
                j += 1
            i = j
        elif query[i : i + 2] in _TWO_CHAR:
            is_op = braces == 0
            i += 2
        elif ch in _ONE_CHAR_OPS:
            is_op = braces == 0
            i += 1
        else:  # , = : @ and anything the parser will refuse
            i += 1
        if is_op:
            levels[-1][0] += 1
    while len(levels) > 1:  # brackets left open: the parser refuses them, but measure them
        _close(levels)
    ops, inner = levels[0]
    return Size(n, tokens, 1 + ops + inner)


def _close(levels: list[list[int]]) -> None:
    ops, inner = levels.pop()
    parent = levels[-1]
    parent[1] = max(parent[1], 1 + ops + inner)


def _string_end(query: str, start: int) -> int:
    """The index after the string literal opening at ``start`` (or the end of the text)."""
    quote = query[start]
    i, n = start + 1, len(query)
    while i < n:
        ch = query[i]
        if ch == "\\" and quote != "`":
            i += 2
            continue
        if ch == quote:
            return i + 1
        i += 1
    return n


def check_size(query: str, limits: SizeLimits, what: str = "the query") -> Size:
    """``query``'s size, or QueryTooLarge naming the first limit it is over and what to write
    instead. The length is checked before the query is even scanned."""
    if len(query) > limits.max_length:
        raise QueryTooLarge(
            f"{what} has {len(query):,} characters, over the limit of {limits.max_length:,} "
            "(--team-rule-max-query-length); move the logic into a Prometheus recording rule "
            "and query its result"
        )
    size = measure(query)
    if size.depth > limits.max_depth:
        raise QueryTooLarge(
            f"{what} nests {size.depth} levels deep, over the limit of {limits.max_depth} "
            "(--team-rule-max-query-depth); group long chains of operators in parentheses, "
            "e.g. (a + b + c) + (d + e + f), or use a recording rule"
        )
    if size.tokens > limits.max_tokens:
        raise QueryTooLarge(
            f"{what} has {size.tokens:,} tokens, over the limit of {limits.max_tokens:,} "
            "(--team-rule-max-query-tokens); move the logic into a Prometheus recording rule "
            "and query its result"
        )
    return size
