"""The secure port both processes serve, as every Kubernetes component's is: the probes
open, every other path authenticated and authorized by the kube-apiserver (``delegated``:
TokenReview, SubjectAccessReview), refusals as ``Status`` objects with the API server's
codes -- 401 without credentials, 403 without the permission, 503 while the API server
cannot be asked. Each process says only who a caller is (the adapter also trusts the front
proxy's headers) and what a request asks for; the order of the checks, the answers and
the logs are here, once. Probe and ``/metrics`` routes are registered here too."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .delegated import User
from .errors import KubeError, status_body

log = structlog.get_logger("secureport")
PROBE_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_response(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> web.Response:
    return web.json_response(status_body(code, reason, message, details), status=code)


def bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else None


def peer_ssl(request: web.Request) -> ssl.SSLObject | None:
    """The connection's TLS object, whose peer certificate the TLS layer verified (if any)."""
    transport = request.transport
    return transport.get_extra_info("ssl_object") if transport else None


@dataclass(frozen=True)
class Gate:
    """Delegated authentication and authorization in front of every path but ``open_paths``.

    ``admit`` answers a request that must be refused before anyone is asked (the adapter's
    malformed API path: 400, as the API server's HTTP layer does); ``forbidden`` words the
    403 as the process's own API server would."""

    authenticate: Callable[[web.Request], Awaitable[User | None]]
    authorize: Callable[[web.Request, User], Awaitable[tuple[bool, str]]]
    forbidden: Callable[[web.Request, User], str]
    open_paths: frozenset[str] = PROBE_PATHS
    admit: Callable[[web.Request], web.StreamResponse | None] | None = None

    def middleware(self) -> Middleware:
        @web.middleware
        async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
            if request.path in self.open_paths:
                return await handler(request)
            if self.admit is not None and (refused := self.admit(request)) is not None:
                return refused
            try:
                user = await self.authenticate(request)
                if user is None:
                    log.info("unauthenticated request", path=request.path, peer=request.remote)
                    return status_response(401, "Unauthorized", "Unauthorized")
                allowed, reason = await self.authorize(request, user)
            except KubeError as e:
                log.warning("delegated auth failed", error=str(e))
                return status_response(503, "ServiceUnavailable", f"delegated auth unavailable: {e}")
            if not allowed:
                log.info(
                    "forbidden", path=request.path, user=user.name, groups=list(user.groups), reason=reason
                )
                message = self.forbidden(request, user) + (f": {reason}" if reason else "")
                return status_response(403, "Forbidden", message)
            return await handler(request)

        return check


def add_probe_routes(
    app: web.Application,
    alive: Callable[[], str | None],
    ready: Callable[[], str | None],
    detail: Callable[[], str] = lambda: "",
) -> None:
    """``/healthz`` and ``/livez`` (500 with the reason when not alive), ``/readyz`` (503 with
    the reason when not ready; ``detail``: lines after the verdict, e.g. a backend down)."""

    async def live(_: web.Request) -> web.Response:
        reason = alive()
        return web.Response(status=500 if reason else 200, text=reason or "ok")

    async def readyz(_: web.Request) -> web.Response:
        reason, more = ready(), detail()
        return web.Response(
            status=503 if reason else 200, text=(reason or "ok") + (f"\n{more}" if more else "")
        )

    app.router.add_get("/healthz", live)
    app.router.add_get("/livez", live)
    app.router.add_get("/readyz", readyz)


def add_metrics_route(app: web.Application, registry: CollectorRegistry) -> None:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", metrics)
