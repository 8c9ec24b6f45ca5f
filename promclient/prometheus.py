"""Prometheus access: cached, coalesced, under one deadline, never blocking the event loop.

One transport: every call -- instant queries, series, range queries, label names -- is one
HTTP exchange on the event loop (``shared.httpclient``). While the adapter serves, the calls
go over the serving loop's own kept-alive connections (``attach``); a tool that runs outside
a serving app (``check-config``, the controller's replay) gets one connection per call from
the same code, so what it checks is what the adapter does: the same TLS, credentials,
tenant headers, POST-over-length rule, deadline and error text. Measured against a real
Prometheus, prometheus-api-client in a thread cost 1.8-2.1 ms of adapter CPU per query and
capped a client at ~360 queries/s; this way costs ~40 us (benchmarks/side_by_side.py shows
the serving figures). The only threads left are the cloud credential libraries' refreshes
(``cloud_credentials``), which are blocking network I/O of their own.

Every call has one hard deadline and at most one retry (``deadline``): the HTTP timeout
and Prometheus' own ``timeout`` parameter are what is left of it.

Instant-query results are kept for a few seconds (``--query-cache-ttl``) in a cachetools
TTL cache, and identical queries that arrive while one is in flight share its result: an
HPA controller fanning out over many HPAs, or several controllers, cost Prometheus one
query per distinct PromQL per TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import orjson
from cachetools import TTLCache

from shared.httpclient import Connections, Origin, form_encode

from .azure_auth import AzureToken
from .cloud_credentials import CloudCredentials
from .credentials import Credentials, RotatingTLS
from .deadline import CallPolicy
from .failures import refused_credentials
from .google_auth import GoogleToken
from .oauth2 import OAuth2Token
from .promapi import (
    Gate,
    PrometheusTimeout,
    PrometheusUnavailable,
    Sample,
    gather_all,
)
from .promsettings import PrometheusHTTPError, PrometheusSettings
from .sigv4 import SigV4

T = TypeVar("T")
__all__ = [
    "Prometheus",
    "PrometheusHTTPError",
    "PrometheusSettings",
    "PrometheusTimeout",
    "PrometheusUnavailable",
    "Sample",
]


class Prometheus:
    """One backend's ``promapi.PrometheusAPI``: the adapter's, check-config's and the replay's
    only way to it."""

    def __init__(
        self,
        settings: PrometheusSettings,
        cache_ttl: float = 5.0,
        cache_size: int = 10_000,
        on_query: Callable[[str, float, bool], None] | None = None,
        on_throttled: Callable[[], None] | None = None,
        on_credentials_failure: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.signer: CloudCredentials | None = None  # a cloud's credentials on every request
        if settings.sigv4:
            self.signer = SigV4(settings.sigv4, settings.who, on_credentials_failure)
        elif settings.google:
            self.signer = GoogleToken(settings.google, settings.who, on_credentials_failure)
        elif settings.oauth2:
            self.signer = OAuth2Token(settings.oauth2, settings.who, on_credentials_failure)
        elif settings.azure:
            self.signer = AzureToken(settings.azure, settings.who, on_credentials_failure)
        self._params = dict(settings.params)
        self._http: Connections | None = None
        self._origin_parsed: Origin | None = None
        self._origin_generation = 0
        self._tls = RotatingTLS(settings)
        self._credentials = Credentials(settings)
        # a cloud library's credential refresh is blocking network I/O: it gets a thread
        self._pool = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="prometheus-credentials")
            if self.signer
            else None
        )
        self._cache: TTLCache[str, list[Sample]] | None = (
            TTLCache(maxsize=cache_size, ttl=cache_ttl) if cache_ttl > 0 else None
        )
        self._inflight: dict[str, asyncio.Future[list[Sample]]] = {}
        self.policy = CallPolicy(settings, on_query, on_throttled, self._rotated)
        self.throttle = self.policy.throttle  # what the backend asked (``Backends.attention``)
        self.cache_hits = 0

    def tenant_headers(self, namespace: str | None) -> dict[str, str]:
        """The header naming the tenant ``namespace`` asks as (its own, or the default for
        none); nothing for a backend without ``tenantHeader``."""
        t = self.settings.tenant
        return {} if t is None else {t.name: t.tenant_for(namespace)}

    def _rotated(self, error: BaseException | None) -> bool:
        """The server refused our credentials: are the files newer than what we sent? (A
        rotation the server saw before our next look at the files: worth the one retry.)"""
        if not refused_credentials(error):
            return False
        if self.signer is not None and isinstance(error, PrometheusHTTPError):
            self.signer.refused()  # fetched anew for the retry
            return True
        tls = self._tls.check(now=True)
        return self._credentials.refresh() or tls

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def tls_error(self) -> str | None:
        """Rotated TLS files that do not load (the last good ones are in use), until they do."""
        return self._tls.error

    def attach(self, connections: Connections | None) -> None:
        """Send every call over ``connections`` (the serving loop's, kept alive), or (None)
        over a connection of its own per call, as a tool outside a serving app does."""
        self._http = connections

    async def _get_json(
        self, path: str, params: dict[str, str], left: float, post: bool, tenant: dict[str, str]
    ) -> Any:
        """One call to the HTTP API: the ``data`` of the answer, ``PrometheusHTTPError`` for
        any other status, TimeoutError past ``left`` seconds."""
        if self._http is not None:
            return await self._exchange(self._http, path, params, left, post, tenant)
        # a tool's call: a connection for this exchange alone, closed before returning, so
        # nothing outlives the caller's event loop (``asyncio.run`` per command)
        async with Connections() as own:
            return await self._exchange(own, path, params, left, post, tenant)

    async def _exchange(
        self,
        connections: Connections,
        path: str,
        params: dict[str, str],
        left: float,
        post: bool,
        tenant: dict[str, str],
    ) -> Any:
        headers = {**self._credentials.headers(), **tenant} if tenant else self._credentials.headers()
        query = form_encode(params)
        answer: dict[str, str] = {}
        origin = self._origin()
        method, target, data = ("POST", path, query.encode()) if post else ("GET", f"{path}?{query}", None)
        if post:
            headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
        if self.signer is not None:
            assert self._pool is not None
            held = await self.signer.held(self._pool)
            url = f"{origin.scheme}://{origin.host_header}{origin.prefix}{target}"
            headers = self.signer.sign(held, method, url, headers, data)
        status, body = await connections.request(
            origin, method, target, headers, data, timeout=left, answer=answer
        )
        if status != 200:
            raise PrometheusHTTPError(status, body, answer.get("retry-after"))
        return orjson.loads(body)["data"]

    def _origin(self) -> Origin:
        tls = self._tls.context()
        if self._origin_parsed is None or self._origin_generation != self._tls.generation:
            old, self._origin_parsed = self._origin_parsed, Origin.of(self.settings.url, tls)
            self._origin_generation = self._tls.generation
            if old is not None and self._http is not None:
                self._http.retire(old)  # its connections present the old certificate
        return self._origin_parsed

    def _long(self, promql: str) -> bool:
        """Too long for a URL (or POST asked for): sent as a form body."""
        if self.settings.method.upper() == "POST":
            return True
        limit = self.settings.post_over
        if limit <= 0:
            return False
        if len(promql) > limit:
            return True  # encoding never shortens (and a 13 KB query is not encoded to find out)
        if promql.isascii() and len(promql) * 3 <= limit:
            return False  # percent-encoding at most triples ASCII
        return limit < len(urllib.parse.quote(promql, safe=""))

    async def query_range(
        self, promql: str, start: datetime, end: datetime, step: timedelta, max_points: int = 10_000
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """A range query, in chunks of at most ``max_points`` steps (Prometheus refuses more
        than 11,000 per series), each under the deadline: ``(labels, [(time, value)])`` per
        series, chunks joined."""
        out: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        seconds = step.total_seconds()
        long = self._long(promql)
        tenant = self.tenant_headers(None)
        chunk_start = start
        while chunk_start <= end:
            chunk_end = min(end, chunk_start + step * (max_points - 1))

            async def fetch(left: float, a: datetime = chunk_start, b: datetime = chunk_end) -> Any:
                params = {**self._params, "query": promql, "start": f"{a.timestamp():.3f}",
                          "end": f"{b.timestamp():.3f}", "step": f"{seconds:g}",
                          "timeout": f"{left:.3f}"}  # fmt: skip
                return (await self._get_json("/api/v1/query_range", params, left, long, tenant))["result"]

            raw = await self.policy.call("range query", fetch)
            for r in raw:
                key = tuple(sorted(dict(r.get("metric", {})).items()))
                out.setdefault(key, []).extend((float(t), float(v)) for t, v in r.get("values", []))
            chunk_start = chunk_end + step
        return [(dict(k), v) for k, v in out.items()]

    async def query(
        self, promql: str, gate: Gate | None = None, namespace: str | None = None
    ) -> list[Sample]:
        """An instant query, as ``namespace``'s tenant on a backend with ``tenantHeader``;
        cached for the TTL; concurrent identical queries (of one tenant) coalesce; ``gate`` is
        held while it is sent."""
        tenant = self.tenant_headers(namespace)
        key = promql if not tenant else f"{next(iter(tenant.values()))}\x00{promql}"
        if self._cache is not None and key in self._cache:
            self.cache_hits += 1
            return self._cache[key]
        pending = self._inflight.get(key)
        if pending is not None:
            self.cache_hits += 1
            return await asyncio.shield(pending)
        future: asyncio.Future[list[Sample]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        long = self._long(promql)

        async def fetch(left: float) -> Any:
            params = {**self._params, "query": promql, "timeout": f"{left:.3f}"}
            return (await self._get_json("/api/v1/query", params, left, long, tenant))["result"]

        try:
            async with gate() if gate is not None else contextlib.nullcontext():
                raw = await self.policy.call("query", fetch)
            samples = [_sample(r) for r in raw]
            if self._cache is not None:
                self._cache[key] = samples
            future.set_result(samples)
            return samples
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as e:
            future.set_exception(e)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            del self._inflight[key]

    async def series(
        self, match: str, max_age: timedelta, namespace: str | None = None
    ) -> list[dict[str, str]]:
        """Series matching a selector seen within ``max_age`` (discovery; never cached): as
        ``namespace``'s tenant, or with none, of every tenant discovery asks (the default and
        those ``tenantHeader.namespaces`` names), each series once."""
        t = self.settings.tenant
        if t is None or namespace:
            return await self._series(match, max_age, self.tenant_headers(namespace))
        found: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        for tenant in t.discovery_tenants():
            for labels in await self._series(match, max_age, {t.name: tenant}):
                found.setdefault(tuple(sorted(labels.items())), labels)
        return list(found.values())

    async def _series(self, match: str, max_age: timedelta, tenant: dict[str, str]) -> list[dict[str, str]]:
        end = datetime.now(UTC)
        start = end - max_age
        long = self._long(match)

        async def fetch(left: float) -> Any:
            params = {**self._params, "match[]": match, "timeout": f"{left:.3f}",
                      "start": f"{start.timestamp():.3f}", "end": f"{end.timestamp():.3f}"}  # fmt: skip
            return await self._get_json("/api/v1/series", params, left, long, tenant)

        return cast(list[dict[str, str]], await self.policy.call("series", fetch))

    @property
    def url(self) -> str:
        return self.settings.url

    async def labels(self, match: str | None = None) -> list[str]:
        async def fetch(left: float) -> Any:
            params = {**self._params, **({"match[]": match} if match else {}), "timeout": f"{left:.3f}"}
            return await self._get_json("/api/v1/labels", params, left, False, self.tenant_headers(None))

        return [str(n) for n in await self.policy.call("labels", fetch)]


_new_tuple = tuple.__new__


def _sample(raw: dict[str, Any]) -> Sample:
    ts, value = raw.get("value", [0, "NaN"])
    # the decoded dict is ours; the tuple is built directly (a 1,000-pod answer makes 1,000 of
    # them: 0.40 -> 0.27 ms, measured), which is what Sample(...) does through its __new__
    return _new_tuple(Sample, (raw.get("metric") or {}, float(value), float(ts)))


async def gather_limited(calls: list[Callable[[], Awaitable[T]]], limit: int = 8) -> list[T]:
    sem = asyncio.Semaphore(limit)

    async def one(c: Callable[[], Awaitable[T]]) -> T:
        async with sem:
            return await c()

    return await gather_all([one(c) for c in calls])
