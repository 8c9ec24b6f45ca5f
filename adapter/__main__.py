"""``python -m adapter`` / ``promhpa-adapter``: serve the metrics APIs from Prometheus.

Flags keep prometheus-adapter's names where they exist. ``check-config`` validates a rule
file and, given a Prometheus, shows what each rule would serve.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import ipaddress
import re
import ssl
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from shared import eventloop
from shared.durations import DurationError, parse_duration
from shared.gcpolicy import freeze_startup_heap, pause_collection, resume_collection
from shared.kube.client import Kube
from shared.kube.client import load as load_kube
from shared.kube.discovery import served_resources
from shared.kube.errors import KubeError
from shared.logging import configure
from shared.version import promhpa_version

from . import compat
from .app import AdapterMetrics, build_app, prometheus_session
from .auth import Authenticator, add_client_ca, load_requestheader_config
from .backends import Backends, basic_auth
from .check_config import check_config
from .config import Backend, Config, ConfigError, load_config, parse_config
from .default_rules import DEFAULT_RULES
from .health import Health, ProbeServer
from .objects import ObjectCache
from .prometheus import Prometheus, PrometheusSettings
from .registry import Registry
from .rules_webhook import WEBHOOK_PATH
from .tls import self_signed, server_context

log = structlog.get_logger("adapter")
# the young GC generation's threshold while serving (CPython's default is 700): see shared/gcpolicy
YOUNG_GC_THRESHOLD = 10_000


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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
        type=_duration,
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
        "--prometheus-insecure-skip-verify",
        action="store_true",
        help="do not verify Prometheus' certificate (testing only)",
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


def backend_factory(
    base: PrometheusSettings, cache_ttl: float, on_query: Callable[[str, float, bool], None] | None = None
) -> Callable[[Backend], Prometheus]:
    """Clients for the rule file's backends: what a backend leaves unset comes from the
    command line's Prometheus flags (timeout, method, POST threshold, retries)."""

    def make(spec: Backend) -> Prometheus:
        settings = dataclasses.replace(
            base,
            url=spec.url,
            name=spec.name,
            headers=dict(spec.headers),
            params=dict(spec.params),
            ca_file=spec.ca_file,
            token_file=spec.bearer_token_file,
            client_cert=spec.client_cert,
            client_key=spec.client_key,
            basic_auth=basic_auth(spec),
            insecure_skip_verify=spec.insecure_skip_tls_verify,
            timeout=spec.timeout if spec.timeout is not None else base.timeout,
            method=spec.method or base.method,
        )
        return Prometheus(settings, cache_ttl=cache_ttl, on_query=on_query)

    return make


def check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="promhpa-adapter check-config",
        description="Validate a rule file; with --prometheus-url, show what each rule serves.",
    )
    p.add_argument("config", help="the rule file (prometheus-adapter format)")
    p.add_argument("--prometheus-url", help="Prometheus to discover series from")
    p.add_argument("--metrics-max-age", type=_duration, default=timedelta(minutes=10))
    p.add_argument(
        "--kubeconfig",
        help="check every resource a rule names against this cluster's API discovery "
        "(custom resources included)",
    )
    return p


def _served_resources(kubeconfig: str) -> dict[str, set[str]] | None:
    """The cluster's resources for check-config, or None after saying why (exit 1 follows)."""
    try:
        kube = Kube(load_kube(kubeconfig))
        served, failed = served_resources(kube)
    except KubeError as e:
        print(f"error: cannot read the cluster's resources with {kubeconfig}: {e}", file=sys.stderr)
        return None
    for gv in failed:
        print(f"note: {gv} did not answer discovery; its resources count as absent", file=sys.stderr)
    return served


def serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="promhpa-adapter",
        description=__doc__.splitlines()[0],
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
    p.add_argument(
        "--config-reload-interval",
        type=_duration,
        default=timedelta(seconds=10),
        help="how often the rule file is checked for changes (default 10s; 0 disables): a valid "
        "change is served without a restart, an invalid one is refused and the old rules kept",
    )
    p.add_argument(
        "--metrics-relist-interval",
        type=_duration,
        default=timedelta(minutes=10),
        help="how often to rediscover series (default 10m; unknown metrics are also looked up on demand)",
    )
    p.add_argument(
        "--metrics-max-age",
        type=_duration,
        default=None,
        help="how far back discovery looks for series (default: the relist interval)",
    )
    p.add_argument(
        "--query-cache-ttl",
        type=_duration,
        default=timedelta(seconds=5),
        help="how long query results are reused (default 5s; 0 disables)",
    )
    p.add_argument("--secure-port", type=int, default=6443)
    p.add_argument("--bind-address", default="0.0.0.0")
    p.add_argument(
        "--health-port",
        type=int,
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
    p.add_argument(
        "--rules-webhook",
        action="store_true",
        help=f"serve POST {WEBHOOK_PATH}: an admission webhook that refuses a rules ConfigMap "
        "check-config would fail (the chart registers it)",
    )
    p.add_argument(
        "--rules-webhook-key",
        default="config.yaml",
        help="the ConfigMap key holding the rules (default config.yaml)",
    )
    p.add_argument("--tls-cert-file")
    p.add_argument("--tls-private-key-file")
    p.add_argument(
        "--cert-dir",
        default="apiserver.local.config/certificates",
        help="where the self-signed certificate goes when none is given",
    )
    p.add_argument(
        "--cert-dns-name",
        action="append",
        default=[],
        help="DNS name for the self-signed certificate, e.g. promhpa-adapter.monitoring.svc (repeatable)",
    )
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
        type=_duration,
        default=timedelta(seconds=10),
        help="how long TokenReview and SubjectAccessReview answers are reused (default 10s)",
    )
    p.add_argument("--log-format", choices=("json", "console"), default="json")
    p.add_argument("--log-level", default="info")


def load_rules(path: str | None) -> Config:
    return load_config(path) if path else parse_config(DEFAULT_RULES, "<prometheus-adapter defaults>")


