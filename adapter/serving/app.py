"""The aiohttp application: thin handlers over the providers, Status errors, health, metrics.

Every path under ``/apis`` goes through ``requests.parse_path`` and one call of the provider
chain (``adapter.api.provider``: the upstreams forwarded to, then the rule file and its
MetricRules); every failure leaves it as one ``StatusError``, served as a Kubernetes
``Status`` with the right code, so ``kubectl`` and the HPA
controller show the message instead of "the server could not find the requested resource".
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from adapter.api.errors import StatusError
from adapter.api.provider import Forwarded, MetricsProvider, ProviderChain
from adapter.api.requests import REQUEST_INFO, parse_path
from adapter.api.wire import VERSIONS, group_entry, resource_list, status
from rules.config import Config
from shared.httpclient import Connections
from shared.kube.secureport import add_metrics_route

from .health import Health, inflight_limiter, probe_routes
from .providers import ObjectLister, Providers
from .registry import Registry

log = structlog.get_logger("adapter")


class AdapterMetrics:
    """The adapter's own Prometheus metrics, on a registry of its own (one per app)."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        p = "promhpa_adapter"
        self.requests = Counter(f"{p}_requests_total", "API requests served", ["group", "code"], registry=r)
        self.latency = Histogram(
            f"{p}_request_duration_seconds", "API request latency", ["group"], registry=r
        )
        self.queries = Counter(
            f"{p}_prometheus_queries_total", "Queries sent to Prometheus", ["kind", "result"], registry=r
        )
        self.throttled = Counter(
            f"{p}_prometheus_throttled_total",
            "Answers asking us to wait (429, or 503 with Retry-After), per backend",
            ["backend"],
            registry=r,
        )
        self.credential_failures = Counter(
            f"{p}_credential_refresh_failures_total",
            "Cloud credentials (SigV4) that could not be fetched or refreshed, per backend",
            ["backend"],
            registry=r,
        )
        self.query_latency = Histogram(
            f"{p}_prometheus_query_duration_seconds", "Prometheus query latency", ["kind"], registry=r
        )
        self.cache_hits = Gauge(
            f"{p}_query_cache_hits", "Queries answered from the cache or an in-flight twin", registry=r
        )
        self.discovery_runs = Counter(f"{p}_discovery_runs_total", "Series relists", ["result"], registry=r)
        self.discovery_seconds = Gauge(
            f"{p}_discovery_duration_seconds", "Duration of the last relist", registry=r
        )
        self.series = Gauge(f"{p}_series_known", "Series seen by the last relist", registry=r)
        self.backend_up = Gauge(
            f"{p}_backend_up",
            "1 when the backend answered the last discovery, 0 when it did not",
            ["backend"],
            registry=r,
        )
        self.metrics = Gauge(f"{p}_metrics_known", "Metrics served", ["api"], registry=r)
        self.upstream_up = Gauge(
            f"{p}_upstream_up",
            "1 when the upstream metrics server answered its last discovery, 0 when it did not",
            ["upstream"],
            registry=r,
        )
        self.upstream_requests = Counter(
            f"{p}_upstream_requests_total",
            "Requests forwarded to an upstream, by its answer",
            ["upstream", "code"],
            registry=r,
        )
        self.rules_reloads = Counter(
            f"{p}_rules_reloads_total", "Rule file changes seen, by result", ["result"], registry=r
        )
        self.rules_loaded = Gauge(
            f"{p}_rules_last_reload_success_timestamp_seconds",
            "When the rules being served were loaded",
            registry=r,
        )
        self.rules_loaded.set_to_current_time()

        # labelled children looked up once per label set: ``labels()`` validates and locks on
        # every call (~1 us each, four a request); the label sets are few and fixed
        self._children: dict[tuple[object, ...], Any] = {}

    def child(self, metric: Any, *labels: str) -> Any:
        key = (metric, *labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def observe_query(self, kind: str, seconds: float, ok: bool) -> None:
        self.child(self.queries, kind, "success" if ok else "error").inc()
        self.child(self.query_latency, kind).observe(seconds)

    def count_cache_hits_of(self, prometheus: object) -> None:
        """The cache-hits gauge reads the clients' own count when scraped (every backend's,
        through ``Backends``), instead of being set on every request."""
        self.cache_hits.set_function(lambda: float(getattr(prometheus, "cache_hits", 0)))

    def served(self, group: str, code: int, seconds: float) -> None:
        """One API request answered: its count by group and code, and its latency."""
        self.child(self.requests, group, str(code)).inc()
        self.child(self.latency, group).observe(seconds)


STATE: web.AppKey[dict[str, Any]] = web.AppKey("state", dict)


def _json(body: dict[str, Any], code: int = 200) -> web.Response:
    # orjson: a 1,000-item answer encoded in ~0.5 ms instead of ~5.5 ms with json (measured)
    return web.Response(body=orjson.dumps(body), status=code, content_type="application/json")


def _error(code: int, reason: str, message: str) -> web.Response:
    return _json(status(code, reason, message), code)


_REASONS = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable"}


@web.middleware
async def _status_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Whatever aiohttp itself refuses (no route, wrong method) is a Status too, never text."""
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        reason = _REASONS.get(e.status, "InternalError" if e.status >= 500 else "BadRequest")
        message = f"{e.reason}: {request.method} {request.rel_url.raw_path}"
        return _error(e.status, reason, message)


def prometheus_session(max_per_origin: int = 0) -> Connections:
    """The serving loop's connections to Prometheus (queries and discovery); at most
    ``max_per_origin`` at once to one backend (0: no bound)."""
    # no gzip asked for: answers cross loopback or a cluster network, where compressing them
    # costs Prometheus (and us) more CPU than the bytes cost
    return Connections(max_per_origin=max_per_origin)


# what the application's contexts (``adapter.server``) fill in while it starts
PROVIDERS: web.AppKey[Providers] = web.AppKey("providers", Providers)
AUTHENTICATOR: web.AppKey[Any] = web.AppKey("authenticator", object)


def build_app(
    config: Config,
    registry: Registry,
    *,
    lister: ObjectLister | None = None,
    metrics: AdapterMetrics | None = None,
    health: Health | None = None,
    max_inflight: int = 400,
    upstreams: MetricsProvider | None = None,
) -> web.Application:
    """The metrics APIs' routes and middlewares, nothing that opens or runs: what serving
    needs (connections, discovery, the Kubernetes client, authentication) is opened by the
    contexts ``adapter.server`` adds. ``app[AUTHENTICATOR]``, when a context sets it, checks
    every request but the probes'; ``app[PROVIDERS].lister`` answers ``*`` + labelSelector.
    ``upstreams``: the metrics servers forwarded to, asked before the rule file."""
    m = metrics or AdapterMetrics()
    health = health or Health()
    providers = Providers(config, registry, registry.backends, lister)
    chain = ProviderChain([upstreams, providers] if upstreams is not None else [providers])
    limiter = inflight_limiter(max_inflight, lambda: m.requests.labels("", "429").inc())
    app = web.Application(middlewares=[_status_errors, limiter, _authenticated])
    app[STATE] = {"metrics": m, "registry": registry, "health": health}
    app[PROVIDERS] = providers
    m.count_cache_hits_of(registry.backends)

    async def apis(_: web.Request) -> web.Response:
        return _json(
            {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_entry(g) for g in VERSIONS]}
        )

    async def api_group(request: web.Request) -> web.Response:
        group = request.match_info["group"]
        if group not in VERSIONS:
            return _error(404, "NotFound", f"the API group {group!r} is not served here")
        return _json({"kind": "APIGroup", "apiVersion": "v1", **group_entry(group)})

    async def metrics_api(request: web.Request) -> web.Response:
        start = time.monotonic()
        group = request.match_info.get("group", "")
        # the metrics' group label is one of the served groups: any other text in a path
        # (an authenticated caller's typo or probe) would otherwise mint a label set per request
        label = group if group in VERSIONS else "other"
        code = 200
        try:
            req = parse_path(request.rel_url.raw_path, dict(request.query), request.get(REQUEST_INFO))
            if req.kind == "discovery":
                return _json(resource_list(req.group, req.version, []) | {"resources": chain.resources(req)})
            answer = await chain.answer(req, request.rel_url.raw_path_qs)  # authorized above
            if isinstance(answer, Forwarded):
                code = answer.code
                return web.Response(body=answer.body, status=code, content_type="application/json")
            return _json(answer)
        except StatusError as e:
            code = e.code
            if e.retry_after is None:
                return _error(e.code, e.reason, str(e))
            after = max(1, math.ceil(e.retry_after))  # as the kube-apiserver's 429 says it
            response = _json(status(e.code, e.reason, str(e), {"retryAfterSeconds": after}), e.code)
            response.headers["Retry-After"] = str(after)
            return response
        finally:
            m.served(label, code, time.monotonic() - start)

    probe_routes(app, health)  # also on --health-port, where load cannot delay them
    add_metrics_route(app, m.registry)
    # every request is served by this route: registered first, it is the first candidate the
    # router tries under /apis (the others were each resolved, and refused, before it); no
    # path matches two of these four patterns, so the order changes nothing else
    app.router.add_get("/apis/{group}/{rest:.+}", metrics_api)
    app.router.add_get("/apis", apis)
    app.router.add_get("/apis/", apis)
    app.router.add_get("/apis/{group}", api_group)
    return app


@web.middleware
async def _authenticated(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Delegated authentication and authorization, once a context has set them up (an
    adapter with --insecure-skip-auth never does)."""
    check = request.app.get(AUTHENTICATOR)
    if check is None:
        return await handler(request)
    return await check(request, handler)  # type: ignore[no-any-return]
