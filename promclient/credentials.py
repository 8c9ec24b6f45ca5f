"""How a request to a Prometheus-compatible backend says who it is and whom it trusts, on
the event loop's side: the TLS context (CA, client certificate, verification) and the
headers (the settings' own, Basic auth, a bearer token).

Every credential is a file that rotates under a running adapter, as cert-manager's and the
kubelet's Secrets and projected tokens do: the TLS files are looked at every second (a
``stat`` each) and the context is made again when one changed, the token and password files
are read again every 10 s (``shared.rereadfile``). When the server refuses what we sent (a
TLS failure, 401 or 403), every file is looked at at once, so a rotation that reached the
server before our interval passed costs no failed read (``refresh``).

The synchronous transport (``promsync``) hands the same settings to requests; this module
is the loop side, where every hot-path query goes.
"""

from __future__ import annotations

import base64
import os
import ssl
import time

import structlog

from shared.rereadfile import RereadFile

from .promsettings import PrometheusSettings

TLS_CHECK_SECONDS = 1.0
log = structlog.get_logger("promhpa.prometheus")


def ssl_context(s: PrometheusSettings) -> ssl.SSLContext | bool:
    """The loop side's TLS: the same CA, client certificate and verification as requests'."""
    if s.insecure_skip_verify:
        return False
    if not s.ca_file and not s.client_cert:
        # one verified context with the system's CAs for every such backend (shared.httpclient's, made
        # on first use): another per backend would read the system bundle again, ~16 ms each
        return True
    ctx = ssl.create_default_context(cafile=s.ca_file)
    if s.client_cert:
        ctx.load_cert_chain(s.client_cert, s.client_key)
    return ctx


def _identity(path: str) -> tuple[int, int, int] | None:
    """What changes when a file is rewritten or its Secret's symlink swapped to a new one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class RotatingTLS:
    """One backend's TLS context, made again when its CA, certificate or key file changes.

    ``generation`` counts the contexts made: a client holding connections made under an
    older one closes them (a kept-alive connection would otherwise go on presenting the old
    certificate until it closed). A change that does not load -- the certificate rewritten
    before its key, a file half-written -- keeps the last good context and is tried again at
    the next look."""

    def __init__(self, s: PrometheusSettings, every: float = TLS_CHECK_SECONDS) -> None:
        self._settings, self._every = s, every
        self._files = (
            [] if s.insecure_skip_verify else [f for f in (s.ca_file, s.client_cert, s.client_key) if f]
        )
        self._seen = [_identity(f) for f in self._files]
        self._context = ssl_context(s)  # a file that does not load at start is the caller's error
        self._looked = time.monotonic()
        self.generation = 0
        self.error: str | None = None  # the last change that did not load, until one does

    def context(self) -> ssl.SSLContext | bool:
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
        seen = [_identity(f) for f in self._files]
        if seen == self._seen:
            return False
        try:
            ctx = ssl_context(self._settings)
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
            if self.error is None:
                log.warning("TLS files changed but do not load; keeping the last ones",
                            backend=self._settings.who, files=self._files, error=str(e))  # fmt: skip
            self.error = f"{self._settings.who}: TLS files do not load ({e})"
            return False
        self._seen, self._context, self.error = seen, ctx, None
        self.generation += 1
        log.info("TLS files reloaded", backend=self._settings.who, generation=self.generation)
        return True


class Credentials:
    """The headers every request to one backend carries."""

    def __init__(self, s: PrometheusSettings) -> None:
        self._headers = dict(s.headers)
        self._user = s.basic_auth[0] if s.basic_auth else None
        if s.basic_auth and not s.password_file:
            self._headers["Authorization"] = _basic(*s.basic_auth)
        self._password = RereadFile(s.password_file) if s.basic_auth and s.password_file else None
        self._token = RereadFile(s.token_file) if s.token_file else None

    def headers(self) -> dict[str, str]:
        """The headers for the next request (the same dict while no file is set: the caller
        must copy before adding to it)."""
        if self._token is not None:
            return {**self._headers, "Authorization": "Bearer " + self._token.text()}
        if self._password is not None:
            return {**self._headers, "Authorization": _basic(self._user or "", self._password.text())}
        return self._headers

    def refresh(self) -> bool:
        """Read the token and password files now (the server refused them); True if either
        changed."""
        changed = [f.reread() for f in (self._token, self._password) if f is not None]  # both read
        return any(changed)


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
