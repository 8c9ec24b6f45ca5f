"""``promhpa-adapter check-config FILE [--prometheus-url URL]``.

Validates a rule file (errors name line and key). With a Prometheus it also runs each
rule's discovery and prints, per rule, the metrics it would serve and the exact PromQL it
would run for an example request -- the question every prometheus-adapter user ends up
answering by reading logs.
"""

from __future__ import annotations

import difflib
import sys
from datetime import timedelta

from shared.kube.resources import WELL_KNOWN

from .config import ConfigError, Rule, load_config
from .naming import ResourceMapper, known
from .promapi import PrometheusAPI, PrometheusUnavailable
from .promql import QueryError
from .queries import ObjectQuery, custom_query, external_query
from .registry import index_series
from .templates import TemplateError


def _resource_errors(path: str, rule: Rule) -> list[str]:
    """Overrides that name no resource the API serves (namespacez); a custom resource names
    its group, and is checked by the cluster, not here."""
    out = []
    for label, gr in rule.resources.overrides.items():
        if gr.group or known(gr) is not None:
            continue
        hint = difflib.get_close_matches(gr.resource, sorted(r.plural for r in WELL_KNOWN), n=1)
        out.append(
            f"{path}: {rule.kind}[{rule.index}].resources.overrides.{label}: unknown resource "
            f"{gr.resource!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else " (give its group for a custom resource)")
        )
    return out


def _example(rule: Rule, metric: str, series: str, resource: object) -> str:
    try:
        if rule.kind == "externalRules":
            return external_query(rule, series, "default", None)
        mapper = ResourceMapper(rule.resources)
        gr = resource
        label = mapper.label_for_resource(gr)  # type: ignore[arg-type]
        namespace = None if label == mapper.namespace_label() else "default"
        return custom_query(rule, series, ObjectQuery(gr, namespace, ("example",)))[0]  # type: ignore[arg-type]
    except (QueryError, TemplateError) as e:
        return f"(cannot build a query: {e})"


async def check_config(path: str, prom: PrometheusAPI | None, max_age: timedelta) -> int:
    """0: every check passed; 1: a rule can never work (an unknown resource, a query
    Prometheus refuses, Prometheus unreachable); 2: the file itself is invalid."""
    try:
        config = load_config(path)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rules = config.rules + config.external_rules
    errors = [err for rule in rules for err in _resource_errors(path, rule)]
    print(
        f"{path}: {len(config.rules)} custom rule(s), {len(config.external_rules)} external rule(s), "
        f"resource rules {'present' if config.resource_rules else 'absent'}"
    )
    if prom is None:
        print("  checked: syntax, keys, regular expressions, template fields, resources")
        print("  skipped (no --prometheus-url): series discovery, and Prometheus parsing each query")
    else:
        for rule in rules:
            errors += await _check_rule(path, rule, prom, max_age)
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


async def _check_rule(path: str, rule: Rule, prom: PrometheusAPI, max_age: timedelta) -> list[str]:
    where = f"{path}:{rule.line}: {rule.kind}[{rule.index}].metricsQuery"
    print(f"\n{rule.kind}[{rule.index}]: seriesQuery {rule.series_query}")
    try:
        series = await prom.series(rule.series_query, max_age)
    except PrometheusUnavailable as e:
        return [f"{path}: {rule.kind}[{rule.index}].seriesQuery: {e}"]
    custom, external = index_series(rule, series)
    print(f"  {len(series)} series matched, serving {len(custom) + len(external)} metric(s)")
    examples = [(f"{gr}/{metric}", name, _example(rule, metric, name, gr)) for gr, metric, name in custom]
    examples += [
        (f"external {metric}", name, _example(rule, metric, name, None)) for metric, name in external
    ]
    for title, name, query in examples[:20]:
        print(f"  - {title}  (series {name})\n      {query}")
    if len(examples) > 20:
        print(f"  ... and {len(examples) - 20} more")
    if not series:
        print("  nothing matched: check the seriesQuery against Prometheus' /api/v1/series")
        gr = next(iter(rule.resources.overrides.values()), None)
        examples = [("", "series", _example(rule, "metric", "series", gr))]
    # Prometheus' own parser is the judge of the rendered query (one per rule suffices)
    query = examples[0][2]
    if query.startswith("(cannot build a query"):
        return [f"{where}: {query[1:-1]}"]
    try:
        await prom.query(query)
    except PrometheusUnavailable as e:
        return [f"{where}: Prometheus rejects the rendered query {query!r}: {e}"]
    return []
