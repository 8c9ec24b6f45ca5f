"""A TLS context made from files that rotate under a running process, as cert-manager's and
the kubelet's Secrets do: the files are looked at (a ``stat`` each) at most every ``every``
seconds, and the context is made again when one changed.

``generation`` counts the contexts made: a client holding connections made under an older
one closes them (a kept-alive connection would otherwise go on presenting the old
certificate until it closed). A change that does not load -- the certificate rewritten
before its key, a file half-written -- keeps the last good context, is said once in the log
and in ``error``, and is tried again at the next look.

Used for every backend's Prometheus (``promclient.credentials``) and every upstream metrics
server the adapter forwards to (``adapter.forwarding.upstreams``).
"""

from __future__ import annotations

import os
import ssl
import time
from collections.abc import Callable, Sequence

import structlog

log = structlog.get_logger("promhpa.tls")
CHECK_SECONDS = 1.0
Context = ssl.SSLContext | bool  # True: the default verified context; False: plain HTTP or unverified


def identity(path: str) -> tuple[int, int, int] | None:
    """What changes when a file is rewritten or its Secret's symlink swapped to a new one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class TLSFiles:
    """``make()``'s context, made again when one of ``files`` changes; ``who`` names the
    server it is for in logs and errors."""

    def __init__(
        self, files: Sequence[str], make: Callable[[], Context], who: str, every: float = CHECK_SECONDS
    ) -> None:
        self._files, self._make, self.who, self._every = list(files), make, who, every
        self._seen = [identity(f) for f in self._files]
        self._context = make()  # a file that does not load at start is the caller's error
        self._looked = time.monotonic()
        self.generation = 0
        self.error: str | None = None  # the last change that did not load, until one does

    def context(self) -> Context:
        self.check()
        return self._context

    def check(self, now: bool = False) -> bool:
        """Look at the files (at most every ``every`` seconds unless ``now``); True when a new
        context was made."""
        if not self._files:
            return False
        at = time.monotonic()
        if not now and at - self._looked < self._every:
            return False
        self._looked = at
        seen = [identity(f) for f in self._files]
        if seen == self._seen:
            return False
        try:
            ctx = self._make()
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            if self.error is None:
                log.warning("TLS files changed but do not load; keeping the last ones",
                            server=self.who, files=self._files, error=str(e))  # fmt: skip
            self.error = f"{self.who}: TLS files do not load ({e})"
            return False
        self._seen, self._context, self.error = seen, ctx, None
        self.generation += 1
        log.info("TLS files reloaded", server=self.who, generation=self.generation)
        return True
