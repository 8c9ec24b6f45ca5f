"""Offline checks of a parsed rule file: what can be proven wrong without a Prometheus.

Each rule's ``seriesQuery`` and an example rendering of its ``metricsQuery`` (and the
resource rules' queries) are parsed as PromQL, and each ``name.as`` is read as Go's
``Expand`` reads it -- the mistakes that otherwise surface only as a metric that never
appears, after a ``helm upgrade``.

The parser is ``promql-parser`` (a Rust port of Prometheus' own Go parser, from the
package index): it runs anywhere the adapter runs, with no binary to ship, and agrees with
Prometheus on the syntax rule files use (tested against a real Prometheus' parser). Where
the two can honestly differ -- a function added in a newer Prometheus -- the finding is a
warning, not an error, and ``check-config --prometheus-url`` has Prometheus itself judge
every rendered query.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import promql_parser

from .config import Config, ResourceQuery, Rule
from .goregexp import GoRegexp
from .templates import TemplateError

_METRIC = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)")
# a function the parser does not know is something a newer Prometheus may have
_UNKNOWN_FUNCTION = re.compile(r"unknown function", re.I)


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse_promql(query: str) -> str | None:
    """The parser's complaint about ``query``, or None when it parses."""
    try:
        promql_parser.parse(query)
    except ValueError as e:
        return str(e) or "invalid PromQL"
    return None


def lint(config: Config) -> Findings:
    out = Findings()
    src = config.source
    for rule in config.rules + config.external_rules:
        where = f"{rule.kind}[{rule.index}]"
        problem = parse_promql(rule.series_query)
        if problem is not None:
            _report(
                out,
                f"{src}:{rule.series_line}: {where}.seriesQuery: "
                f"{rule.series_query!r} is not PromQL: {problem}",
            )
        query = _example_query(rule)
        if query is not None:
            problem = parse_promql(query)
            if problem is not None:
                _report(
                    out,
                    f"{src}:{rule.line}: {where}.metricsQuery: "
                    f"renders to {query!r}, which is not PromQL: {problem}",
                )
        for message in expansion_problems(rule.naming.matches, rule.naming.as_):
            out.errors.append(f"{src}:{rule.name_line or rule.line}: {where}.name.as: {message}")
    if config.resource_rules is not None:
        for key in ("cpu", "memory"):
            q: ResourceQuery | None = getattr(config.resource_rules, key)
            if q is None:
                continue
            for name, template in (("containerQuery", q.container_query), ("nodeQuery", q.node_query)):
                try:
                    rendered = template.render(_RESOURCE_EXAMPLE)
                except TemplateError:
                    continue
                problem = parse_promql(rendered)
                if problem is not None:
                    _report(
                        out,
                        f"{src}: resourceRules.{key}.{name}: "
                        f"renders to {rendered!r}, which is not PromQL: {problem}",
                    )
    return out


def _report(out: Findings, message: str) -> None:
    (out.warnings if _UNKNOWN_FUNCTION.search(message) else out.errors).append(message)


_RESOURCE_EXAMPLE = {
    "Series": "example_series",
    "LabelMatchers": 'namespace="default",pod="example"',
    "GroupBy": "pod",
    "GroupBySlice": ["pod"],
    "LabelValuesByName": {"namespace": "default", "pod": "example", "node": "example"},
}


def _example_query(rule: Rule) -> str | None:
    """The ``metricsQuery`` rendered with example values (a series named after the
    ``seriesQuery``'s metric), or None when it cannot render offline (check-config reports
    that with a Prometheus)."""
    m = _METRIC.match(rule.series_query)
    series = m.group(1) if m else "example_series"
    try:
        return rule.metrics_query.render({**_RESOURCE_EXAMPLE, "Series": series})
    except TemplateError:
        return None


def _is_name_char(ch: str) -> bool:
    category = unicodedata.category(ch)
    return ch == "_" or category[0] == "L" or category == "Nd"


def expansion_problems(rx: GoRegexp, template: str) -> list[str]:
    """The references in ``template`` that Go's ``Expand`` turns into nothing: a group
    number ``matches`` does not have, or a name it does not define (``$1_per_second`` is
    the name ``1_per_second``)."""
    problems: list[str] = []
    i = 0
    while True:
        i = template.find("$", i)
        if i < 0 or i + 1 >= len(template):
            return problems
        rest = template[i + 1 :]
        if rest.startswith("$"):
            i += 2
            continue
        brace = rest.startswith("{")
        body = rest[1:] if brace else rest
        n = 0
        while n < len(body) and _is_name_char(body[n]):
            n += 1
        name = body[:n]
        if not name or (brace and (n >= len(body) or body[n] != "}")):
            i += 1
            continue  # malformed: Go keeps the $ as text
        ref = "${" + name + "}" if brace else "$" + name
        number = (
            int(name)
            if name.isascii() and name.isdigit() and not (name[0] == "0" and len(name) > 1)
            else None
        )
        if number is not None:
            if number > rx.groups:
                problems.append(
                    f"{ref} refers to group {number}, but 'matches' has {rx.groups} capture group(s): "
                    "Go expands it to nothing"
                )
        elif name not in rx.groupindex:
            digits = len(name) - len(name.lstrip("0123456789"))
            hint = ""
            if digits and name[0] != "0":
                group, tail = name[:digits], name[digits:]
                hint = f"; write ${{{group}}}{tail} for group {group} followed by {tail!r}"
            problems.append(
                f"{ref} refers to a group named {name!r}, which 'matches' does not define: Go expands it to "
                f"nothing{hint}"
            )
        i += 1 + (n + 2 if brace else n)
