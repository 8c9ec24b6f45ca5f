"""How a request to a Prometheus-compatible backend says who it is and whom it trusts, on
the event loop's side: the TLS context (CA, client certificate, verification) and the
headers (the settings' own, Basic auth, a bearer token).

Every credential is a file that rotates under a running adapter, as cert-manager's and the
kubelet's Secrets and projected tokens do: the TLS files are looked at every second (a
``stat`` each) and the context is made again when one changed, the token and password files
are read again every 10 s (``shared.rereadfile``). When the server refuses what we sent (a
TLS failure, 401 or 403), every file is looked at at once, so a rotation that reached the
server before our interval passed costs no failed read (``refresh``).
"""

from __future__ import annotations

import base64
import ssl

from shared.rereadfile import RereadFile
from shared.tls import client_context
from shared.tlsfiles import CHECK_SECONDS, TLSFiles

from .promsettings import PrometheusSettings


def ssl_context(s: PrometheusSettings) -> ssl.SSLContext | bool:
    """The loop side's TLS: the same CA, client certificate and verification as requests'."""
    if s.insecure_skip_verify:
        return False
    if not s.ca_file and not s.client_cert:
        # one verified context with the system's CAs for every such backend (shared.httpclient's, made
        # on first use): another per backend would read the system bundle again, ~16 ms each
        return True
    return client_context(s.ca_file, s.client_cert, s.client_key)


class RotatingTLS(TLSFiles):
    """One backend's TLS context, made again when its CA, certificate or key file changes
    (``shared.tlsfiles``)."""

    def __init__(self, s: PrometheusSettings, every: float = CHECK_SECONDS) -> None:
        files = [] if s.insecure_skip_verify else [f for f in (s.ca_file, s.client_cert, s.client_key) if f]
        super().__init__(files, lambda: ssl_context(s), s.who, every)


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