async def _cancelled(task: asyncio.Task[None]) -> None:
    """``task`` ended: cancelled if it still runs, its outcome retrieved either way."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


async def serve(a: argparse.Namespace) -> int:
    async with contextlib.AsyncExitStack() as closing:  # what serving opened, on every way out
        return await _serve(a, closing)


async def _serve(a: argparse.Namespace, closing: contextlib.AsyncExitStack) -> int:
    level = "debug" if a.v is not None and a.v >= 4 else a.log_level
    configure(json=a.log_format == "json", level=level)
    url = urllib.parse.urlsplit(a.prometheus_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        log.error(
            "--prometheus-url must be an http(s) URL, e.g. http://prometheus:9090", got=a.prometheus_url
        )
        return 2
    errors = compat.apply(a, a.argv, a.set_aside)
    if errors:
        for e in errors:
            log.error("conflicting flags", error=e)
        return 2
    # Prometheus first: discovery's series request goes out before the Kubernetes client is
    # imported and configured (a third of start-up, in a worker thread), so Prometheus works
    # on the first discovery while we do -- the aggregator lists the metrics that much sooner
    config = load_rules(a.config)
    metrics = AdapterMetrics()
    base = prometheus_settings(a)
    ttl = a.query_cache_ttl.total_seconds()
    try:
        prometheus = Backends(
            Prometheus(base, cache_ttl=ttl, on_query=metrics.observe_query),
            backend_factory(base, ttl, metrics.observe_query),
            config.backends,
        )
    except OSError as e:  # e.g. a backend's passwordFile
        log.error("cannot set up a backend from the rule file", rules=config.source, error=str(e))
        return 2
    registry = Registry(config, prometheus, a.metrics_max_age or a.metrics_relist_interval)
    session = await closing.enter_async_context(prometheus_session())
    prometheus.attach(session)
    closing.callback(prometheus.attach, None)
    first_discovery = asyncio.create_task(registry.relist())
    closing.push_async_callback(_cancelled, first_discovery)
    kube: Kube | None = None
    middlewares = []
    requestheader = None
    if a.insecure_skip_auth:
        if not ipaddress.ip_address(a.bind_address).is_loopback:
            log.error("--insecure-skip-auth only binds to loopback", bind_address=a.bind_address)
            return 2
        log.warning(
            "authentication and authorization are OFF (--insecure-skip-auth)", bind_address=a.bind_address
        )
        if a.kubeconfig:
            kube = Kube(await asyncio.to_thread(load_kube, a.kubeconfig)).on_loop()
            closing.push_async_callback(kube.aclose)
    else:
        try:
            # reviews from the event loop
            kube = Kube(await asyncio.to_thread(load_kube, a.kubeconfig)).on_loop()
            closing.push_async_callback(kube.aclose)
            requestheader = await load_requestheader_config(kube)
        except (KubeError, OSError, ValueError) as e:
            log.error("cannot set up delegated authentication", error=str(e))
            return 2
        middlewares.append(Authenticator(kube, requestheader, a.auth_cache_ttl.total_seconds()).middleware())
    objects = ObjectCache(kube) if kube is not None else None
    health = Health()
    app = build_app(
        config,
        prometheus,
        registry,
        relist_interval=a.metrics_relist_interval.total_seconds(),
        metrics=metrics,
        lister=objects,
        middlewares=middlewares,
        health=health,
        max_inflight=a.max_requests_inflight,
        rules_webhook_key=a.rules_webhook_key if a.rules_webhook else None,
        config_path=a.config,
        reload_interval=a.config_reload_interval.total_seconds(),
        max_age=a.metrics_max_age or a.metrics_relist_interval,
        session=session,
        first_discovery=first_discovery,
    )
    if a.tls_cert_file and a.tls_private_key_file:
        cert, key = Path(a.tls_cert_file), Path(a.tls_private_key_file)
    else:
        cert, key = self_signed(Path(a.cert_dir), a.cert_dns_name)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        ctx = server_context(cert, key, a.tls_cipher_suites, a.tls_min_version)
    except (OSError, ssl.SSLError) as e:
        log.error("cannot load the serving certificate", cert=str(cert), key=str(key), error=str(e))
        return 2
    if requestheader is not None:
        add_client_ca(ctx, requestheader)
    site = web.TCPSite(runner, a.bind_address, a.secure_port, ssl_context=ctx)
    try:
        await site.start()
    except OSError as e:  # e.g. the port is in use
        log.error("cannot serve", address=f"{a.bind_address}:{a.secure_port}", error=str(e))
        await runner.cleanup()
        return 2
    # libraries and configuration out of every GC pass; cached answers out of most (gcpolicy)
    frozen = freeze_startup_heap(young_threshold=YOUNG_GC_THRESHOLD)
    probes = ProbeServer(health, a.bind_address, a.health_port) if a.health_port else None
    if probes is not None:
        probes.start()
    log.info(
        "serving",
        address=f"https://{a.bind_address}:{a.secure_port}",
        probes=f"http://{a.bind_address}:{a.health_port}" if probes else None,
        prometheus=a.prometheus_url,
        rules=config.source,
        custom_rules=len(config.rules),
        external_rules=len(config.external_rules),
        gc_frozen_objects=frozen,
    )
    try:
        await asyncio.Event().wait()
    finally:
        if probes is not None:
            probes.stop()
        await runner.cleanup()
        if objects is not None:
            objects.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "check-config":
        c = check_parser().parse_args(args[1:])
        served = None
        if c.kubeconfig:
            served = _served_resources(c.kubeconfig)
            if served is None:
                return 1
        prom: Backends | None = None
        if c.prometheus_url:
            base = PrometheusSettings(c.prometheus_url)
            try:
                specs = load_rules(c.config).backends
            except ConfigError:
                specs = ()  # check_config reports it, with file and line
            prom = Backends(Prometheus(base, cache_ttl=0), backend_factory(base, 0), specs)
        return asyncio.run(check_config(c.config, prom, c.metrics_max_age, served))
    if args and args[0] == "serve":
        args = args[1:]
    args, set_aside = compat.split_unknown(args)
    a = serve_parser().parse_args(args)
    a.argv, a.set_aside = args, set_aside
    pause_collection()  # until serving freezes the start-up heap (shared.gcpolicy)
    try:
        return eventloop.run(serve(a))
    except (ConfigError, eventloop.EventLoopError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    finally:
        resume_collection()


if __name__ == "__main__":
    sys.exit(main())
