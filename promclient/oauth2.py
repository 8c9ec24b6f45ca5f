"""OAuth2's client-credentials grant (RFC 6749, 4.4), for a Prometheus behind an OAuth2
gateway (Grafana Cloud, Mimir or VictoriaMetrics behind an OAuth2 proxy, any IdP's resource
server): a token from ``tokenURL`` for ``clientID`` and the secret in ``clientSecretFile``
(read at each fetch, so a rotated Secret is used at the next one), by requests-oauthlib.
Held and refreshed off the event loop as ``cloud_credentials`` says.

oauthlib refuses a token URL over plain HTTP unless ``OAUTHLIB_INSECURE_TRANSPORT=1`` is set
in the adapter's environment (the secret would cross the network in the clear).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rules.backend import OAuth2Config
from shared.rereadfile import read_secret

from .cloud_credentials import CloudCredentials


class OAuth2Token(CloudCredentials):
    scheme = "oauth2"

    def __init__(self, config: OAuth2Config, who: str, on_failure: Callable[[], None] | None = None) -> None:
        super().__init__(who, on_failure)
        self.config = config
        self.source = f"the client credentials of {config.client_id!r} at {config.token_url}"

    def fetch_blocking(self) -> tuple[Any, float | None]:
        from oauthlib.oauth2 import BackendApplicationClient
        from requests_oauthlib import OAuth2Session

        c = self.config
        secret = read_secret(c.client_secret_file)
        session = OAuth2Session(
            client=BackendApplicationClient(client_id=c.client_id), scope=list(c.scopes) or None
        )
        try:
            token = session.fetch_token(
                token_url=c.token_url,
                client_id=c.client_id,
                client_secret=secret,
                include_client_id=False,  # HTTP Basic (client_secret_basic), what servers take by default
                timeout=10,
                # the session's own scope is not sent by fetch_token for this grant (found
                # against Hydra, which then grants none): asked for here, in the body
                **({"scope": list(c.scopes)} if c.scopes else {}),
                **dict(c.endpoint_params),
            )
        finally:
            session.close()
        lasts = token.get("expires_in")
        return str(token["access_token"]), float(lasts) if lasts is not None else None

    def sign(
        self, held: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {held}"}
