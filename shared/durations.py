"""Go-style durations (``30s``, ``5m``, ``1m30s``, ``1.5h``, ``300ms``) and RFC 3339 times.

Flags and snapshots use Go's duration syntax because kube-controller-manager does; times are
what ``metav1.Time`` marshals (RFC 3339, UTC, second precision).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "μs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    """Not a Go duration; the message shows the expected form."""


# Go's durations are int64 nanoseconds: time.ParseDuration refuses anything longer
_MAX_SECONDS = Decimal(2**63 - 1) / 1_000_000_000
_RANGE = "Go durations stop at 2562047h47m16.854775807s"


def parse_duration(text: str | int | float) -> timedelta:
    """Parse a Go duration string. Bare numbers are seconds (a YAML convenience)."""
    if isinstance(text, bool):
        raise DurationError(f"{text!r} is not a duration (expected e.g. '30s', '5m', '1m30s')")
    if isinstance(text, int | float):
        if not -_MAX_SECONDS <= text <= _MAX_SECONDS:
            raise DurationError(f"{text!r} seconds is out of range ({_RANGE})")
        return timedelta(seconds=text)
    s = text.strip()
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return timedelta(0)
    pos = 0
    total = Decimal(0)
    while pos < len(s):
        m = _PART.match(s, pos)
        if not m:
            raise DurationError(f"{text!r} is not a duration (expected e.g. '30s', '5m', '1m30s', '1.5h')")
        total += Decimal(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise DurationError(f"{text!r} is not a duration (expected e.g. '30s', '5m', '1m30s', '1.5h')")
    if total > _MAX_SECONDS:
        raise DurationError(f"{text!r} is out of range ({_RANGE})")
    micro = int((total * 1_000_000).to_integral_value())
    return timedelta(microseconds=sign * micro)


def _fmt_fraction(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text


def format_duration(d: timedelta) -> str:
    """Go's Duration.String(): ``1m30s``, ``5m0s``, ``1h0m0s``, ``300ms``, ``0s``."""
    micro = d // timedelta(microseconds=1)
    if micro == 0:
        return "0s"
    sign = "-" if micro < 0 else ""
    micro = abs(micro)
    if micro < 1_000_000:
        if micro < 1000:
            return f"{sign}{micro}µs"
        return f"{sign}{_fmt_fraction(Decimal(micro) / 1000)}ms"
    hours, rest = divmod(micro, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = _fmt_fraction(Decimal(rest) / 1_000_000)
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


class TimeError(ValueError):
    """Not an RFC 3339 time."""


_FIRST_YEAR, _LAST_YEAR = 1000, 9000
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(text: str | datetime) -> datetime:
    """Parse an RFC 3339 time into an aware UTC datetime."""
    if isinstance(text, datetime):  # YAML loaders may already have converted it
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    if not isinstance(text, str) or not _RFC3339.match(text):
        raise TimeError(f"{text!r} is not an RFC 3339 time (expected e.g. '2026-01-01T12:00:00Z')")
    norm = text.replace("z", "Z").replace("t", "T")
    if norm.endswith("Z"):
        norm = norm[:-1] + "+00:00"
    frac = re.search(r"\.(\d+)", norm)
    if frac and len(frac.group(1)) > 6:  # Python keeps microseconds; Go keeps nanoseconds
        norm = norm.replace(frac.group(0), "." + frac.group(1)[:6])
    try:
        when = datetime.fromisoformat(norm).astimezone(UTC)
    except (ValueError, OverflowError) as e:
        raise TimeError(f"{text!r} is not a valid time: {e}") from e
    if not _FIRST_YEAR <= when.year <= _LAST_YEAR:
        # the controller subtracts windows of up to 292 years (Go's longest duration) from
        # its clock: a time near year 1 or 9999 would leave the calendar
        raise TimeError(
            f"{text!r} is out of range: times must fall in the years {_FIRST_YEAR} to {_LAST_YEAR}"
        )
    return when


def format_time(t: datetime) -> str:
    """metav1.Time's wire form: RFC 3339 in UTC, whole seconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
