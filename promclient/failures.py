"""What went wrong on a call to Prometheus, for the retry decision and for the one line a
user reads: Prometheus' own error text, or the connection's reason."""

from __future__ import annotations

import json
import os
import ssl

from .promsettings import PrometheusHTTPError

_RETRYABLE_STATUS = (502, 503, 504)


def retryable(e: BaseException | None) -> bool:
    """A refused or reset connection, or a 502/503/504: worth one more try, if time is left."""
    if isinstance(e, ConnectionError):
        return True
    return isinstance(e, PrometheusHTTPError) and e.status in _RETRYABLE_STATUS


def refused_credentials(e: BaseException | None) -> bool:
    """The server refused who we are or we refused it: a TLS failure, 401 or 403, or a reset
    (a TLS 1.3 server refuses a client certificate after the handshake, by closing)."""
    if isinstance(e, ssl.SSLError | ConnectionResetError):
        return True
    return isinstance(e, PrometheusHTTPError) and e.status in (401, 403)


def prometheus_error(e: BaseException) -> tuple[int, str] | None:
    """The status code and Prometheus' own error text of a non-2xx answer."""
    if not isinstance(e, PrometheusHTTPError):
        return None
    try:
        body = json.loads(e.body)
        if "error" not in body and "message" in body:  # AWS' gateways (AMP): {"message": ...}
            return e.status, str(body["message"])
        return e.status, f"{body.get('errorType', 'error')}: {body.get('error', '')}"
    except (ValueError, AttributeError):
        return e.status, repr(e.body)


def short(e: BaseException) -> str:
    """What went wrong, in a line: Prometheus' own error, or the connection's reason
    ("Connection refused: Connect call failed ('127.0.0.1', 1)")."""
    parsed = prometheus_error(e)
    text = f"HTTP {parsed[0]}: {parsed[1]}" if parsed else str(e)
    if isinstance(e, OSError) and not isinstance(e, ssl.SSLError) and e.errno and e.strerror:
        # the loop's own wording ("Connect call failed (...)") under the system's name for it
        text = f"{os.strerror(e.errno)}: {e.strerror}"
    return text if len(text) < 300 else text[:300] + "..."
