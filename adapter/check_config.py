"""``promhpa-adapter check-config FILE [--prometheus-url URL]``.

Validates a rule file (errors name line and key). With a Prometheus it also runs each
rule's discovery and prints, per rule, the metrics it would serve and the exact PromQL it
would run for an example request -- the question every prometheus-adapter user ends up
answering by reading logs.
"""

from __future__ import annotations

import sys
from datetime import timedelta

from .config import ConfigError, Rule, load_config
from .naming import ResourceMapper
from .promapi import PrometheusAPI, PrometheusUnavailable
from .promql import QueryError
from .queries import ObjectQuery, custom_query, external_query
from .registry import index_series
from .templates import TemplateError


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
    try:
        config = load_config(path)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(
        f"{path}: OK -- {len(config.rules)} custom rule(s), {len(config.external_rules)} external rule(s), "
        f"resource rules {'present' if config.resource_rules else 'absent'}"
    )
    if prom is None:
        return 0
    status = 0
    for rule in config.rules + config.external_rules:
        print(f"\n{rule.kind}[{rule.index}]: seriesQuery {rule.series_query}")
        try:
            series = await prom.series(rule.series_query, max_age)
        except PrometheusUnavailable as e:
            print(f"  error: {e}")
            status = 1
            continue
        custom, external = index_series(rule, series)
        print(f"  {len(series)} series matched, serving {len(custom) + len(external)} metric(s)")
        for gr, metric, name in custom[:20]:
            print(f"  - {gr}/{metric}  (series {name})\n      {_example(rule, metric, name, gr)}")
        for metric, name in external[:20]:
            print(f"  - external {metric}  (series {name})\n      {_example(rule, metric, name, None)}")
        if len(custom) + len(external) > 20:
            print(f"  ... and {len(custom) + len(external) - 20} more")
        if not series:
            print("  nothing matched: check the seriesQuery against Prometheus' /api/v1/series")
    return status
