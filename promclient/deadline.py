"""One call to a Prometheus backend under one hard deadline, with at most one retry.

The deadline is ``--prometheus-timeout``, retry included: the call is handed what is left
of it (for its HTTP timeout and Prometheus' own ``timeout`` parameter), and at most
``retries`` (0 or 1) further attempt is made -- only after a refused or reset connection,
a 502/503/504, credentials the server refused that have since rotated, or a backend that
asked us to wait -- and only while time is left. Past the deadline the caller gets
``PrometheusTimeout`` (served as 504) whatever the call is still doing; a backend that asks
us to wait past it (429, or 503 with Retry-After: ``throttle``) gets no query before then.
Each failure ends as one of ``promapi``'s errors, with Prometheus' own words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .failures import prometheus_error, retryable, short
from .promapi import PrometheusRejected, PrometheusThrottled, PrometheusTimeout, PrometheusUnavailable
from .promsettings import PrometheusHTTPError, PrometheusSettings
from .throttle import Throttle, retry_after_seconds

T = TypeVar("T")


def throttled(e: BaseException | None) -> bool:
    """429, or 503 with Retry-After: the backend asks us to wait (a bare 503 is an outage)."""
    return isinstance(e, PrometheusHTTPError) and (
        e.status == 429 or (e.status == 503 and e.retry_after is not None)
    )


class CallPolicy:
    """One backend's deadline, retry and throttling; ``rotated(error)`` says whether
    credentials the server refused have changed since (worth the one retry)."""

    def __init__(
        self,
        settings: PrometheusSettings,
        on_query: Callable[[str, float, bool], None] | None,
        on_throttled: Callable[[], None] | None,
        rotated: Callable[[BaseException | None], bool],
    ) -> None:
        self.settings = settings
        self.throttle = Throttle()
        self._on_query = on_query or (lambda kind, seconds, ok: None)
        self._on_throttled = on_throttled or (lambda: None)
        self._rotated = rotated

    async def call(self, kind: str, call: Callable[[float], Awaitable[T]]) -> T:
        """Await ``call(seconds_left)`` under the deadline, retrying at most once. The call
        keeps the deadline itself (``shared.httpclient`` raises TimeoutError), so no
        ``asyncio.timeout`` wraps it."""
        s = self.settings
        start = time.monotonic()
        deadline = start + s.timeout
        attempts = 1 + min(max(s.retries, 0), 1)
        error: BaseException | None = None
        for attempt in range(attempts):
            if attempt and not (retryable(error) or self._rotated(error) or throttled(error)):
                break
            wait = self.throttle.hold(time.monotonic())
            if wait > 0:  # the backend asked us to wait: no query before that
                if time.monotonic() + wait >= deadline - 0.05:
                    self._on_query(kind, time.monotonic() - start, False)
                    raise self.throttled_error(f", past the {s.timeout:g}s deadline")
                await asyncio.sleep(wait)
            left = deadline - time.monotonic()
            if left <= 0.05:
                break
            try:
                result = await call(left)
            except TimeoutError:
                error = TimeoutError()
                break  # the deadline is spent: no retry can fit
            except (OSError, PrometheusHTTPError) as e:  # refused, reset, TLS, DNS, non-200
                error = e
                if isinstance(e, PrometheusHTTPError) and throttled(e):
                    after = retry_after_seconds(e.retry_after, time.time())
                    self.throttle.throttled(time.monotonic(), e.status, after)
                    self._on_throttled()
                continue
            except (ValueError, KeyError) as e:  # an answer that is not Prometheus' JSON
                error = e
                continue
            self._on_query(kind, time.monotonic() - start, True)
            self.throttle.answered()
            return result
        self._on_query(kind, time.monotonic() - start, False)
        if isinstance(error, TimeoutError) or error is None:
            raise PrometheusTimeout(
                f"{s.who} did not answer the {kind} within {s.timeout:g}s (--prometheus-timeout)"
            )
        if throttled(error):
            raise self.throttled_error()
        parsed = prometheus_error(error)
        if parsed is not None and parsed[0] in (400, 422):
            raise PrometheusRejected(f"{s.who} rejects the {kind}: {parsed[1]}")
        raise PrometheusUnavailable(f"{s.who} did not answer the {kind}: {short(error)}")

    def throttled_error(self, beyond: str = "") -> PrometheusThrottled:
        wait = self.throttle.hold(time.monotonic())
        return PrometheusThrottled(
            f"{self.settings.who} is throttling queries ({self.throttle.reason}): "
            f"not asking again for {wait:.1f}s{beyond}"
        )
