"""``promhpa-adapter check-config FILE [--prometheus-url URL] [--kubeconfig FILE]``.

Validates a rule file (errors name line and key). With a Prometheus it also runs each
rule's discovery and prints, per rule, the metrics it would serve and the exact PromQL it
would run for an example request -- the question every prometheus-adapter user ends up
answering by reading logs. With a kubeconfig, every resource a rule names is looked up in
the cluster's API discovery (custom resources included).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import yaml

from promclient.backends import Backends
from promclient.promapi import PrometheusAPI, PrometheusRejected, PrometheusUnavailable
from rules.admission import judge
from rules.config import Backend, Rule
from rules.naming import ResourceMapper
from rules.promql import QueryError
from rules.queries import ObjectQuery, custom_query, external_query
from rules.series import index_series
from rules.templates import TemplateError
from rules.upstream_config import Upstream
from shared import inputfiles


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


@dataclass
class Verdict:
    """What a rule file is worth: errors (it can never work), the report a person reads,
    and what could not be checked (no Prometheus, or Prometheus unreachable)."""

    errors: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # Prometheus could not answer
    warnings: list[str] = field(default_factory=list)  # worth a look, never a refusal
    invalid_file: bool = False


_CREDENTIAL_FILES = (
    ("caFile", "ca_file"), ("bearerTokenFile", "bearer_token_file"), ("clientCertFile", "client_cert"),
    ("clientKeyFile", "client_key"), ("passwordFile", "password_file"),
)  # fmt: skip


def _unreadable_files(source: str, index: int, backend: Backend) -> list[str]:
    """A backend's credential files the adapter could not read here either: checked only with
    --prometheus-url, where check-config connects as the adapter would."""
    out = []
    for key, attr in _CREDENTIAL_FILES:
        path = getattr(backend, attr)
        if not path:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as e:
            out.append(
                f"{source}:{backend.line}: backends[{index}].{key}: cannot read {path}: {e.strerror} "
                "(mount the Secret holding it, e.g. with the chart's adapter.extraVolumes and "
                "adapter.extraVolumeMounts, and run check-config where it is mounted)"
            )
    return out


async def validate(
    text: str,
    source: str,
    prom: PrometheusAPI | Backends | None,
    max_age: timedelta,
    served: dict[str, set[str]] | None = None,
) -> Verdict:
    """Every check a rule file can get: syntax, keys and template fields (names line and key),
    resources, and -- with a Prometheus -- discovery and Prometheus' own parser on each rule's
    rendered query; with ``served`` (the cluster's resources) every override is proven to
    exist. ``check-config`` prints it; the rules webhook denies a ConfigMap by it."""
    v = Verdict()
    # the offline verdict every path that loads rules gives (``rules.admission``); every
    # problem of the file at once: what could be read is linted too
    judged = judge(text, source, served)
    config = judged.config
    v.errors += judged.errors
    v.warnings += judged.warnings
    if judged.invalid_file or config is None:
        v.invalid_file = True
        return v
    rules = config.rules + config.external_rules
    if not rules and config.resource_rules is None and not config.upstreams:
        v.warnings.append(
            f"{source}: no rules: the adapter would serve no custom, external or resource metrics"
        )
    v.report.append(
        f"{source}: {len(config.rules)} custom rule(s), {len(config.external_rules)} external rule(s), "
        f"resource rules {'present' if config.resource_rules else 'absent'}"
    )
    if served is None and any(gr.group for r in rules for gr in r.resources.overrides.values()):
        v.skipped.append("custom resources against the cluster's discovery")
        v.report.append(f"  skipped (no --kubeconfig): {v.skipped[-1]}")
    if prom is None:
        v.report.append("  checked: syntax, keys, regular expressions, template fields, resources")
        v.skipped.append("series discovery, and Prometheus parsing each query")
        v.report.append(f"  skipped (no --prometheus-url): {v.skipped[-1]}")
        return v
    v.errors += [err for i, b in enumerate(config.backends) for err in _unreadable_files(source, i, b)]
    backends = Backends.of(prom)
    down: dict[str, tuple[str, list[str]]] = {}  # backend -> (why, the rules not checked)
    for rule in rules:
        try:
            client = backends.get(rule.backend)
        except PrometheusUnavailable:  # a backend this file adds: not connected here yet
            v.skipped.append(f"{rule.kind}[{rule.index}] against its new backend {rule.backend!r}")
            v.report.append(
                f"\n{rule.kind}[{rule.index}]: skipped: backend {rule.backend!r} is not connected here"
            )
            continue
        name = f"{rule.kind}[{rule.index}]"
        if rule.backend in down:  # it could not be reached: once is enough to say so
            down[rule.backend][1].append(name)
            continue
        try:
            await _check_rule(v, source, rule, client, max_age, config.upstreams)
        except _Unreachable as e:
            down[rule.backend] = (str(e), [name])
    for why, names in down.values():
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        v.unverified.append(f"{source}: {why} ({len(names)} rule(s) not checked against it: {shown})")
    return v


class _Unreachable(Exception):  # noqa: N818 - reads as what the backend is
    """The backend did not answer at all (refused, unreachable, timed out)."""


async def check_config(
    path: str,
    prom: PrometheusAPI | Backends | None,
    max_age: timedelta,
    served: dict[str, set[str]] | None = None,
    text: str | None = None,
    output: str = "text",
) -> int:
    """0: every check passed; 1: a rule can never work (an unknown resource, a query
    Prometheus refuses, Prometheus or the cluster unreachable); 2: the file itself is invalid.
    ``text``: the file when it was read already (standard input, ``-``)."""
    if text is None:
        try:
            text = inputfiles.read_text(path)
        except inputfiles.InputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    v = await validate(text, path, prom, max_age, served)
    errors = v.errors + v.unverified  # here, unproven counts as failed
    code = 2 if v.invalid_file else 1 if errors else 0
    if output != "text":
        print_document(
            {
                "file": path,
                "valid": code == 0,
                "exitCode": code,
                **capped("errors", errors),
                "warnings": v.warnings[:MAX_LINES],
                "skipped": v.skipped,
            },
            output,
        )
        return code
    for line in v.report:
        print(line)
    for warning in v.warnings[:MAX_LINES]:
        print(f"warning: {warning}", file=sys.stderr)
    print_capped(errors)
    if errors:
        print(f"{len(errors)} error(s)")
    else:
        print("OK" + (f" ({len(v.warnings)} warning(s))" if v.warnings else ""))
    return code


# a file with 100,000 mistakes is fixed from its first ones: the rest are counted, not printed
MAX_LINES = 100


def capped(key: str, lines: list[str]) -> dict[str, Any]:
    """``{key: the first MAX_LINES}``, and ``more<Key>``: how many were left out."""
    out: dict[str, Any] = {key: lines[:MAX_LINES]}
    if len(lines) > MAX_LINES:
        out["more" + key[:1].upper() + key[1:]] = len(lines) - MAX_LINES
    return out


def print_capped(errors: list[str]) -> None:
    for err in errors[:MAX_LINES]:
        print(f"error: {err}", file=sys.stderr)
    if len(errors) > MAX_LINES:
        print(f"error: ... and {len(errors) - MAX_LINES} more errors", file=sys.stderr)


def print_document(doc: dict[str, Any], output: str) -> None:
    """One JSON or YAML document on stdout, for a script or CI to read."""
    if output == "json":
        print(json.dumps(doc, indent=2))
    else:
        print(yaml.safe_dump(doc, sort_keys=False), end="")


async def _check_rule(
    v: Verdict,
    path: str,
    rule: Rule,
    prom: PrometheusAPI,
    max_age: timedelta,
    upstreams: tuple[Upstream, ...] = (),
) -> None:
    where = f"{path}:{rule.line}: {rule.kind}[{rule.index}].metricsQuery"
    v.report.append(f"\n{rule.kind}[{rule.index}]: seriesQuery {rule.series_query}")
    try:
        series = await prom.series(rule.series_query, max_age)
    except PrometheusRejected as e:
        v.errors.append(f"{path}:{rule.line}: {rule.kind}[{rule.index}].seriesQuery: {e}")
        return
    except PrometheusUnavailable as e:  # refused, unreachable or timed out: said once
        raise _Unreachable(str(e)) from None
    custom, external = index_series(rule, series)
    served = [("custom", f"{gr}/{metric}", metric) for gr, metric, _ in custom]
    served += [("external", metric, metric) for metric, _ in external]
    for api, shown, metric in served:  # one name from two providers: never a silent winner
        for u in upstreams:
            pattern = u.pattern_for(api, metric)
            if pattern is not None:
                where_rule = f"{path}:{rule.line}: {rule.kind}[{rule.index}]"
                v.errors.append(
                    f"{where_rule}: {api} metric {shown!r} is also routed to upstream {u.name!r} by "
                    f"{pattern!r} (line {u.line}): the same name from two providers; narrow the "
                    "upstream's pattern or the rule"
                )
    v.report.append(f"  {len(series)} series matched, serving {len(custom) + len(external)} metric(s)")
    examples = [(f"{gr}/{metric}", name, _example(rule, metric, name, gr)) for gr, metric, name in custom]
    examples += [
        (f"external {metric}", name, _example(rule, metric, name, None)) for metric, name in external
    ]
    for title, name, query in examples[:20]:
        v.report.append(f"  - {title}  (series {name})\n      {query}")
    if len(examples) > 20:
        v.report.append(f"  ... and {len(examples) - 20} more")
    if not series:
        v.report.append("  nothing matched: check the seriesQuery against Prometheus' /api/v1/series")
        gr = next(iter(rule.resources.overrides.values()), None)
        examples = [("", "series", _example(rule, "metric", "series", gr))]
    # Prometheus' own parser is the judge of the rendered query (one per rule suffices)
    query = examples[0][2]
    if query.startswith("(cannot build a query"):
        v.errors.append(f"{where}: {query[1:-1]}")
        return
    try:
        await prom.query(query)
    except PrometheusRejected as e:
        v.errors.append(f"{where}: Prometheus rejects the rendered query {query!r}: {e}")
    except PrometheusUnavailable as e:
        v.unverified.append(f"{where}: {e}")
