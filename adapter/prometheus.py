"""Prometheus access: prometheus-api-client, off the event loop, cached and coalesced.

prometheus-api-client is synchronous (requests), so every call runs in a worker thread
and the aiohttp loop never blocks on Prometheus. Instant-query results are kept for a few
seconds (``--query-cache-ttl``) in a cachetools TTL cache, and identical queries that arrive
while one is in flight share its result: an HPA controller fanning out over many HPAs, or
several controllers, cost Prometheus one query per distinct PromQL per TTL.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import requests
from cachetools import TTLCache
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException

T = TypeVar("T")


class PrometheusUnavailable(Exception):  # noqa: N818 - reads as a state: "Prometheus unavailable"
    """Prometheus could not answer (down, timeout, non-200); served as 503."""


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    ca_file: str | None = None
    token_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    basic_auth: tuple[str, str] | None = None
    method: str = "GET"
    timeout: float = 10.0
    insecure_skip_verify: bool = False


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float
    timestamp: float


class _BearerFromFile(requests.auth.AuthBase):
    """Re-read the token on every request: projected service-account tokens rotate."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = "Bearer " + Path(self.path).read_text().strip()
        return r


def _session(s: PrometheusSettings) -> requests.Session:
    session = requests.Session()
    session.verify = False if s.insecure_skip_verify else (s.ca_file or True)
    if s.client_cert:
        session.cert = (s.client_cert, s.client_key) if s.client_key else s.client_cert
    if s.token_file:
        session.auth = _BearerFromFile(s.token_file)
    return session


class Prometheus:
    """The adapter's only way to Prometheus."""

    def __init__(
        self,
        settings: PrometheusSettings,
        cache_ttl: float = 5.0,
        cache_size: int = 10_000,
        on_query: Callable[[str, float, bool], None] | None = None,
    ) -> None:
        self.settings = settings
        self._client = PrometheusConnect(
            url=settings.url.rstrip("/"),
            headers=dict(settings.headers) or None,
            disable_ssl=settings.insecure_skip_verify,
            auth=settings.basic_auth,
            session=_session(settings),
            timeout=settings.timeout,
            method=settings.method.upper(),
        )
        self._cache: TTLCache[str, list[Sample]] | None = (
            TTLCache(maxsize=cache_size, ttl=cache_ttl) if cache_ttl > 0 else None
        )
        self._inflight: dict[str, asyncio.Future[list[Sample]]] = {}
        self._on_query = on_query or (lambda kind, seconds, ok: None)
        self.cache_hits = 0

    async def _call(self, kind: str, fn: Callable[[], T]) -> T:
        start = time.monotonic()
        try:
            result = await asyncio.to_thread(fn)
        except (requests.RequestException, PrometheusApiClientException, ValueError, KeyError) as e:
            self._on_query(kind, time.monotonic() - start, False)
            raise PrometheusUnavailable(
                f"Prometheus at {self.settings.url} did not answer the {kind}: {_short(e)}"
            ) from None
        self._on_query(kind, time.monotonic() - start, True)
        return result

    async def query(self, promql: str) -> list[Sample]:
        """An instant query; cached for the TTL; concurrent identical queries coalesce."""
        if self._cache is not None and promql in self._cache:
            self.cache_hits += 1
            return self._cache[promql]
        pending = self._inflight.get(promql)
        if pending is not None:
            self.cache_hits += 1
            return await asyncio.shield(pending)
        future: asyncio.Future[list[Sample]] = asyncio.get_running_loop().create_future()
        self._inflight[promql] = future
        try:
            raw = await self._call("query", lambda: self._client.custom_query(promql))
            samples = [_sample(r) for r in raw]
            if self._cache is not None:
                self._cache[promql] = samples
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
            del self._inflight[promql]

    async def series(self, match: str, max_age: timedelta) -> list[dict[str, str]]:
        """Series matching a selector seen within ``max_age`` (discovery; never cached)."""
        end = datetime.now(UTC)
        start = end - max_age
        return await self._call(
            "series", lambda: self._client.get_series(start, end, params={"match[]": match})
        )

    async def ready(self) -> bool:
        try:
            return bool(await self._call("health check", self._client.check_prometheus_connection))
        except PrometheusUnavailable:
            return False


def _short(e: BaseException) -> str:
    text = str(e)
    return text if len(text) < 300 else text[:300] + "..."


def _sample(raw: dict[str, Any]) -> Sample:
    ts, value = raw.get("value", [0, "NaN"])
    return Sample(dict(raw.get("metric", {})), float(value), float(ts))


def finite(value: float) -> float | None:
    """NaN and +-Inf never reach the wire as quantities."""
    return value if math.isfinite(value) else None


async def gather_limited(calls: list[Callable[[], Awaitable[T]]], limit: int = 8) -> list[T]:
    sem = asyncio.Semaphore(limit)

    async def one(c: Callable[[], Awaitable[T]]) -> T:
        async with sem:
            return await c()

    return list(await asyncio.gather(*(one(c) for c in calls)))
