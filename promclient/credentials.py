"""How a request to a Prometheus-compatible backend says who it is and whom it trusts, on
the event loop's side: the TLS context (CA, client certificate, verification) and the
headers (the settings' own, Basic auth encoded once, a bearer token re-read as it rotates).

The synchronous transport (``promsync``) hands the same settings to requests; this module
is the loop side, where every hot-path query goes.
"""

from __future__ import annotations

import base64
import ssl

from shared.rereadfile import RereadFile

from .promsettings import PrometheusSettings


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


class Credentials:
    """The headers every request to one backend carries."""

    def __init__(self, s: PrometheusSettings) -> None:
        self._headers = dict(s.headers)
        if s.basic_auth:
            user, password = s.basic_auth
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers["Authorization"] = f"Basic {basic}"
        self._token = RereadFile(s.token_file) if s.token_file else None

    def headers(self) -> dict[str, str]:
        """The headers for the next request (the same dict while no token file is set: the
        caller must copy before adding to it)."""
        if self._token is None:
            return self._headers
        return {**self._headers, "Authorization": "Bearer " + self._token.text()}
