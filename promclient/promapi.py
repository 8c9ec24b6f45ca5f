"""What the adapter needs from Prometheus, as a small interface (pure).

Providers, discovery (``registry``) and ``check-config`` depend on ``PrometheusAPI``, not
on a transport: the live implementation is ``prometheus.Prometheus`` (one HTTP exchange
per call on the loop, deadline, cache, coalescing); a test double that replays recorded answers can stand in
where a real Prometheus cannot be made to fail the way the test needs. The answers are
plain values (``Sample``), and failures are two exceptions the HTTP layer turns into 503
and 504 ``Status`` objects.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import NamedTuple, Protocol, TypeVar, cast

T = TypeVar("T")
# Held around a query only when it is sent: an answer from the cache, or from an identical
# query already in flight, passes no gate (``adapter.metricrules.team_gate`` counts what Prometheus does)
Gate = Callable[[], AbstractAsyncContextManager[None]]


class PrometheusUnavailable(Exception):  # noqa: N818 - reads as a state: "Prometheus unavailable"
    """Prometheus could not answer (down, refused, non-200); served as 503."""


class PrometheusRejected(PrometheusUnavailable):
    """Prometheus refused the request as invalid (400/422: a PromQL syntax or type error)."""


class PrometheusThrottled(PrometheusUnavailable):
    """The backend asked us to wait (429, or 503 with Retry-After) and the wait outlasts the
    deadline; served as 503, naming the backend and the wait (``promclient.throttle``)."""


class PrometheusTimeout(PrometheusUnavailable):
    """Prometheus did not answer within the deadline; served as 504."""


class Sample(NamedTuple):
    """One sample of an instant vector (a tuple: a 1,000-pod answer builds 1,000 of them)."""

    labels: dict[str, str]
    value: float
    timestamp: float


class PrometheusAPI(Protocol):
    """Instant queries, series and label names: everything the adapter asks Prometheus."""

    @property
    def url(self) -> str: ...

    async def query(
        self, promql: str, gate: Gate | None = None, namespace: str | None = None
    ) -> list[Sample]:
        """An instant query's vector (a scalar is one sample without labels); ``gate`` is
        entered around the request, if one is sent; ``namespace`` is who asks (its tenant, on
        a backend with one per namespace; None: the default tenant)."""
        ...

    async def series(
        self, match: str, max_age: timedelta, namespace: str | None = None
    ) -> list[dict[str, str]]:
        """The label sets of the series matching ``match`` seen within ``max_age``, as
        ``namespace``'s tenant (None: every tenant discovery asks)."""
        ...

    async def labels(self, match: str | None = None) -> list[str]:
        """Label names (of the series matching ``match``, when given)."""
        ...


def finite(value: float) -> float | None:
    """NaN and +-Inf never reach the wire as quantities."""
    return value if math.isfinite(value) else None


async def gather_all(aws: list[Awaitable[T]]) -> list[T]:
    """All results, or the first failure once every call has ended.

    Not ``asyncio.gather`` failing fast: on 3.11 a failure that lands while the gather is
    being cancelled is raised *instead of* the cancellation, so a stopping discovery loop
    caught it as an outage and never stopped; and failing fast leaves the other calls running
    unowned."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return cast(list[T], results)
