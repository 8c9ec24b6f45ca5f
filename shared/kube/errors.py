"""API errors as types, built from the ``Status`` object the API server answers with.

Callers branch on ``isinstance(e, NotFound)`` or ``e.reason``, never on message text;
``e.message`` is the server's own message (what a user sees in ``kubectl``), ``str(e)``
adds the request that failed.
"""

from __future__ import annotations

import json
from typing import Any


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A failure as the API server writes it: the ``Status`` a client turns back into an error."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class KubeError(Exception):
    """A Kubernetes API call failed; ``status`` is the HTTP code (0: no answer)."""

    def __init__(
        self, status: int, message: str, *, reason: str = "", request: str = "", details: Any = None
    ) -> None:
        super().__init__(f"{request}: {message}" if request else message)
        self.status = status
        self.message = message  # the server's message, without the request
        self.reason = reason  # the Status reason, e.g. "NotFound"
        self.request = request  # e.g. "GET /apis/apps/v1/namespaces/x/deployments/y/scale"
        self.details = details or {}


class KubeconfigError(KubeError):
    """The kubeconfig itself is unusable (missing, empty, not YAML, not UTF-8, incomplete):
    an input error, never a traceback; the message names the file and what is wrong."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(0, f"kubeconfig {path}: {problem}")
        self.path = path


class BadRequest(KubeError):  # noqa: N818 - named for the Status reason
    """400."""


class Unauthorized(KubeError):  # noqa: N818 - named for the Status reason
    """401."""


class Forbidden(KubeError):  # noqa: N818 - named for the Status reason
    """403: RBAC refused; the message names the verb, resource and user."""


class NotFound(KubeError):  # noqa: N818 - named for the Status reason
    """404: no such object, or the API group/version is not served."""


class Conflict(KubeError):  # noqa: N818 - named for the Status reason
    """409: a stale resourceVersion, or the object already exists."""


class Gone(KubeError):  # noqa: N818 - named for the Status reason
    """410: the watch's resourceVersion is too old; re-list."""


class TooManyRequests(KubeError):  # noqa: N818 - named for the Status reason
    """429."""


class ServiceUnavailable(KubeError):  # noqa: N818 - named for the Status reason
    """503 (an aggregated API that is down answers this through the aggregator)."""


class Timeout(KubeError):  # noqa: N818 - named for the Status reason
    """504, or no answer within the client's timeout."""


_BY_CODE: dict[int, type[KubeError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    429: TooManyRequests,
    503: ServiceUnavailable,
    504: Timeout,
}


def from_status(
    code: int, body: bytes | str | dict[str, Any] | None, request: str = "", fallback: str = ""
) -> KubeError:
    """The typed error for an answer: the Status' ``code``, ``reason`` and ``message``."""
    status: dict[str, Any] = {}
    if isinstance(body, dict):
        status = body
    elif body:
        try:
            parsed = json.loads(body)
            status = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            status = {}
    code = int(status.get("code") or code or 0)
    message = str(status.get("message") or fallback or f"HTTP {code}")
    cls = _BY_CODE.get(code, KubeError)
    return cls(
        code, message, reason=str(status.get("reason") or ""), request=request, details=status.get("details")
    )
