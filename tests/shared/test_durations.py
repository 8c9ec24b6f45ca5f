from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta

import pytest

from shared.durations import DurationError
from shared.durations import TimeError
from shared.durations import format_duration
from shared.durations import format_time
from shared.durations import parse_duration
from shared.durations import parse_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("1m30s", timedelta(seconds=90)),
        ("1.5h", timedelta(minutes=90)),
        ("300ms", timedelta(milliseconds=300)),
        ("0", timedelta(0)),
        ("-1s", timedelta(seconds=-1)),
        ("1h2m3s", timedelta(hours=1, minutes=2, seconds=3)),
        (15, timedelta(seconds=15)),
    ],
)
def test_parses_go_durations(text: str | int, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "1d", "m5", "1 m", "abc"])
def test_rejects_bad_durations(text: str) -> None:
    with pytest.raises(DurationError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("d", "text"),
    [
        (timedelta(minutes=1), "1m0s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(milliseconds=300), "300ms"),
        (timedelta(0), "0s"),
        (timedelta(seconds=1.5), "1.5s"),
    ],
)
def test_formats_like_go(d: timedelta, text: str) -> None:
    assert format_duration(d) == text


def test_parses_rfc3339_times_with_offsets_and_fractions() -> None:
    assert parse_time("2026-01-01T12:00:00Z") == datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert parse_time("2026-01-01T13:00:00+01:00") == datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert parse_time("2026-01-01T12:00:00.123456789Z").microsecond == 123456
    assert format_time(parse_time("2026-01-01T12:00:00.5Z")) == "2026-01-01T12:00:00Z"


def test_rejects_bad_times() -> None:
    with pytest.raises(TimeError, match="RFC 3339"):
        parse_time("yesterday")
