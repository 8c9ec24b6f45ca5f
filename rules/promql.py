"""Label matchers and queries: requests become PromQL, and nothing in a request can change
a query's meaning.

Every label value that reaches PromQL is quoted as a PromQL string (backslashes, quotes and
control characters escaped), and values that go into a regex matcher (``=~``/``!~``, used
for ``in``/``notin`` and for several object names) are regex-escaped first. So a pod named
``a|b`` or ``x".*`` matches that name only -- prometheus-adapter does not regex-escape, and
a crafted name there widens the query.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shared.selectors import Requirement, Selector

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
# stands for a series name that must be quoted (Prometheus 3's UTF-8 names) until the
# rendered query is finished; it cannot occur in a rule or in anything a request carries
_SERIES = "\x00series\x00"
# RE2 metacharacters; escaping them makes a value match literally
_RE2_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


class QueryError(ValueError):
    """A request cannot be expressed safely in PromQL (400 Bad Request)."""


_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f]')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


# Values at least this long -- the alternation of a selection's object names -- come back
# on every request for the same selection (an HPA's, every sync period): each is escaped and
# quoted once and remembered. Shorter ones are cheaper to do again than to look up.
_REMEMBERED = 512


def quote(value: str) -> str:
    """A PromQL double-quoted string literal for any text.

    One regex pass (a C loop) instead of a Python loop per character: the value of a
    ``pods/*`` request over 1,000 pods is a 13 KB regex."""
    if len(value) >= _REMEMBERED:
        return _quote_remembered(value)
    return _quote(value)


def _quote(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'


_quote_remembered = functools.lru_cache(maxsize=64)(_quote)


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _ESCAPES.get(ch) or f"\\x{ord(ch):02x}"


def regex_literal(value: str) -> str:
    return _RE2_META.sub(r"\\\1", value)


def alternation(values: Sequence[str]) -> str:
    """``a|b|c`` of literal values, escaped in one pass over the text joined by NUL (which no
    Kubernetes name holds, and which is no metacharacter). A ``pods/*`` request over 1,000
    pods needs this of the same names on every request: long lists are remembered."""
    if len(values) >= 32:
        return _alternation_remembered(tuple(values))
    return _alternation(values)


def _alternation(values: Sequence[str]) -> str:
    if any("\x00" in v for v in values):
        return "|".join(regex_literal(v) for v in values)
    return regex_literal("\x00".join(values)).replace("\x00", "|")


@functools.lru_cache(maxsize=64)
def _alternation_remembered(values: tuple[str, ...]) -> str:
    return _alternation(values)


def check_label(name: str) -> str:
    """Any UTF-8 text is a label name for Prometheus 3 (quoted when it is not a legacy name;
    Prometheus 2 refuses those queries, and has no such labels)."""
    if not name or "\x00" in name:
        raise QueryError(f"{name!r} is not a valid Prometheus label name")
    return name


def label_ref(name: str) -> str:
    """A label name as PromQL reads it: bare when legacy, else a quoted string (Prometheus 3)."""
    return name if _LABEL_NAME.match(name) else quote(name)


def series_ref(name: str) -> str:
    """A series name for ``.Series``: bare when legacy; otherwise a stand-in that
    ``finish`` turns into the quoted-name form Prometheus 3 reads."""
    return name if not name or _METRIC_NAME.match(name) else _SERIES


def finish(query: str, series: str) -> str:
    """``name{matchers}`` with a UTF-8 name becomes ``{"name", matchers}`` (and a bare name
    ``{"name"}``): the only form in which Prometheus 3 accepts such a name."""
    if _SERIES not in query:
        return query
    q = quote(series)
    return (
        query.replace(_SERIES + "{}", "{" + q + "}")
        .replace(_SERIES + "{", "{" + q + ",")
        .replace(_SERIES, "{" + q + "}")
    )


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # = != =~ !~
    value: str  # already regex-escaped for =~ / !~

    def __str__(self) -> str:
        return f"{label_ref(self.label)}{self.op}{quote(self.value)}"


def values_matcher(label: str, values: Sequence[str], negate: bool = False) -> Matcher:
    """One value: an equality matcher; several: an anchored alternation of literal values."""
    check_label(label)
    if len(values) == 1:
        return Matcher(label, "!=" if negate else "=", values[0])
    return Matcher(label, "!~" if negate else "=~", alternation(values))


def requirement_matcher(req: Requirement) -> Matcher:
    op = req.operator
    label = check_label(req.key)
    if op in ("=", "=="):
        return Matcher(label, "=", req.values[0])
    if op == "!=":
        return Matcher(label, "!=", req.values[0])
    if op == "in":
        return values_matcher(label, req.values)
    if op == "notin":
        return values_matcher(label, req.values, negate=True)
    if op == "exists":
        return Matcher(label, "!=", "")
    if op == "!":
        return Matcher(label, "=", "")
    raise QueryError(
        f"the selector operator {op!r} ({req}) cannot be expressed in PromQL; use =, !=, in, notin, "
        "exists or !exists"
    )


def selector_matchers(selector: Selector | None) -> list[Matcher]:
    if selector is None:
        return []
    return [requirement_matcher(r) for r in selector.requirements]


def join_matchers(matchers: Iterable[Matcher]) -> str:
    return ",".join(str(m) for m in matchers)


def template_values(
    series: str,
    matchers: Sequence[Matcher],
    group_by: Sequence[str],
    values_by_name: Mapping[str, Sequence[str]],
) -> dict[str, object]:
    """The variables a metricsQuery template sees, as prometheus-adapter provides them."""
    return {
        "Series": series_ref(series),
        "LabelMatchers": join_matchers(matchers),
        "LabelValuesByName": {k: alternation(vs) for k, vs in values_by_name.items()},
        "GroupBy": ",".join(label_ref(g) for g in group_by),
        "GroupBySlice": list(group_by),
    }
