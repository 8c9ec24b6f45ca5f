"""What a rule file's backend is, once read (``backend_config`` reads it, with the line and
key of every mistake): where it listens and how promclient proves who we are to it --
headers, TLS, a bearer token, Basic auth, SigV4, Google's or Entra ID's tokens, OAuth2 --
and how it splits tenants. Plain frozen values: promclient builds its settings from them
without knowing the file's format."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110's token
MONITORING_READ = "https://www.googleapis.com/auth/monitoring.read"


@dataclass(frozen=True)
class GoogleConfig:
    """Google Cloud Managed Service for Prometheus: an access token from Application Default
    Credentials on every request (``promclient.google_auth``)."""

    scopes: tuple[str, ...] = (MONITORING_READ,)


# Azure Monitor's managed Prometheus, per cloud: the token audience its query endpoints take
# and the cloud's Entra ID authority (AZURE_AUTHORITY_HOST, as the workload identity webhook
# sets it, wins over the latter)
AZURE_CLOUDS = {
    "AzurePublic": ("https://prometheus.monitor.azure.com", "login.microsoftonline.com"),
    "AzureUSGovernment": ("https://prometheus.monitor.azure.us", "login.microsoftonline.us"),
    "AzureChina": ("https://prometheus.monitor.azure.cn", "login.chinacloudapi.cn"),
}


@dataclass(frozen=True)
class AzureConfig:
    """Azure Monitor managed Prometheus: a Microsoft Entra ID token for the cloud's Prometheus
    audience on every request (``promclient.azure_auth``)."""

    cloud: str = "AzurePublic"
    audience: str | None = None  # None: the cloud's (AZURE_CLOUDS)
    client_id: str | None = None  # a user-assigned managed identity's; None: AZURE_CLIENT_ID or the only one

    @property
    def scope(self) -> str:
        """What Entra ID is asked for: the audience's ``/.default`` scope."""
        return f"{(self.audience or AZURE_CLOUDS[self.cloud][0]).rstrip('/')}/.default"

    @property
    def authority(self) -> str:
        return AZURE_CLOUDS[self.cloud][1]


@dataclass(frozen=True)
class OAuth2Config:
    """OAuth2's client-credentials grant: a token from ``token_url`` on every request
    (``promclient.oauth2``)."""

    token_url: str
    client_id: str
    client_secret_file: str
    scopes: tuple[str, ...] = ()
    endpoint_params: tuple[tuple[str, str], ...] = ()  # e.g. audience


@dataclass(frozen=True)
class SigV4Config:
    """Amazon Managed Service for Prometheus: sign every request (``promclient.sigv4``)."""

    region: str
    service: str = "aps"
    role_arn: str | None = None  # assumed on top of the credential chain


@dataclass(frozen=True)
class TenantHeader:
    """One backend, many tenants (Mimir, Cortex, Loki-style ``X-Scope-OrgID``): the header
    names the asking namespace's tenant -- the namespace itself (``from: namespace``) or the
    one ``namespaces`` maps it to -- and ``default`` for requests no namespace asks (nodes,
    namespace objects, listing every namespace's pods, discovery)."""

    default: str
    name: str = "X-Scope-OrgID"
    from_namespace: bool = False
    namespaces: tuple[tuple[str, str], ...] = ()  # namespace -> tenant

    def tenant_for(self, namespace: str | None) -> str:
        if not namespace:
            return self.default
        if self.from_namespace:
            return namespace
        return dict(self.namespaces).get(namespace, self.default)

    def own_tenant(self, namespace: str) -> bool:
        """Whether ``namespace`` has a tenant of its own, not the default one."""
        return bool(namespace) and (self.from_namespace or namespace in dict(self.namespaces))

    def discovery_tenants(self) -> tuple[str, ...]:
        """The tenants discovery asks: the default and every one the map names (``from:
        namespace`` has no list: the default must hold, or federate, the series names)."""
        return tuple(dict.fromkeys((self.default, *(t for _, t in self.namespaces))))


@dataclass(frozen=True)
class Backend:
    """A named Prometheus-compatible endpoint rules can pick (our extension of the format:
    Thanos Querier, Mimir/Cortex tenants, VictoriaMetrics, a second Prometheus)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()  # e.g. X-Scope-OrgID for a Mimir tenant
    params: tuple[tuple[str, str], ...] = ()  # added to every call, e.g. Thanos' partial_response
    timeout: float | None = None  # None: --prometheus-timeout
    method: str | None = None  # None: --prometheus-method
    ca_file: str | None = None
    bearer_token_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    username: str | None = None
    password_file: str | None = None
    insecure_skip_tls_verify: bool = False
    sigv4: SigV4Config | None = None
    google: GoogleConfig | None = None
    oauth2: OAuth2Config | None = None
    azure: AzureConfig | None = None
    tenant_header: TenantHeader | None = None
    line: int = 0
