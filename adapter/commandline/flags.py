"""The adapter's command line: every flag of ``promhpa-adapter`` and ``check-config``.

Flags keep prometheus-adapter's names where they exist (``compat`` maps the rest of
v0.12.0's). Only parsing lives here; what the flags build is ``server``'s.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from adapter.serving.rules_webhook import WEBHOOK_PATH
from adapter.team.query_cost import CostLimits
from adapter.team.query_size import CEILING, SizeLimits
from promclient.prometheus import PrometheusSettings
from shared.cliflags import (
    add_log_flags,
    add_runtime_flags,
    add_tls_flags,
    deprecated_alias,
    duration,
    port,
    port_or_zero,
    positive,
)
from shared.version import promhpa_version

from . import compat


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _header(text: str) -> tuple[str, str]:
    """'Name: value', or prometheus-adapter's 'Name=value': whichever separator comes first
    after a valid header name."""
    for sep in sorted((s for s in ":=" if s in text), key=text.index):
        name, _, value = text.partition(sep)
        if _TOKEN.match(name.strip()):
            return name.strip(), value.strip()
    raise argparse.ArgumentTypeError(f"{text!r} is not a header; use 'Name: value' (or 'Name=value')")


def prometheus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus-url", required=True, help="Prometheus base URL, e.g. http://prometheus:9090")
    p.add_argument(
        "--prometheus-header",
        type=_header,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="extra HTTP header for every Prometheus request (repeatable)",
    )
    p.add_argument("--prometheus-ca-file", help="CA bundle to verify Prometheus' certificate")
    p.add_argument("--prometheus-token-file", help="bearer token file, re-read on every request")
    p.add_argument("--prometheus-client-cert", help="client certificate for Prometheus")
    p.add_argument("--prometheus-client-key", help="client key for Prometheus")
    p.add_argument("--prometheus-auth-username", help="basic auth user name")
    p.add_argument("--prometheus-auth-password-file", help="file holding the basic auth password")
    p.add_argument(
        "--prometheus-method",
        choices=("GET", "POST"),
        default="GET",
        help="HTTP method for queries (default GET; a query longer than --prometheus-post-over is "
        "always POSTed)",
    )
    p.add_argument(
        "--prometheus-post-over",
        type=int,
        default=4096,
        metavar="BYTES",
        help="POST queries whose encoded PromQL is longer than this (default 4096; 0: never), so a "
        "pods/* request over thousands of pods never exceeds a proxy's URL limit",
    )
    p.add_argument(
        "--prometheus-timeout",
        type=duration,
        default=timedelta(seconds=10),
        help="deadline of each Prometheus call, retry included (default 10s): past it the request "
        "gets a 504 Timeout Status; keep it below the HPA controller's metrics timeout",
    )
    p.add_argument(
        "--prometheus-retries",
        type=int,
        choices=(0, 1),
        default=1,
        help="one more attempt after a refused connection or a 502/503/504, only inside the deadline "
        "(default 1; 0: none)",
    )
    p.add_argument(
        "--prometheus-max-connections",
        type=int,
        default=64,
        metavar="N",
        help="connections open at once to one Prometheus backend (default 64; 0: no bound): a query "
        "past it waits, inside its own deadline, for one to come free",
    )
    p.add_argument(
        "--prometheus-insecure-skip-tls-verify",
        "--prometheus-insecure-skip-verify",
        dest="prometheus_insecure_skip_verify",
        action=deprecated_alias(
            "--prometheus-insecure-skip-tls-verify", "--prometheus-insecure-skip-verify", store_true=True
        ),
        help="do not verify Prometheus' certificate (testing only; kubectl's spelling, as "
        "--insecure-skip-tls-verify and a backend's insecureSkipTLSVerify)",
    )


def prometheus_settings(a: argparse.Namespace) -> PrometheusSettings:
    """Our Prometheus flags, with prometheus-adapter's --prometheus-auth-config and
    --prometheus-auth-incluster filling what ours leave unset."""
    basic = None
    if a.prometheus_auth_username:
        password = (
            Path(a.prometheus_auth_password_file).read_text().strip()
            if a.prometheus_auth_password_file
            else ""
        )
        basic = (a.prometheus_auth_username, password)
    extra: dict[str, Any] = {}
    if getattr(a, "prometheus_auth_config", None):
        extra = compat.auth_from_kubeconfig(a.prometheus_auth_config)
    elif getattr(a, "prometheus_auth_incluster", None) not in (None, "false"):
        extra = {
            "token_file": str(compat.IN_CLUSTER / "token"),
            "ca_file": str(compat.IN_CLUSTER / "ca.crt"),
        }
    headers = dict(a.prometheus_header)
    if extra.get("token"):
        headers.setdefault("Authorization", f"Bearer {extra['token']}")
    return PrometheusSettings(
        url=a.prometheus_url,
        headers=headers,
        ca_file=a.prometheus_ca_file or extra.get("ca_file"),
        token_file=a.prometheus_token_file or extra.get("token_file"),
        client_cert=a.prometheus_client_cert or extra.get("client_cert"),
        client_key=a.prometheus_client_key or extra.get("client_key"),
        basic_auth=basic or extra.get("basic_auth"),
        method=a.prometheus_method,
        post_over=a.prometheus_post_over,
        timeout=a.prometheus_timeout.total_seconds(),
        retries=a.prometheus_retries,
        insecure_skip_verify=a.prometheus_insecure_skip_verify or bool(extra.get("insecure_skip_verify")),
    )


def check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="promhpa-adapter check-config",
        description="Validate a rule file; with --prometheus-url, show what each rule serves. A file "
        "of MetricRule manifests gets the verdict the adapter would write on each.",
    )
    p.add_argument(
        "config", help="the rule file (prometheus-adapter format), or MetricRule manifests; - reads stdin"
    )
    p.add_argument("--prometheus-url", help="Prometheus to discover series from")
    p.add_argument(
        "--metrics-max-age",
        type=duration,
        default=timedelta(minutes=10),
        help="how far back discovery looks for series (default 10m)",
    )
    p.add_argument(
        "--kubeconfig",
        help="check every resource a rule names against this cluster's API discovery "
        "(custom resources included)",
    )
    team = p.add_argument_group(
        "MetricRule manifests",
        "a file of MetricRule or ClusterMetricRule objects is judged as the adapter judges it, "
        "with the same limits",
    )
    _team_limit_flags(team)
    team.add_argument("--team-rule-backends", default="default", metavar="NAMES", help="as the adapter's")
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="promhpa-adapter",
        description="Serve custom.metrics.k8s.io, external.metrics.k8s.io and metrics.k8s.io from "
        "Prometheus, with prometheus-adapter's rule files.",
        epilog="`promhpa-adapter check-config FILE` validates a rule file.",
    )
    _serve_flags(p)
    return p


def _serve_flags(p: argparse.ArgumentParser) -> None:
    prometheus_flags(p)
    p.add_argument("--version", action="version", version=f"promhpa-adapter {promhpa_version()}")
    compat.add_flags(p)
    # prometheus-adapter's charts pass klog's flags; accepted so a migration needs no edit
    p.add_argument(
        "--v",
        "-v",
        type=int,
        default=None,
        metavar="N",
        help="klog verbosity: 4 or more is --log-level=debug",
    )
    p.add_argument(
        "--config", help="rule file (prometheus-adapter format); prometheus-adapter's defaults if omitted"
    )
    team = p.add_argument_group(
        "team rules",
        "MetricRules (a team's, in its namespace, confined to its series) and ClusterMetricRules "
        "(the platform's), served beside the rule file; see docs/rules.md",
    )
    team.add_argument(
        "--team-rules",
        action="store_true",
        help="watch MetricRules and ClusterMetricRules (promhpa.io/v1alpha1; the chart installs the "
        "CRDs) and serve them beside the rule file, writing each one's verdict to its status",
    )
    team.add_argument(
        "--team-rules-per-namespace",
        type=positive,
        default=50,
        metavar="N",
        help="MetricRules served per namespace at most; the oldest are served (default 50)",
    )
    team.add_argument(
        "--team-rule-backends",
        default="default",
        metavar="NAMES",
        help="comma-separated backends of the rule file a MetricRule may name; 'default' is "
        "--prometheus-url (default: default)",
    )
    team.add_argument(
        "--team-rule-query-timeout",
        type=duration,
        default=timedelta(seconds=5),
        help="how long a MetricRule's query may take before the request fails with 504 (default 5s)",
    )
    _team_limit_flags(team)
    p.add_argument(
        "--config-reload-interval",
        type=duration,
        default=timedelta(seconds=10),
        help="how often the rule file is checked for changes (default 10s; 0 disables): a valid "
        "change is served without a restart, an invalid one is refused and the old rules kept",
    )
    p.add_argument(
        "--metrics-relist-interval",
        type=duration,
        default=timedelta(minutes=10),
        help="how often to rediscover series (default 10m; unknown metrics are also looked up on demand)",
    )
    p.add_argument(
        "--metrics-max-age",
        type=duration,
        default=None,
        help="how far back discovery looks for series (default: the relist interval)",
    )
    p.add_argument(
        "--upstream-discovery-interval",
        type=duration,
        default=timedelta(seconds=30),
        help="how often each upstream metrics server's resource lists are read for discovery and "
        "/readyz (default 30s; requests are routed by the rule file's patterns, not by this)",
    )
    p.add_argument(
        "--query-cache-ttl",
        type=duration,
        default=timedelta(seconds=5),
        help="how long query results are reused (default 5s; 0 disables)",
    )
    p.add_argument(
        "--secure-port",
        type=port_or_zero,
        default=6443,
        help="HTTPS port of the metrics APIs (default 6443; 0: any free port)",
    )
    p.add_argument(
        "--bind-address",
        default="0.0.0.0",
        help="address every listener binds to (default 0.0.0.0)",
    )
    p.add_argument(
        "--health-port",
        type=port_or_zero,
        default=8081,
        help="plain-HTTP port for /healthz, /livez and /readyz, served by a process of its own so "
        "probes never wait behind API load (default 8081; 0 disables; the secure port serves them too)",
    )
    p.add_argument(
        "--max-requests-inflight",
        type=int,
        default=400,
        help="API requests handled at once; more get 429 with Retry-After (default 400; 0: no limit)",
    )
    add_runtime_flags(p, "requests in flight may take to finish before their connections are closed")
    p.add_argument(
        "--rules-webhook",
        action="store_true",
        help=f"serve POST {WEBHOOK_PATH} on --rules-webhook-port: an admission webhook that refuses a "
        "rules ConfigMap check-config would fail (the chart registers it); needs "
        "--rules-webhook-client-ca-file",
    )
    p.add_argument(
        "--rules-webhook-port",
        type=port,
        default=8444,
        help="HTTPS port of the rules webhook, a listener of its own that only answers callers with a "
        "client certificate from --rules-webhook-client-ca-file (default 8444)",
    )
    p.add_argument(
        "--rules-webhook-client-ca-file",
        help="CA of the client certificate the kube-apiserver presents to webhooks (its "
        "AdmissionConfiguration kubeConfigFile): a caller without one gets 401, another CA's "
        "certificate fails the handshake",
    )
    p.add_argument(
        "--rules-webhook-allowed-names",
        type=_names,
        default=(),
        metavar="NAME,...",
        help="common names the webhook's client certificate may carry (default: any from the CA); "
        "another name gets 403",
    )
    p.add_argument(
        "--rules-webhook-key",
        default="config.yaml",
        help="the ConfigMap key holding the rules (default config.yaml)",
    )
    p.add_argument(
        "--rules-webhook-timeout",
        type=duration,
        default=timedelta(seconds=8),
        help="how long one review may query Prometheus before its verdict is given without them "
        "(default 8s; keep it below the webhook's timeoutSeconds, 10s)",
    )
    p.add_argument(
        "--rules-webhook-concurrency",
        type=int,
        default=4,
        help="reviews that query Prometheus at once (default 4); a review past that is checked "
        "offline at once and admitted with a warning, never queued behind slower ones",
    )
    add_tls_flags(p, "apiserver.local.config/certificates", "promhpa-adapter.monitoring.svc")
    p.add_argument(
        "--insecure-skip-auth",
        action="store_true",
        help="serve without authentication or authorization (local use; loopback only)",
    )
    p.add_argument(
        "--kubeconfig", help="kubeconfig for the Kubernetes API (default: in-cluster, then ~/.kube/config)"
    )
    p.add_argument(
        "--auth-cache-ttl",
        type=duration,
        default=timedelta(seconds=10),
        help="how long TokenReview and SubjectAccessReview answers are reused (default 10s)",
    )
    add_log_flags(p)


def _team_limit_flags(team: argparse._ArgumentGroup) -> None:
    """What one namespace's MetricRules may cost the adapter and the shared Prometheus
    (docs/rules.md, "Limits"). Each default is ``adapter.team.query_size``'s or ``query_cost``'s."""
    size, cost = SizeLimits(), CostLimits()
    team.add_argument(
        "--team-rule-max-query-length",
        type=positive,
        default=size.max_length,
        metavar="N",
        help=f"characters a MetricRule's query may have; a longer one is Invalid (default {size.max_length})",
    )
    team.add_argument(
        "--team-rule-max-query-depth",
        type=positive,
        default=size.max_depth,
        metavar="N",
        help="how deeply a MetricRule's query may nest (brackets and chained operators), measured "
        f"before parsing; at most {CEILING.max_depth} (default {size.max_depth})",
    )
    team.add_argument(
        "--team-rule-max-query-tokens",
        type=positive,
        default=size.max_tokens,
        metavar="N",
        help=f"tokens a MetricRule's query may have, measured before parsing (default {size.max_tokens})",
    )
    team.add_argument(
        "--team-rule-max-range",
        type=duration,
        metavar="DURATION",
        default=cost.max_range,
        help="the longest window ([...], or a subquery's range) a MetricRule's query may use (default 1h)",
    )
    team.add_argument(
        "--team-rule-max-lookback",
        type=duration,
        metavar="DURATION",
        default=cost.max_lookback,
        help="how far before now a MetricRule's query may read: windows, offsets and @ together (default 6h)",
    )
    team.add_argument(
        "--team-rule-min-subquery-step",
        type=duration,
        metavar="DURATION",
        default=cost.min_subquery_step,
        help="the smallest step a MetricRule's subquery may give (default 15s)",
    )
    team.add_argument(
        "--team-rule-max-series",
        type=positive,
        default=cost.max_series,
        metavar="N",
        help="series one answer to a MetricRule's query may carry; a larger answer is refused "
        f"(422), never truncated (default {cost.max_series})",
    )
    team.add_argument(
        "--team-rule-max-concurrent-queries",
        type=positive,
        default=cost.max_concurrent,
        metavar="N",
        help="a namespace's MetricRule queries sent to Prometheus at once; more wait, within "
        f"--team-rule-query-timeout (default {cost.max_concurrent})",
    )
    team.add_argument(
        "--team-rule-queries-per-second",
        type=float,
        default=cost.queries_per_second,
        metavar="R",
        help="a namespace's MetricRule queries sent per second (answers from the query cache do "
        f"not count); over it, 429 with Retry-After; 0 disables (default {cost.queries_per_second:g})",
    )
    team.add_argument(
        "--team-rule-query-burst",
        type=positive,
        default=cost.burst,
        metavar="N",
        help=f"how many queries a namespace may send at once above its rate (default {cost.burst})",
    )
    team.add_argument(
        "--team-rule-judge-workers",
        type=positive,
        default=None,
        metavar="N",
        help="worker processes that parse and check MetricRules, so a hostile query cannot stall "
        "or crash serving (default: one per core beyond the first, at most 2)",
    )
    team.add_argument(
        "--team-rule-judge-timeout",
        type=duration,
        metavar="DURATION",
        default=timedelta(seconds=2),
        help="how long judging one MetricRule may take; past it the rule is Invalid and its "
        "worker replaced (default 2s)",
    )


def team_limits(a: argparse.Namespace) -> tuple[SizeLimits, CostLimits]:
    """The team rules' limits from the command line; a depth past what the parser survives
    is refused (StartupError in ``server``)."""
    size = SizeLimits(a.team_rule_max_query_length, a.team_rule_max_query_tokens, a.team_rule_max_query_depth)
    for flag, value, ceiling in (
        ("--team-rule-max-query-length", size.max_length, CEILING.max_length),
        ("--team-rule-max-query-tokens", size.max_tokens, CEILING.max_tokens),
        ("--team-rule-max-query-depth", size.max_depth, CEILING.max_depth),
    ):
        if value > ceiling:
            raise ValueError(
                f"{flag}={value} is over {ceiling}, past which the PromQL parser itself is unsafe "
                "(docs/security.md)"
            )
    cost = CostLimits(
        a.team_rule_max_range,
        a.team_rule_max_lookback,
        a.team_rule_min_subquery_step,
        a.team_rule_max_series,
        a.team_rule_max_concurrent_queries,
        a.team_rule_queries_per_second,
        a.team_rule_query_burst,
    )
    return size, cost
