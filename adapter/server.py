"""The adapter's lifecycle, top to bottom: start, serve, drain, stop.

``Adapter.create_app`` is the application factory. Everything the adapter opens is opened
by one cleanup context, in this order, and closed by it in reverse when the adapter stops:

1. ``connections``: the kept-alive connections to every backend, and the first series
   discovery, sent at once so Prometheus answers it while the rest starts;
2. ``kubernetes``: the client (loaded in a thread: importing it is a third of start-up),
   delegated authentication (the front proxy's CA, TokenReview, SubjectAccessReview) and
   the object informers behind ``*`` + labelSelector;
3. discovery (``Relister``), the rule file's reloader, and the heartbeat the probes read.

``serve`` runs it. SIGTERM and SIGINT are handled from the first line -- a container's
process 1 that installs no handler never receives SIGTERM, and only SIGKILL ends it -- so
a signal during start-up stops it too. The listeners open once every context has started.
On a signal readiness goes false at once; the listeners keep accepting for
``--shutdown-delay`` (while the pod's endpoint leaves every kube-proxy), then close (no new
connection is accepted), requests in flight finish within ``--shutdown-grace-period``, the contexts close
in reverse, and the process exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import time
from collections.abc import AsyncIterator

import structlog
from aiohttp import web

from adapter.commandline import compat
from adapter.commandline.prometheus_flags import prometheus_settings
from adapter.commandline.team_flags import team_limits
from adapter.forwarding.upstreams import Upstreams
from adapter.listeners import StartupError, secure_site, webhook_site
from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_gate import TeamGate
from adapter.metricrules.team_rules import Limits
from adapter.metricrules.team_watch import TeamRuleWatch
from adapter.serving.app import AUTHENTICATOR, PROVIDERS, AdapterMetrics, build_app, prometheus_session
from adapter.serving.auth import Authenticator, RequestHeaderConfig, load_requestheader_config
from adapter.serving.default_rules import DEFAULT_RULES
from adapter.serving.health import Health, ProbeServer
from adapter.serving.objects import ObjectCache
from adapter.serving.providers import Providers
from adapter.serving.registry import Registry
from adapter.serving.relister import Relister
from adapter.serving.reload import RuleReloader
from adapter.serving.rules_webhook import MetricRuleReviewer, RulesReviewer, WebhookMetrics, webhook_app
from promclient.backends import Backends, backend_factory
from promclient.backends import label as backend_label
from promclient.prometheus import Prometheus
from rules import admission
from rules.config import Config, parse_config
from shared import cliflags
from shared.gcpolicy import freeze_startup_heap
from shared.kube.client import Kube
from shared.kube.client import load as load_kube
from shared.kube.errors import KubeError
from shared.lifecycle import stop_signals, until_stopped
from shared.logging import configure

log = structlog.get_logger("adapter")
# the young GC generation's threshold while serving (CPython's default is 700): see shared/gcpolicy
YOUNG_GC_THRESHOLD = 10_000


def load_rules(path: str | None) -> Config:
    """The rule file, refused (``ConfigError``, every error on its own line) on anything the
    rules webhook and ``check-config`` refuse offline (``rules.admission``)."""
    if not path:
        return parse_config(DEFAULT_RULES, "<prometheus-adapter defaults>")
    return admission.load(path)


class Adapter:
    """What one serving adapter is made of, built from its flags (checked here, before
    anything opens); its methods are the application's cleanup contexts."""

    def __init__(self, a: argparse.Namespace) -> None:
        if not cliflags.is_http_url(a.prometheus_url):
            raise StartupError(
                "--prometheus-url must be an http(s) URL, e.g. http://prometheus:9090", got=a.prometheus_url
            )
        errors = compat.apply(a, a.argv, a.set_aside)
        if errors:
            raise StartupError("conflicting flags", errors=errors)
        if a.insecure_skip_auth and not ipaddress.ip_address(a.bind_address).is_loopback:
            raise StartupError("--insecure-skip-auth only binds to loopback", bind_address=a.bind_address)
        if a.rules_webhook and not a.rules_webhook_client_ca_file:
            raise StartupError(
                "--rules-webhook needs --rules-webhook-client-ca-file: the webhook runs submitted "
                "queries against Prometheus, so it only answers the API server's client certificate"
            )
        self.args = a
        self.config = load_rules(a.config)
        self.metrics = AdapterMetrics()
        self.health = Health()
        try:
            base = prometheus_settings(a)
        except (ValueError, OSError) as e:  # two ways to authenticate; an unreadable password file
            raise StartupError(str(e)) from None
        ttl = a.query_cache_ttl.total_seconds()
        try:
            throttled, failed = self.metrics.throttled, self.metrics.credential_failures
            self.backends = Backends(
                Prometheus(
                    base,
                    cache_ttl=ttl,
                    on_query=self.metrics.observe_query,
                    on_throttled=throttled.labels(backend_label("")).inc,
                    on_credentials_failure=failed.labels(backend_label("")).inc,
                ),
                backend_factory(
                    base,
                    ttl,
                    self.metrics.observe_query,
                    lambda n: throttled.labels(n).inc(),
                    lambda n: failed.labels(n).inc(),
                ),
                self.config.backends,
            )
        except (OSError, ValueError) as e:  # e.g. a backend's passwordFile, sigv4 without botocore
            raise StartupError(
                "cannot set up a backend from the rule file", rules=self.config.source, error=str(e)
            ) from None
        self.health.checks.append(self.report_attention)
        self.max_age = a.metrics_max_age or a.metrics_relist_interval
        self.registry = Registry(self.config, self.backends, self.max_age)
        self.relister = Relister(
            self.registry, self.health, self.metrics, a.metrics_relist_interval.total_seconds()
        )
        self.upstreams = Upstreams(self.config.upstreams, self.metrics)
        self.requestheader: RequestHeaderConfig | None = None
        self.objects: ObjectCache | None = None
        try:
            self.team_size_cost = team_limits(a)
        except ValueError as e:
            raise StartupError(str(e)) from None
        # MetricRules are judged in worker processes (the watch's and the webhook's), started
        # with the watch or at the first review
        self.judge = RuleJudge(
            self._team_limits(),
            a.team_rule_judge_workers,
            a.team_rule_judge_timeout.total_seconds(),
            self.metrics.registry,
        )

    def create_app(self) -> web.Application:
        """The application factory: routes, then the contexts that open what they serve."""
        a = self.args
        app = build_app(
            self.config,
            self.registry,
            metrics=self.metrics,
            health=self.health,
            max_inflight=a.max_requests_inflight,
            upstreams=self.upstreams,
        )
        app.cleanup_ctx.append(self.connections)  # before discovery and the Kubernetes client
        app.cleanup_ctx.append(self.kubernetes)
        app.cleanup_ctx.append(self.relister.context)
        app.cleanup_ctx.append(
            self.upstreams.context(self.health, a.upstream_discovery_interval.total_seconds())
        )
        if a.config and a.config_reload_interval.total_seconds() > 0:
            app.cleanup_ctx.append(self.reloader(app[PROVIDERS]).run)
        app.cleanup_ctx.append(self.health.heartbeat)
        return app

    def report_attention(self) -> str | None:
        """A readiness check that never fails: a backend that asks us to wait, or whose
        credentials did not refresh, is not down (the adapter stays ready for the others), but
        /readyz says which one and why."""
        self.health.set_detail("attention", "\n".join(self.backends.attention(time.monotonic())))
        return None

    async def connections(self, _: web.Application) -> AsyncIterator[None]:
        """Connections to every backend; the first discovery goes out on them at once."""
        async with prometheus_session(self.args.prometheus_max_connections) as session:
            self.backends.attach(session)
            first = self.relister.first = asyncio.create_task(self.registry.relist())
            try:
                yield
            finally:
                # a start-up that failed later never awaited it: its outcome is taken here,
                # not left to "Task exception was never retrieved"
                if not first.done():
                    first.cancel()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await first
                self.backends.attach(None)

    async def kubernetes(self, app: web.Application) -> AsyncIterator[None]:
        """The Kubernetes client: delegated authentication, and the object informers."""
        a = self.args
        kube: Kube | None = None
        if a.insecure_skip_auth:
            log.warning(
                "authentication and authorization are OFF (--insecure-skip-auth)", bind_address=a.bind_address
            )
            if a.kubeconfig:
                kube = Kube(await asyncio.to_thread(load_kube, a.kubeconfig)).on_loop()
        else:
            try:
                kube = Kube(
                    await asyncio.to_thread(load_kube, a.kubeconfig)
                ).on_loop()  # reviews from the loop
                self.requestheader = await load_requestheader_config(kube)
            except (KubeError, OSError, ValueError) as e:
                if kube is not None:
                    await kube.aclose()
                raise StartupError("cannot set up delegated authentication", error=str(e)) from None
            app[AUTHENTICATOR] = Authenticator(
                kube, self.requestheader, a.auth_cache_ttl.total_seconds()
            ).middleware()
        if kube is None:
            if a.team_rules:
                raise StartupError(
                    "--team-rules needs the Kubernetes API: run in the cluster or give --kubeconfig"
                )
            yield
            return
        self.objects = app[PROVIDERS].lister = ObjectCache(
            kube,
            stale_after=a.informer_stale_after.total_seconds(),
            health=self.health,
            metrics=self.metrics.registry,
            watch_idle_timeout=a.informer_watch_idle_timeout.total_seconds(),
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                if a.team_rules:
                    await stack.enter_async_context(self._team_rules(app, kube))
                yield
        finally:
            self.objects.close()
            await kube.aclose()

    def _team_limits(self) -> Limits:
        a = self.args
        names = {"" if n.strip() in ("", "default") else n.strip() for n in a.team_rule_backends.split(",")}
        tenants = frozenset(t.strip() for t in a.team_rule_tenants.split(",") if t.strip())
        return Limits(a.team_rules_per_namespace, frozenset(names), tenants, *self.team_size_cost)

    @contextlib.asynccontextmanager
    async def _team_rules(self, app: web.Application, kube: Kube) -> AsyncIterator[None]:
        """MetricRules and ClusterMetricRules, watched and served (``adapter.metricrules.team_watch``)."""
        a = self.args
        watch = TeamRuleWatch(
            kube,
            self._team_limits(),
            self.registry.external_metrics,
            self.registry.custom_resources,
            self.backends,
            self.max_age,
            watch_idle_timeout=a.informer_watch_idle_timeout.total_seconds(),
            judge=self.judge,
        )
        providers = app[PROVIDERS]
        providers.team, providers.team_query_timeout = watch, a.team_rule_query_timeout.total_seconds()
        providers.team_tenants = watch.limits.tenants
        providers.team_gate = TeamGate(self.team_size_cost[1])
        async with contextlib.asynccontextmanager(watch.context)(app):
            yield

    def reloader(self, providers: Providers) -> RuleReloader:
        m, registry = self.metrics, self.registry

        def swap(new: Config) -> None:
            registry.backends.configure(new.backends)  # may refuse (e.g. a password file): rules stay
            registry.config = providers.config = new
            self.upstreams.configure(new.upstreams)

        def counted(result: str) -> None:
            m.rules_reloads.labels(result).inc()
            if result == "success":
                m.rules_loaded.set_to_current_time()

        interval = self.args.config_reload_interval.total_seconds()
        return RuleReloader(self.args.config, swap, registry.relist, counted, interval)

    async def listen(self, runner: web.AppRunner) -> web.TCPSite:
        """The secure port: our certificate, and the front proxy's CA for client certificates."""
        return await secure_site(runner, self.args, self.requestheader)

    async def listen_webhook(self) -> web.AppRunner | None:
        """The rules webhook on a listener of its own (``adapter.serving.rules_webhook``)."""
        a = self.args
        if not a.rules_webhook:
            return None
        reviews = WebhookMetrics(self.metrics.registry)
        reviewer = RulesReviewer(
            self.backends,
            self.max_age,
            a.rules_webhook_key,
            timeout=a.rules_webhook_timeout.total_seconds(),
            concurrency=a.rules_webhook_concurrency,
            metrics=reviews,
        )
        team = MetricRuleReviewer(self.judge, reviews, timeout=a.rules_webhook_timeout.total_seconds())
        return await webhook_site(webhook_app(reviewer, a.rules_webhook_allowed_names, team), a)


async def serve(a: argparse.Namespace) -> int:
    """Start, serve until SIGTERM or SIGINT, drain, stop. Exit 0, or 2 when it cannot start."""
    level = "debug" if a.v is not None and a.v >= 4 else a.log_level
    configure(json=a.log_format == "json", level=level)
    stop = stop_signals()
    grace = a.shutdown_grace_period.total_seconds()
    try:
        adapter = Adapter(a)
    except StartupError as e:
        log.error(str(e), **e.context)
        return 2
    runner = web.AppRunner(adapter.create_app(), access_log=None, shutdown_timeout=grace)
    webhook: web.AppRunner | None = None
    probes: ProbeServer | None = None
    try:
        # start: every cleanup context, in order (a signal meanwhile stops here)
        if not await until_stopped(runner.setup(), stop):
            log.info("stopped while starting")
            return 0
        # serve: the listeners, the probe process
        await adapter.listen(runner)
        webhook = await adapter.listen_webhook()
        # libraries and configuration out of every GC pass; cached answers out of most (gcpolicy)
        frozen = freeze_startup_heap(young_threshold=YOUNG_GC_THRESHOLD)
        if a.health_port:
            probes = ProbeServer(adapter.health, a.bind_address, a.health_port)
            probes.start()
        log.info(
            "serving",
            address=f"https://{a.bind_address}:{a.secure_port}",
            probes=f"http://{a.bind_address}:{a.health_port}" if probes else None,
            rules_webhook=f"https://{a.bind_address}:{a.rules_webhook_port}" if webhook else None,
            prometheus=a.prometheus_url,
            rules=adapter.config.source,
            custom_rules=len(adapter.config.rules),
            external_rules=len(adapter.config.external_rules),
            gc_frozen_objects=frozen,
        )
        await stop.wait()
        # drain: not ready from now on (the probe process answers 503 at once); still
        # serving new connections for the shutdown delay, while the endpoint leaves kube-proxy
        adapter.health.ready_reason = "shutting down"
        delay = a.shutdown_delay.total_seconds()
        if delay > 0:
            log.info("stopping: not ready, still serving for the shutdown delay", delay_seconds=delay)
            await asyncio.sleep(delay)
        log.info("stopping: draining requests in flight", grace_seconds=grace)
    except StartupError as e:
        log.error(str(e), **e.context)
        return 2
    finally:
        # stop: listeners closed, requests in flight finished (or cut at the grace), then
        # every context closed in reverse
        if webhook is not None:
            await webhook.cleanup()
        await runner.cleanup()
        await asyncio.to_thread(adapter.judge.close)  # the webhook's judges, if the watch had none
        if probes is not None:
            probes.stop()
    log.info("stopped")
    return 0
