"""Per-namespace limits on MetricRule queries as they are sent: how many at once, how many
a second, how many series an answer may carry, and how far back an ``@`` pin may reach.

Why per namespace: every team's HPAs share one Prometheus. One team's rule that fires often
or returns a huge answer must not take the others' share. A limit that is hit is a clear
error to the caller (the HPA's condition shows it) and on the rule's status. It is never a
silent truncation or a wait without end:

* concurrency: a query waits for a free slot within the team's query time limit, else 504;
* rate: a token bucket (``queries_per_second``, ``burst``); over it, 429 with Retry-After;
* series: an answer with more series than the limit is refused (422), not truncated.

Answers served from the query cache or joined to an identical query in flight are not sent,
so they are not counted.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from adapter.api.errors import StatusError

from .query_cost import CostLimits


class TeamLimitError(StatusError):
    """A MetricRule's request refused by a per-namespace limit: ``code`` and ``reason`` are
    its Status'; ``retry_after`` seconds for a rate limit."""

    def __init__(self, code: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message, code=code, reason=reason, retry_after=retry_after)


@dataclass
class _Bucket:
    tokens: float
    stamp: float

    def take(self, rate: float, burst: int, now: float) -> float:
        """0 when a token was taken, else the seconds until one is free."""
        self.tokens = min(float(burst), self.tokens + (now - self.stamp) * rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / rate if rate > 0 else math.inf


@dataclass
class TeamGate:
    """The per-namespace state behind the limits (one per adapter process)."""

    limits: CostLimits = field(default_factory=CostLimits)
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _slots: dict[str, asyncio.Semaphore] = field(default_factory=dict)

    def _rate(self, namespace: str) -> None:
        limits = self.limits
        if limits.queries_per_second <= 0:
            return
        now = self.clock()
        bucket = self._buckets.get(namespace)
        if bucket is None:
            bucket = self._buckets[namespace] = _Bucket(float(limits.burst), now)
        wait = bucket.take(limits.queries_per_second, limits.burst, now)
        if wait > 0:
            raise TeamLimitError(
                429,
                "TooManyRequests",
                f"namespace {namespace} sent more than {limits.queries_per_second:g} MetricRule "
                f"queries a second (burst {limits.burst}; --team-rule-queries-per-second, "
                "--team-rule-query-burst); fewer HPAs on the metric, or a longer sync period",
                retry_after=wait,
            )

    @asynccontextmanager
    async def slot(self, namespace: str) -> AsyncIterator[None]:
        """Hold one of the namespace's query slots while its query is sent; the rate is
        counted once a query has a slot. The caller bounds the wait (its query time limit)
        and names this limit when it ran out waiting (``busy``)."""
        limit = self.limits.max_concurrent
        if limit <= 0:
            self._rate(namespace)
            yield
            return
        sem = self._slots.get(namespace)
        if sem is None:
            sem = self._slots[namespace] = asyncio.Semaphore(limit)
        async with sem:
            self._rate(namespace)
            yield

    def busy(self, namespace: str, waited: float) -> TeamLimitError:
        return TeamLimitError(
            504,
            "Timeout",
            f"namespace {namespace} already had {self.limits.max_concurrent} MetricRule queries "
            f"running and none finished within {waited:g}s (--team-rule-max-concurrent-queries)",
        )

    def check_series(self, rule: str, count: int) -> None:
        if count > self.limits.max_series:
            raise TeamLimitError(
                422,
                "Invalid",
                f"{rule}: the answer has {count:,} series, over the limit of {self.limits.max_series:,} "
                "(--team-rule-max-series); aggregate in the query (sum by (...)) so fewer series "
                "come back",
            )
