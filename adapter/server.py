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

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import structlog
from aiohttp import web

from adapter.commandline.options import AdapterOptions
from adapter.forwarding.upstreams import Upstreams
from adapter.listeners import StartupError, secure_site, webhook_site
from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_gate import TeamGate
from adapter.metricrules.team_queries import TeamQueries
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
    """What one serving adapter is made of, built from its options (checked where they were
    parsed, ``adapter.commandline.options``); its methods are the application's cleanup
    contexts."""

    def __init__(self, o: AdapterOptions) -> None:
        self.options = o
        self.config = load_rules(o.rules.path)
        self.metrics = AdapterMetrics()
        self.health = Health()
        base = o.prometheus
        ttl = o.rules.query_cache_ttl
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
        self.max_age = o.rules.max_age
        self.registry = Registry(self.config, self.backends, self.max_age)
        self.relister = Relister(self.registry, self.health, self.metrics, o.rules.relist_interval)
        self.upstreams = Upstreams(self.config.upstreams, self.metrics)
        self.requestheader: RequestHeaderConfig | None = None
        self.objects: ObjectCache | None = None
        # MetricRules are judged in worker processes (the watch's and the webhook's), started
        # with the watch or at the first review
        self.judge = RuleJudge(
            self._team_limits(), o.team.judge_workers, o.team.judge_timeout, self.metrics.registry
        )

    def create_app(self) -> web.Application:
        """The application factory: routes, then the contexts that open what they serve."""
        o = self.options
        app = build_app(
            self.config,
            self.registry,
            metrics=self.metrics,
            health=self.health,
            max_inflight=o.listen.max_requests_inflight,
            upstreams=self.upstreams,
        )
        app.cleanup_ctx.append(self.connections)  # before discovery and the Kubernetes client
        app.cleanup_ctx.append(self.kubernetes)
        app.cleanup_ctx.append(self.relister.context)
        app.cleanup_ctx.append(self.upstreams.context(self.health, o.rules.upstream_discovery_interval))
        if o.rules.path and o.rules.reload_interval > 0:
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
        async with prometheus_session(self.options.rules.max_connections) as session:
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
        o = self.options
        kube: Kube | None = None
        if o.listen.insecure_skip_auth:
            log.warning(
                "authentication and authorization are OFF (--insecure-skip-auth)",
                bind_address=o.listen.bind_address,
            )
            if o.kube.kubeconfig:
                kube = Kube(await asyncio.to_thread(load_kube, o.kube.kubeconfig))
        else:
            try:
                kube = Kube(await asyncio.to_thread(load_kube, o.kube.kubeconfig))
                self.requestheader = await load_requestheader_config(kube)
            except (KubeError, OSError, ValueError) as e:
                if kube is not None:
                    await kube.aclose()
                raise StartupError("cannot set up delegated authentication", error=str(e)) from None
            app[AUTHENTICATOR] = Authenticator(kube, self.requestheader, o.kube.auth_cache_ttl).middleware()
        if kube is None:
            if o.team.enabled:
                raise StartupError(
                    "--team-rules needs the Kubernetes API: run in the cluster or give --kubeconfig"
                )
            yield
            return
        self.objects = app[PROVIDERS].lister = ObjectCache(
            kube,
            stale_after=o.kube.informer_stale_after,
            health=self.health,
            metrics=self.metrics.registry,
            watch_idle_timeout=o.kube.informer_watch_idle_timeout,
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                if o.team.enabled:
                    await stack.enter_async_context(self._team_rules(app, kube))
                yield
        finally:
            await self.objects.aclose()
            await kube.aclose()

    def _team_limits(self) -> Limits:
        t = self.options.team
        return Limits(t.per_namespace, t.backends, t.tenants, t.size, t.cost)

    @contextlib.asynccontextmanager
    async def _team_rules(self, app: web.Application, kube: Kube) -> AsyncIterator[None]:
        """MetricRules and ClusterMetricRules, watched and served (``adapter.metricrules.team_watch``)."""
        o = self.options
        watch = TeamRuleWatch(
            kube,
            self._team_limits(),
            self.registry.external_metrics,
            self.registry.custom_resources,
            self.backends,
            self.max_age,
            watch_idle_timeout=o.kube.informer_watch_idle_timeout,
            judge=self.judge,
        )
        self.health.checks.append(watch.not_ready)
        gate = TeamGate(o.team.cost)  # the per-namespace limits on MetricRule queries
        app[PROVIDERS].team = TeamQueries(
            watch, self.backends, o.team.query_timeout, gate, watch.limits.tenants
        )
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

        assert self.options.rules.path is not None  # reloading is set up only for a file
        return RuleReloader(
            self.options.rules.path, swap, registry.relist, counted, self.options.rules.reload_interval
        )

    async def listen(self, runner: web.AppRunner) -> web.TCPSite:
        """The secure port: our certificate, and the front proxy's CA for client certificates."""
        return await secure_site(runner, self.options.listen, self.requestheader)

    async def listen_webhook(self) -> web.AppRunner | None:
        """The rules webhook on a listener of its own (``adapter.serving.rules_webhook``)."""
        w = self.options.webhook
        if not w.enabled:
            return None
        assert w.client_ca_file is not None  # required with the webhook (options)
        reviews = WebhookMetrics(self.metrics.registry)
        reviewer = RulesReviewer(
            self.backends, self.max_age, w.key, timeout=w.timeout, concurrency=w.concurrency, metrics=reviews
        )
        team = MetricRuleReviewer(self.judge, reviews, timeout=w.timeout)
        app = webhook_app(reviewer, w.allowed_names, team)
        return await webhook_site(app, self.options.listen, w.port, w.client_ca_file)


async def serve(o: AdapterOptions) -> int:
    """Start, serve until SIGTERM or SIGINT, drain, stop. Exit 0, or 2 when it cannot start."""
    configure(json=o.log.json, level=o.log.level)
    for event, fields in o.ignored:  # prometheus-adapter's flags that do nothing here
        log.warning(event, **fields)
    stop = stop_signals()
    listen = o.listen
    grace = listen.shutdown_grace_period
    try:
        adapter = Adapter(o)
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
        if listen.health_port:
            probes = ProbeServer(adapter.health, listen.bind_address, listen.health_port)
            probes.start()
        log.info(
            "serving",
            address=f"https://{listen.bind_address}:{listen.secure_port}",
            probes=f"http://{listen.bind_address}:{listen.health_port}" if probes else None,
            rules_webhook=f"https://{listen.bind_address}:{o.webhook.port}" if webhook else None,
            prometheus=o.prometheus.url,
            rules=adapter.config.source,
            custom_rules=len(adapter.config.rules),
            external_rules=len(adapter.config.external_rules),
            gc_frozen_objects=frozen,
        )
        await stop.wait()
        # drain: not ready from now on (the probe process answers 503 at once); still
        # serving new connections for the shutdown delay, while the endpoint leaves kube-proxy
        adapter.health.ready_reason = "shutting down"
        delay = listen.shutdown_delay
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
