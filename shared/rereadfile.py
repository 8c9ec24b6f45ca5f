"""A file whose content rotates under a running process -- a projected ServiceAccount
token, a bearer token or password from a Secret -- read again at most every few seconds.

Kubernetes rewrites projected tokens well before they expire and a mounted Secret within
a minute of its update; a process that reads such a file once (prometheus-adapter's
token, its issue #598) fails an hour later. Reading it on every request costs a system
call per request; every 10 s is well inside any rotation.
"""

from __future__ import annotations

import time
from pathlib import Path

REREAD_SECONDS = 10.0


class RereadFile:
    """The stripped text of ``path``, read on first use and again once ``every`` seconds
    have passed. An unreadable file raises OSError, naming the path, at the read that fails."""

    def __init__(self, path: str | Path, every: float = REREAD_SECONDS) -> None:
        self.path = Path(path)
        self.every = every
        self._read: tuple[float, str] | None = None

    def text(self) -> str:
        now = time.monotonic()
        if self._read is None or now - self._read[0] > self.every:
            self._read = (now, self.path.read_text().strip())
        return self._read[1]

    def reread(self) -> bool:
        """Read now, whatever the interval (the server refused what we sent: the file may have
        rotated since); True when the text changed. An unreadable file keeps the last text."""
        before = self._read[1] if self._read is not None else None
        try:
            self._read = (time.monotonic(), self.path.read_text().strip())
        except OSError:
            return False
        return self._read[1] != before
