"""The one error type serving turns into a Kubernetes ``Status``: every provider's failure
leaves the provider chain as a ``StatusError`` (``provider.as_status``), so the handler has
one ``except`` and a new provider cannot invent a status the handler does not know. Pure:
the request parser's errors are ones too."""

from __future__ import annotations


class StatusError(Exception):
    """A request refused: the ``Status``'s code, reason and message, and for a rate limit
    the seconds to wait (``Retry-After``)."""

    code = 500
    reason = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        reason: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if reason is not None:
            self.reason = reason
        self.retry_after = retry_after
