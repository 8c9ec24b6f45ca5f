"""The serving adapter's options, typed and checked once, where its command line is parsed.

``parse_serve`` is the only place an ``argparse.Namespace`` of ``promhpa-adapter`` exists:
it parses the flags (``flags``), maps prometheus-adapter's onto ours (``compat``), checks
what cannot be honoured together, and hands the rest of the adapter frozen option groups
in seconds, sets and settings objects -- never flag spellings. A refusal is an
``OptionsError`` carrying the log options, so it is said in the format asked for.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from adapter.metricrules.query_cost import CostLimits
from adapter.metricrules.query_size import SizeLimits
from promclient.promsettings import PrometheusSettings
from shared import cliflags
from shared.urls import is_http_url

from . import compat
from .flags import check_parser, serve_parser
from .prometheus_flags import prometheus_settings
from .team_flags import team_limits


@dataclass(frozen=True)
class LogOptions:
    json: bool = False
    level: str = "info"


class OptionsError(Exception):
    """The command line cannot be served as given: one log line (``context`` its fields), exit 2."""

    def __init__(self, message: str, log: LogOptions, **context: Any) -> None:
        super().__init__(message)
        self.log, self.context = log, context


@dataclass(frozen=True)
class ListenOptions:
    """Where and how the APIs, the probes and the webhook listen."""

    bind_address: str
    secure_port: int
    health_port: int  # 0: no probe process
    cert_file: str | None
    key_file: str | None
    cert_dir: str
    cert_dns_name: list[str]  # names the self-signed certificate is for
    cipher_suites: Any  # as shared.tls.server_context takes them
    min_version: Any
    insecure_skip_auth: bool
    max_requests_inflight: int
    shutdown_delay: float  # seconds
    shutdown_grace_period: float


@dataclass(frozen=True)
class KubeOptions:
    kubeconfig: str | None
    auth_cache_ttl: float  # seconds
    informer_stale_after: float
    informer_watch_idle_timeout: float


@dataclass(frozen=True)
class RuleFileOptions:
    """The rule file and how its metrics are found and answered."""

    path: str | None  # None: prometheus-adapter's default rules
    reload_interval: float  # seconds; 0: never reloaded
    relist_interval: float
    max_age: timedelta  # how far back discovery looks
    query_cache_ttl: float
    upstream_discovery_interval: float
    max_connections: int  # to one backend at once; 0: no bound


@dataclass(frozen=True)
class WebhookOptions:
    enabled: bool
    port: int
    client_ca_file: str | None
    allowed_names: tuple[str, ...]
    key: str  # the ConfigMap key holding the rules
    timeout: float
    concurrency: int


@dataclass(frozen=True)
class TeamOptions:
    """MetricRules: whether they are watched, and every limit they are held to."""

    enabled: bool
    per_namespace: int
    backends: frozenset[str]  # "" is --prometheus-url's
    tenants: frozenset[str]
    query_timeout: float
    judge_workers: int
    judge_timeout: float
    size: SizeLimits
    cost: CostLimits


@dataclass(frozen=True)
class AdapterOptions:
    prometheus: PrometheusSettings
    listen: ListenOptions
    kube: KubeOptions
    rules: RuleFileOptions
    webhook: WebhookOptions
    team: TeamOptions
    log: LogOptions
    # prometheus-adapter's flags accepted and ignored, said once logging is set up
    ignored: tuple[tuple[str, dict[str, str]], ...] = ()


def _names(text: str) -> frozenset[str]:
    return frozenset("" if n.strip() in ("", "default") else n.strip() for n in text.split(","))


def parse_serve(argv: Sequence[str]) -> AdapterOptions:
    """``promhpa-adapter [serve] FLAGS...`` as option groups (argparse exits 2 on a flag it
    does not know); ``OptionsError`` for flags that parse but cannot be served together."""
    kept, set_aside = compat.split_unknown(list(argv))
    a = serve_parser().parse_args(kept)
    level = "debug" if a.v is not None and a.v >= 4 else a.log_level
    log = LogOptions(json=a.log_format == "json", level=level)
    if not is_http_url(a.prometheus_url):
        raise OptionsError(
            "--prometheus-url must be an http(s) URL, e.g. http://prometheus:9090", log, got=a.prometheus_url
        )
    overrides, errors, ignored = compat.translate(a, kept, set_aside)
    vars(a).update(overrides)
    if errors:
        raise OptionsError("conflicting flags", log, errors=errors)
    if a.insecure_skip_auth and not ipaddress.ip_address(a.bind_address).is_loopback:
        raise OptionsError("--insecure-skip-auth only binds to loopback", log, bind_address=a.bind_address)
    if a.rules_webhook and not a.rules_webhook_client_ca_file:
        raise OptionsError(
            "--rules-webhook needs --rules-webhook-client-ca-file: the webhook runs submitted "
            "queries against Prometheus, so it only answers the API server's client certificate",
            log,
        )
    try:
        prometheus = prometheus_settings(a)
        size, cost = team_limits(a)
    except (ValueError, OSError) as e:  # two ways to authenticate; an unreadable file; a limit
        raise OptionsError(str(e), log) from None
    relist = a.metrics_relist_interval.total_seconds()
    return AdapterOptions(
        prometheus=prometheus,
        listen=ListenOptions(
            bind_address=a.bind_address,
            secure_port=a.secure_port,
            health_port=a.health_port,
            cert_file=a.tls_cert_file,
            key_file=a.tls_private_key_file,
            cert_dir=a.cert_dir,
            cert_dns_name=a.cert_dns_name,
            cipher_suites=a.tls_cipher_suites,
            min_version=a.tls_min_version,
            insecure_skip_auth=a.insecure_skip_auth,
            max_requests_inflight=a.max_requests_inflight,
            shutdown_delay=a.shutdown_delay.total_seconds(),
            shutdown_grace_period=a.shutdown_grace_period.total_seconds(),
        ),
        kube=KubeOptions(
            kubeconfig=a.kubeconfig,
            auth_cache_ttl=a.auth_cache_ttl.total_seconds(),
            informer_stale_after=a.informer_stale_after.total_seconds(),
            informer_watch_idle_timeout=a.informer_watch_idle_timeout.total_seconds(),
        ),
        rules=RuleFileOptions(
            path=a.config,
            reload_interval=a.config_reload_interval.total_seconds(),
            relist_interval=relist,
            max_age=a.metrics_max_age or a.metrics_relist_interval,
            query_cache_ttl=a.query_cache_ttl.total_seconds(),
            upstream_discovery_interval=a.upstream_discovery_interval.total_seconds(),
            max_connections=a.prometheus_max_connections,
        ),
        webhook=WebhookOptions(
            enabled=a.rules_webhook,
            port=a.rules_webhook_port,
            client_ca_file=a.rules_webhook_client_ca_file,
            allowed_names=tuple(a.rules_webhook_allowed_names),
            key=a.rules_webhook_key,
            timeout=a.rules_webhook_timeout.total_seconds(),
            concurrency=a.rules_webhook_concurrency,
        ),
        team=TeamOptions(
            enabled=a.team_rules,
            per_namespace=a.team_rules_per_namespace,
            backends=_names(a.team_rule_backends),
            tenants=frozenset(t.strip() for t in a.team_rule_tenants.split(",") if t.strip()),
            query_timeout=a.team_rule_query_timeout.total_seconds(),
            judge_workers=a.team_rule_judge_workers,
            judge_timeout=a.team_rule_judge_timeout.total_seconds(),
            size=size,
            cost=cost,
        ),
        log=log,
        ignored=tuple(ignored),
    )


@dataclass(frozen=True)
class CheckOptions:
    """``check-config``'s: the file, how to report, and what to check it against."""

    config: str  # as given ("-": standard input)
    output: str  # text, json or yaml
    kubeconfig: str | None
    prometheus: PrometheusSettings | None  # None: offline
    max_age: timedelta
    team_backends: frozenset[str]
    team_size: SizeLimits
    team_cost: CostLimits
    judge_timeout: float


def parse_check(argv: Sequence[str]) -> CheckOptions:
    """``promhpa-adapter check-config FLAGS... FILE`` as options (argparse exits 2 on a flag
    it does not know); ``ValueError`` or ``OSError`` naming the flag for one that parses but
    cannot be used. Sets the input size bound for every file read after it."""
    c = check_parser().parse_args(list(argv))
    cliflags.apply_input_size(c)
    prometheus = None
    if c.prometheus_url:
        if not is_http_url(c.prometheus_url):
            raise ValueError(
                f"--prometheus-url={c.prometheus_url} is not an http(s) URL (e.g. http://prometheus:9090)"
            )
        prometheus = prometheus_settings(c)
    size, cost = team_limits(c)
    return CheckOptions(
        config=c.config,
        output=c.output,
        kubeconfig=c.kubeconfig,
        prometheus=prometheus,
        max_age=c.metrics_max_age,
        team_backends=_names(c.team_rule_backends),
        team_size=size,
        team_cost=cost,
        judge_timeout=c.team_rule_judge_timeout.total_seconds(),
    )
