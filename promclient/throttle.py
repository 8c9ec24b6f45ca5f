"""A backend that asks us to wait: managed Prometheus services (Amazon, Google, Azure, Grafana
Cloud) throttle and bill per query, and answer 429 -- or 503 -- with ``Retry-After`` when a
tenant goes over its rate. Asking again at once only extends the throttling, so after such an
answer the client holds every query to that backend until the wait is over: the server's
``Retry-After`` when it gives one, else an exponential backoff (1, 2, 4 ... 60 s), with jitter
so that the held queries do not all go at the same instant afterwards.

Pure: time and the random source are arguments.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Callable
from dataclasses import dataclass, field

BACKOFF_BASE = 1.0
BACKOFF_CAP = 60.0
JITTER = 0.2  # up to 20% more than asked


def retry_after_seconds(value: str | None, now_epoch: float) -> float | None:
    """``Retry-After``'s delay: delta-seconds or an HTTP date (RFC 9110), never negative."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now_epoch)


@dataclass
class Throttle:
    """One backend's hold: until when (monotonic seconds) no query is sent, and why."""

    rng: Callable[[], float] = random.random
    until: float = 0.0
    streak: int = 0  # throttled answers in a row (the backoff's exponent)
    count: int = 0  # throttled answers since start
    reason: str = ""
    _asked: float | None = field(default=None, repr=False)

    def hold(self, now: float) -> float:
        """Seconds left to wait before the next query (0: none)."""
        return max(0.0, self.until - now)

    def throttled(self, now: float, status: int, retry_after: float | None) -> float:
        """A 429 (or a 503 with ``Retry-After``) came back: the hold from now, in seconds."""
        self.streak += 1
        self.count += 1
        if retry_after is not None:
            wait = retry_after
            said = f"Retry-After {retry_after:g}s"
        else:
            wait = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (self.streak - 1))
            said = f"no Retry-After; backoff {wait:g}s"
        wait *= 1 + JITTER * self.rng()
        self.until = max(self.until, now + wait)
        self.reason = f"HTTP {status}, {said}"
        return wait

    def answered(self) -> None:
        """A query was answered: the backoff starts again from its base."""
        self.streak = 0
