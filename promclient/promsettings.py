"""A backend's settings and the HTTP error its answers raise: what the client
(``prometheus``), its credentials and the backends' factory share, in a module of their own
so that none of them imports another for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rules.backend import AzureConfig, GoogleConfig, OAuth2Config, SigV4Config, TenantHeader


class PrometheusHTTPError(Exception):
    """A non-2xx answer: its status and body as Prometheus sent them."""

    def __init__(self, status: int, body: bytes, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status} ({body!r})")
        self.status, self.body, self.retry_after = status, body, retry_after


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    ca_file: str | None = None
    token_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    basic_auth: tuple[str, str] | None = None  # (user, password); the password from password_file if set
    password_file: str | None = None  # read again as it rotates (``credentials``)
    method: str = "GET"  # GET: POST only for queries longer than post_over; POST: always
    post_over: int = 4096  # bytes of encoded query; proxies commonly refuse longer URLs
    timeout: float = 10.0  # the whole call's deadline, retry included
    retries: int = 1  # 0 or 1: one more attempt, only inside the deadline
    insecure_skip_verify: bool = False
    name: str = ""  # the rule file's backend name; "" for the command line's
    params: dict[str, str] = field(default_factory=dict)  # sent with every call (Thanos' dedup, ...)
    sigv4: SigV4Config | None = None  # Amazon Managed Service for Prometheus (``sigv4``)
    google: GoogleConfig | None = None  # Google Cloud Managed Service for Prometheus (``google_auth``)
    oauth2: OAuth2Config | None = None  # OAuth2 client credentials (``oauth2``)
    azure: AzureConfig | None = None  # Azure Monitor managed Prometheus (``azure_auth``)
    tenant: TenantHeader | None = None  # the asking namespace's tenant in a header (Mimir's X-Scope-OrgID)

    @property
    def who(self) -> str:
        """How errors name this backend: users with several must know which one failed."""
        return f'backend "{self.name}" at {self.url}' if self.name else f"Prometheus at {self.url}"
