"""How long a backend that asked us to wait is left alone (``promclient.throttle``): pure."""

from __future__ import annotations

from email.utils import formatdate

from promclient.throttle import BACKOFF_CAP
from promclient.throttle import Throttle
from promclient.throttle import retry_after_seconds


def test_retry_after_in_seconds_is_the_wait() -> None:
    assert retry_after_seconds("7", now_epoch=1000.0) == 7.0


def test_retry_after_as_an_http_date_is_the_time_until_it() -> None:
    assert retry_after_seconds(formatdate(1030.0, usegmt=True), now_epoch=1000.0) == 30.0


def test_retry_after_in_the_past_or_unreadable_is_no_wait() -> None:
    assert retry_after_seconds(formatdate(900.0, usegmt=True), now_epoch=1000.0) == 0.0
    assert retry_after_seconds("soon", now_epoch=1000.0) is None
    assert retry_after_seconds(None, now_epoch=1000.0) is None


def test_the_servers_retry_after_is_held_with_at_most_a_fifth_more() -> None:
    low, high = Throttle(rng=lambda: 0.0), Throttle(rng=lambda: 1.0)
    assert low.throttled(100.0, 429, 5.0) == 5.0
    assert high.throttled(100.0, 429, 5.0) == 6.0
    assert low.hold(102.0) == 3.0
    assert low.hold(106.0) == 0.0


def test_without_retry_after_the_backoff_doubles_to_its_cap() -> None:
    t = Throttle(rng=lambda: 0.0)
    waits = [t.throttled(0.0, 429, None) for _ in range(8)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, BACKOFF_CAP, BACKOFF_CAP]


def test_an_answer_starts_the_backoff_again() -> None:
    t = Throttle(rng=lambda: 0.0)
    t.throttled(0.0, 429, None)
    t.throttled(0.0, 429, None)
    t.answered()
    assert t.throttled(10.0, 429, None) == 1.0
    assert t.count == 3


def test_the_reason_names_the_status_and_the_wait_asked() -> None:
    t = Throttle(rng=lambda: 0.0)
    t.throttled(0.0, 503, 4.0)
    assert t.reason == "HTTP 503, Retry-After 4s"
