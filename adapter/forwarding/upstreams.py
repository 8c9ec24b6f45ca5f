"""Forwarding to upstream metrics servers: one APIService, several providers.

promhpa owns ``custom.metrics.k8s.io`` and ``external.metrics.k8s.io`` and passes each
request for a metric an upstream's patterns route (``upstream_config``) to that upstream:

- the caller has already been authenticated and authorized by promhpa, exactly as for its
  own metrics; the upstream is called with promhpa's own identity (its ServiceAccount token,
  re-read every 10 s so a rotated one is used, or a client certificate, which rotates with its
  key and the CA bundle: looked at every second, ``shared.tlsfiles``);
- the same path and query go upstream, and the upstream's answer comes back as it was --
  status code and body, a ``Status`` included -- within the upstream's ``timeout``;
- an upstream that does not answer fails only its own metrics: ``503 ServiceUnavailable``
  naming it; it is listed on ``/readyz`` (``[-]upstream NAME ...``) and in
  ``promhpa_adapter_upstream_up``, while promhpa's own metrics and the other upstreams serve;
- discovery (the v1beta1 and v1beta2 resource lists) is the union: each upstream's list is
  read every ``interval`` and the entries its patterns route are added to promhpa's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import structlog
from aiohttp import web

from adapter.api.provider import Forwarded
from adapter.api.requests import MetricRequest
from adapter.api.wire import CUSTOM, EXTERNAL, status
from rules.upstream_config import IN_CLUSTER_TOKEN, Upstream, routed
from shared.httpclient import Connections, Origin
from shared.rereadfile import RereadFile
from shared.tls import client_context
from shared.tlsfiles import TLSFiles

log = structlog.get_logger("adapter.forwarding.upstreams")
_LISTS = ((CUSTOM, "v1beta1"), (CUSTOM, "v1beta2"), (EXTERNAL, "v1beta1"))
MAX_CONNECTIONS = 64  # requests in flight to one upstream at once


class UpstreamClient:
    """One upstream: its connections, credentials and last discovery."""

    def __init__(self, spec: Upstream) -> None:
        self.spec = spec
        self.error: str | None = "not discovered yet"
        self.resources: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._connections: Connections | None = None
        self._origin: Origin | None = None
        self._token: RereadFile | None = None
        self._tls: TLSFiles | None = None
        self._generation = 0

    def _ssl(self) -> ssl.SSLContext | bool:
        if not self.spec.url.startswith("https:"):
            return False
        ctx = client_context(self.spec.ca_file, self.spec.client_cert, self.spec.client_key)
        if self.spec.insecure_skip_tls_verify:
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        return ctx

    def _headers(self) -> dict[str, str]:
        path = self.spec.bearer_token_file
        if path is None and not self.spec.client_cert and Path(IN_CLUSTER_TOKEN).exists():
            path = IN_CLUSTER_TOKEN  # our own ServiceAccount's, by default
        if path is None:
            return {"Accept": "application/json"}
        if self._token is None or self._token.path != Path(path):
            self._token = RereadFile(path)
        return {"Authorization": f"Bearer {self._token.text()}", "Accept": "application/json"}

    async def get(self, path_qs: str) -> tuple[int, bytes]:
        """The upstream's status and body (redirects are answers, not followed); OSError or
        TimeoutError when it does not answer within its ``timeout``."""
        if self._connections is None:
            s = self.spec
            files = [f for f in (s.ca_file, s.client_cert, s.client_key) if f]
            self._tls = TLSFiles(files, self._ssl, f"upstream {s.name!r} at {s.url}")
            self._connections = Connections(max_per_origin=MAX_CONNECTIONS)
            self._origin = Origin.of(s.url, self._tls.context())
        assert self._origin is not None
        assert self._tls is not None
        tls = self._tls.context()
        if self._tls.generation != self._generation:  # rotated: new connections present the new files
            self._generation = self._tls.generation
            self._connections.retire(self._origin)
            self._origin = Origin.of(self.spec.url, tls)
        return await self._connections.request(
            self._origin, "GET", path_qs, self._headers(), timeout=self.spec.timeout
        )

    async def discover(self) -> None:
        """Its resource lists, kept to what its patterns route; on failure the last ones stay."""
        found: dict[tuple[str, str], list[dict[str, Any]]] = {}
        try:
            for group, version in _LISTS:
                code, body = await self.get(f"/apis/{group}/{version}")
                if code == 404:
                    continue  # a server of only one of the APIs, or only one version
                if code != 200:
                    raise OSError(f"{code} on /apis/{group}/{version}: {body[:200]!r}")
                api = "external" if group == EXTERNAL else "custom"
                found[(group, version)] = [
                    r
                    for r in orjson.loads(body).get("resources") or []
                    if self.spec.pattern_for(api, str(r.get("name", "")).rsplit("/", 1)[-1])
                ]
        except (OSError, TimeoutError, ValueError) as e:
            self.error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            return
        self.resources, self.error = found, None

    async def close(self) -> None:
        if self._connections is not None:
            await self._connections.close()


class Upstreams:
    def __init__(self, specs: tuple[Upstream, ...] = (), metrics: Any = None) -> None:
        self.clients: dict[str, UpstreamClient] = {}
        self._retired: list[UpstreamClient] = []  # replaced by a reload: closed by the refresher
        self.metrics = metrics
        self.configure(specs)

    def configure(self, specs: tuple[Upstream, ...]) -> None:
        """The rule file's upstreams (again, after a reload): unchanged ones keep their client."""
        old = self.clients
        self.clients = {}
        for spec in specs:
            kept = old.get(spec.name)
            self.clients[spec.name] = kept if kept is not None and kept.spec == spec else UpstreamClient(spec)
        self._retired += [c for name, c in old.items() if self.clients.get(name) is not c]

    @property
    def specs(self) -> tuple[Upstream, ...]:
        return tuple(c.spec for c in self.clients.values())

    def route(self, api: str, metric: str, namespace: str | None) -> UpstreamClient | None:
        if not self.clients:
            return None
        spec = routed(self.specs, api, metric, namespace)
        return self.clients[spec.name] if spec is not None else None

    async def forward(self, client: UpstreamClient, path_qs: str) -> tuple[int, bytes]:
        """The upstream's answer as it was, or a 503 Status naming it."""
        try:
            code, body = await client.get(path_qs)
        except (OSError, TimeoutError) as e:
            why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            code = 503
            body = orjson.dumps(
                status(
                    503, "ServiceUnavailable", f"upstream {client.spec.name!r} at {client.spec.url}: {why}"
                )
            )
        if self.metrics is not None:
            self.metrics.child(self.metrics.upstream_requests, client.spec.name, str(code)).inc()
        return code, body

    # --- a provider (``adapter.api.provider``), first in the chain: its patterns win ---------

    def resources(self, req: MetricRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for c in self.clients.values():
            out += c.resources.get((req.group, req.version), [])
        return out

    async def answer(self, req: MetricRequest, path_qs: str) -> Forwarded | None:
        """The routed upstream's answer, as it came; None for a request no pattern routes."""
        api = "external" if req.group == EXTERNAL else "custom" if req.group == CUSTOM else ""
        upstream = self.route(api, req.metric, req.namespace) if api and req.metric else None
        if upstream is None:
            return None
        return Forwarded(*await self.forward(upstream, path_qs))

    def report(self) -> str:
        """/readyz lines, and the up metric."""
        lines = []
        for name, c in self.clients.items():
            if self.metrics is not None:
                self.metrics.upstream_up.labels(name).set(0 if c.error else 1)
            lines.append(f"[{'-' if c.error else '+'}]upstream {name} {c.error or 'ok'}")
        return "\n".join(lines)

    async def refresh(self) -> None:
        retired, self._retired = self._retired, []
        for c in retired:
            await c.close()
        await asyncio.gather(*(c.discover() for c in self.clients.values()))

    def context(self, health: Any, interval: float) -> Any:
        """cleanup_ctx: discover every upstream every ``interval`` (and at once); close at the end."""

        async def ctx(_: web.Application) -> AsyncIterator[None]:
            async def loop() -> None:
                while True:
                    await self.refresh()
                    for name, c in self.clients.items():
                        if c.error:
                            log.warning(
                                "upstream not answering; its metrics answer 503", upstream=name, error=c.error
                            )
                    health.set_detail("upstreams", self.report())
                    await asyncio.sleep(interval)

            task = asyncio.create_task(loop())
            yield
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for c in [*self.clients.values(), *self._retired]:
                await c.close()

        return ctx
