"""Google Cloud Managed Service for Prometheus: an OAuth2 access token (scope
``monitoring.read``) from Application Default Credentials -- google-auth's, the ``google``
extra: ``GOOGLE_APPLICATION_CREDENTIALS`` (a service account key, or Workload Identity
Federation's configuration), gcloud's file, or the metadata server (GKE Workload Identity).
Held and refreshed off the event loop as ``cloud_credentials`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from rules.backend import GoogleConfig

from .cloud_credentials import CloudCredentials


def _google_auth() -> Any:
    try:
        import google.auth
        import google.auth.transport.requests
    except ImportError as e:
        raise ValueError(
            "google needs google-auth: install promhpa with the google extra (pip install 'promhpa[google]')"
        ) from e
    return google.auth


# where Application Default Credentials found them, as a user would look for it
_SOURCES = {
    "google.auth.compute_engine.credentials": "the metadata server (GKE Workload Identity)",
    "google.oauth2.service_account": "a service account key (GOOGLE_APPLICATION_CREDENTIALS)",
    "google.auth.identity_pool": "Workload Identity Federation (GOOGLE_APPLICATION_CREDENTIALS)",
    "google.auth.external_account_authorized_user": "an external account (GOOGLE_APPLICATION_CREDENTIALS)",
    "google.oauth2.credentials": "gcloud's user credentials",
    "google.auth.impersonated_credentials": "an impersonated service account",
}


class GoogleToken(CloudCredentials):
    scheme = "google"

    def __init__(self, config: GoogleConfig, who: str, on_failure: Callable[[], None] | None = None) -> None:
        super().__init__(who, on_failure)
        self.source = "Application Default Credentials"  # until google-auth names the kind it found
        self.config = config
        self._ga = _google_auth()
        self._credentials: Any = None
        self._transport: Any = None

    def fetch_blocking(self) -> tuple[Any, float | None]:
        if self._credentials is None:
            credentials, _ = self._ga.default(scopes=list(self.config.scopes))
            self._credentials = credentials
            self._transport = self._ga.transport.requests.Request()
            self.source = _SOURCES.get(type(credentials).__module__, type(credentials).__module__)
        self._credentials.refresh(self._transport)
        expiry = self._credentials.expiry  # naive UTC, as google-auth keeps it
        lasts = (expiry.replace(tzinfo=UTC) - datetime.now(UTC)).total_seconds() if expiry else None
        return self._credentials.token, lasts

    def sign(
        self, held: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {held}"}
