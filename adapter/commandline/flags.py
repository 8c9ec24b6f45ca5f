"""The adapter's command line: every flag of ``promhpa-adapter`` and ``check-config``.

Flags keep prometheus-adapter's names where they exist (``compat`` maps the rest of
v0.12.0's). Only parsing lives here (``prometheus_flags`` and ``team_flags`` hold those two
groups); what the flags build is ``server``'s.
"""

from __future__ import annotations

import argparse
from datetime import timedelta

from adapter.serving.rules_webhook import WEBHOOK_PATH
from shared.cliflags import (
    Parser,
    add_input_size_flag,
    add_log_flags,
    add_runtime_flags,
    add_tls_flags,
    duration,
    port,
    port_or_zero,
    positive,
)
from shared.version import promhpa_version

from . import compat
from .prometheus_flags import prometheus_flags
from .team_flags import team_limit_flags


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def check_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="promhpa-adapter check-config",
        description="Validate a rule file; with --prometheus-url, show what each rule serves. A file "
        "of MetricRule manifests gets the verdict the adapter would write on each.",
    )
    p.add_argument(
        "config", help="the rule file (prometheus-adapter format), or MetricRule manifests; - reads stdin"
    )
    prometheus_flags(p, url_help="Prometheus to discover series from (then the flags below say how)")
    p.add_argument(
        "--metrics-max-age",
        type=duration,
        default=timedelta(minutes=10),
        help="how far back discovery looks for series (default %(default)s)",
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
    team_limit_flags(team)
    team.add_argument("--team-rule-backends", default="default", metavar="NAMES", help="as the adapter's")
    add_input_size_flag(p)
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        type=lambda v: "text" if v == "table" else v,
        default="text",
        help="text (the default: the report, then one error a line on stderr), or json / yaml "
        "(one document on stdout: the verdict, every error and warning)",
    )
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = Parser(
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
        help="MetricRules served per namespace at most; the oldest are served (default %(default)s)",
    )
    team.add_argument(
        "--team-rule-backends",
        default="default",
        metavar="NAMES",
        help="comma-separated backends of the rule file a MetricRule may name; 'default' is "
        "--prometheus-url (default: %(default)s)",
    )
    team.add_argument(
        "--team-rule-tenants",
        default="",
        metavar="TENANTS",
        help="comma-separated tenants a MetricRule may read on a backend with a tenantHeader; "
        "empty (the default): only its namespace's own tenant, never the default one",
    )
    team.add_argument(
        "--team-rule-query-timeout",
        type=duration,
        default=timedelta(seconds=5),
        help="how long a MetricRule's query may take before the request fails with 504 (default %(default)s)",
    )
    team_limit_flags(team)
    p.add_argument(
        "--config-reload-interval",
        type=duration,
        default=timedelta(seconds=10),
        help="how often the rule file is checked for changes (default %(default)s; 0 disables): a valid "
        "change is served without a restart, an invalid one is refused and the old rules kept",
    )
    p.add_argument(
        "--metrics-relist-interval",
        type=duration,
        default=timedelta(minutes=10),
        help="how often to rediscover series (default %(default)s; unknown metrics are also looked up "
        "on demand)",
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
        "/readyz (default %(default)s; requests are routed by the rule file's patterns, not by this)",
    )
    p.add_argument(
        "--query-cache-ttl",
        type=duration,
        default=timedelta(seconds=5),
        help="how long query results are reused (default %(default)s; 0 disables)",
    )
    p.add_argument(
        "--secure-port",
        type=port_or_zero,
        default=6443,
        help="HTTPS port of the metrics APIs (default %(default)s; 0: any free port)",
    )
    p.add_argument(
        "--bind-address",
        default="0.0.0.0",
        help="address every listener binds to (default %(default)s)",
    )
    p.add_argument(
        "--health-port",
        type=port_or_zero,
        default=8081,
        help="plain-HTTP port for /healthz, /livez and /readyz, served by a process of its own so "
        "probes never wait behind API load (default %(default)s; 0 disables; the secure port serves "
        "them too)",
    )
    p.add_argument(
        "--max-requests-inflight",
        type=int,
        default=400,
        help="API requests handled at once; more get 429 with Retry-After (default %(default)s; 0: no limit)",
    )
    add_runtime_flags(p, "requests in flight may take to finish before their connections are closed")
    p.add_argument(
        "--shutdown-delay",
        type=duration,
        default=timedelta(0),
        help="on SIGTERM, keep accepting and serving new connections this long while /readyz "
        "fails, before closing the listeners (as kube-apiserver's --shutdown-delay-duration): "
        "the time the pod's endpoint takes to leave every kube-proxy, which otherwise still "
        "sends the aggregator's connections here (default %(default)s; the chart sets 5s)",
    )
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
        "client certificate from --rules-webhook-client-ca-file (default %(default)s)",
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
        help="the ConfigMap key holding the rules (default %(default)s)",
    )
    p.add_argument(
        "--rules-webhook-timeout",
        type=duration,
        default=timedelta(seconds=8),
        help="how long one review may query Prometheus before its verdict is given without them "
        "(default %(default)s; keep it below the webhook's timeoutSeconds, 10s)",
    )
    p.add_argument(
        "--rules-webhook-concurrency",
        type=int,
        default=4,
        help="reviews that query Prometheus at once (default %(default)s); a review past that is checked "
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
        help="how long TokenReview and SubjectAccessReview answers are reused (default %(default)s)",
    )
    add_log_flags(p)
