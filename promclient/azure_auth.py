"""Azure Monitor managed service for Prometheus: a Microsoft Entra ID access token for the
cloud's Prometheus audience (``https://prometheus.monitor.azure.com/.default`` in the public
cloud), from Microsoft's own azure-identity (the ``azure`` extra).

Where it comes from, in the order a pod on AKS has them:
- Azure Workload Identity: the webhook mounts a projected service account token
  (``AZURE_FEDERATED_TOKEN_FILE``) and sets ``AZURE_CLIENT_ID``, ``AZURE_TENANT_ID`` and
  ``AZURE_AUTHORITY_HOST``; the token is exchanged at Entra ID as a client assertion;
- otherwise a managed identity: the node's (IMDS, or ``AZURE_POD_IDENTITY_AUTHORITY_HOST``),
  App Service's or Arc's endpoint, the user-assigned one named by ``clientID`` or
  ``AZURE_CLIENT_ID`` if the node has several.

Held and refreshed off the event loop as ``cloud_credentials`` says. Each fetch makes a new
credential object: azure-identity's own cache would hand back the token being replaced (it
asks again only within 5 minutes of expiry, and at most every 30 s), or one the server has
just refused. Fetches come a third of a token's lifetime (at most 5 minutes) before it
expires, so Entra ID is asked about once per token, as the cache would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from rules.backend import AzureConfig

from .cloud_credentials import CloudCredentials


def _identity() -> Any:
    try:
        import azure.identity
    except ImportError as e:
        raise ValueError(
            "azure needs azure-identity: install promhpa with the azure extra (pip install 'promhpa[azure]')"
        ) from e
    return azure.identity


def _managed_identity_source() -> str:
    """Which managed identity endpoint azure-identity (MSAL) will ask, as a user would check it."""
    if "IDENTITY_ENDPOINT" in os.environ and "IMDS_ENDPOINT" in os.environ:
        return "a managed identity (Azure Arc's endpoint, IDENTITY_ENDPOINT)"
    if "IDENTITY_ENDPOINT" in os.environ:
        return "a managed identity (IDENTITY_ENDPOINT)"
    if "MSI_ENDPOINT" in os.environ:
        return "a managed identity (MSI_ENDPOINT)"
    host = os.environ.get("AZURE_POD_IDENTITY_AUTHORITY_HOST")
    return f"a managed identity (IMDS at {host})" if host else "a managed identity (the node's IMDS)"


class AzureToken(CloudCredentials):
    scheme = "azure"

    def __init__(self, config: AzureConfig, who: str, on_failure: Callable[[], None] | None = None) -> None:
        super().__init__(who, on_failure)
        self.config = config
        self._az = _identity()
        self.source = self._source()

    @staticmethod
    def _workload_identity() -> bool:
        return bool(os.environ.get("AZURE_FEDERATED_TOKEN_FILE"))

    def _source(self) -> str:
        if self._workload_identity():
            return "Azure Workload Identity (AZURE_FEDERATED_TOKEN_FILE)"
        return _managed_identity_source()

    def _make(self) -> Any:
        if self._workload_identity():
            # the webhook's AZURE_AUTHORITY_HOST wins; without it, the configured cloud's
            authority = None if os.environ.get("AZURE_AUTHORITY_HOST") else self.config.authority
            return self._az.WorkloadIdentityCredential(client_id=self.config.client_id, authority=authority)
        client_id = self.config.client_id or os.environ.get("AZURE_CLIENT_ID") or None
        return self._az.ManagedIdentityCredential(client_id=client_id)

    def fetch_blocking(self) -> tuple[Any, float | None]:
        credential = self._make()
        try:
            token = credential.get_token(self.config.scope)
        finally:
            credential.close()
        return token.token, token.expires_on - time.time()

    def sign(
        self, held: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {held}"}
