"""A file whose content rotates under a running process -- a projected ServiceAccount
token, a bearer token or password from a Secret -- read again at most every few seconds.

Kubernetes rewrites projected tokens well before they expire and a mounted Secret within
a minute of its update; a process that reads such a file once (prometheus-adapter's
token, its issue #598) fails an hour later. Reading it on every request costs a system
call per request; every 10 s is well inside any rotation.
"""

from __future__ import annotations

import errno
import time
from pathlib import Path

REREAD_SECONDS = 10.0
# a token, a password or a client secret is one line; a file past this is a mistake (a
# --token-file=/dev/zero must not be read until memory runs out)
SECRET_MAX_BYTES = 2**20


def read_secret(path: str | Path) -> str:
    """The stripped text of a token, password or secret file, read within
    ``SECRET_MAX_BYTES``: a larger one is an OSError naming the path, as a missing one is."""
    with open(path, "rb") as f:
        data = f.read(SECRET_MAX_BYTES + 1)
    if len(data) > SECRET_MAX_BYTES:
        raise OSError(errno.EFBIG, "larger than 1 MiB; a token or password file holds one line", str(path))
    return data.decode("utf-8").strip()


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
            self._read = (now, read_secret(self.path))
        return self._read[1]

    def reread(self) -> bool:
        """Read now, whatever the interval (the server refused what we sent: the file may have
        rotated since); True when the text changed. An unreadable file keeps the last text."""
        before = self._read[1] if self._read is not None else None
        try:
            self._read = (time.monotonic(), read_secret(self.path))
        except OSError:
            return False
        return self._read[1] != before
