"""Several Prometheus-compatible backends behind one adapter.

A rule file may name backends (``backends:``: Thanos Querier, Mimir/Cortex tenants,
VictoriaMetrics, another Prometheus) and each rule picks one with ``backend:``; a rule
without one uses the command line's ``--prometheus-url`` (the name ``""``). Each backend is
its own client -- its own deadline, thread pool, cache and coalescing -- so one slow or
down backend costs only its own rules: they answer 503/504 while the rest serve. Discovery
and readiness are kept per backend by the registry.

When the rule file is reloaded, a backend whose definition changed gets a new client and
a removed one is closed; unchanged ones keep their caches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from rules.backend import TenantHeader
from rules.config import Backend
from shared.rereadfile import read_secret

from .promapi import PrometheusAPI, PrometheusUnavailable
from .prometheus import Prometheus, PrometheusSettings

Factory = Callable[[Backend], PrometheusAPI]


class Backends:
    """Backend name -> client; ``""`` is the command line's Prometheus."""

    def __init__(
        self, default: PrometheusAPI, factory: Factory | None = None, specs: Iterable[Backend] = ()
    ) -> None:
        self.default = default
        self._factory = factory
        self._clients: dict[str, PrometheusAPI] = {}
        self._specs: dict[str, Backend] = {}
        self._http: object | None = None
        self.configure(specs)

    @classmethod
    def of(cls, prometheus: PrometheusAPI | Backends) -> Backends:
        """Callers with one Prometheus (tests, tools) pass it as is."""
        return prometheus if isinstance(prometheus, Backends) else cls(prometheus)

    def configure(self, specs: Iterable[Backend]) -> None:
        """Match the clients to the rule file's ``backends``."""
        wanted = {b.name: dataclasses.replace(b, line=0) for b in specs}
        for name, spec in wanted.items():
            if self._specs.get(name) == spec:
                continue
            if self._factory is None:
                raise ValueError(f"backend {name!r} is defined but this adapter has no way to connect to it")
            _close(self._clients.get(name))
            self._clients[name] = self._factory(spec)
            _attach(self._clients[name], self._http)
        for name in set(self._clients) - set(wanted):
            _close(self._clients.pop(name))
        self._specs = wanted

    def attach(self, session: object | None) -> None:
        """Every client (and any made later) serves its hot path over the serving loop's
        HTTP session (``prometheus.Prometheus.attach``); None detaches them."""
        self._http = session
        for client in [self.default, *self._clients.values()]:
            _attach(client, session)

    def get(self, name: str) -> PrometheusAPI:
        if not name:
            return self.default
        client = self._clients.get(name)
        if client is None:  # a rule that outlived its backend's removal mid-reload
            raise PrometheusUnavailable(f"backend {name!r} is not defined in the rule file")
        return client

    def names(self) -> list[str]:
        return ["", *self._clients]

    def tenancy(self, name: str) -> TenantHeader | None:
        """The backend's ``tenantHeader``, if it has tenants (the command line's has none)."""
        spec = self._specs.get(name) if name else None
        return spec.tenant_header if spec is not None else None

    @property
    def cache_hits(self) -> int:
        """Queries every backend answered from its cache or an in-flight twin."""
        return sum(getattr(c, "cache_hits", 0) for c in [self.default, *self._clients.values()])

    def attention(self, now: float) -> list[str]:
        """A line per backend that is serving but needs a look: holding its queries because it
        asked us to wait, signing with credentials it could not refresh, or rotated TLS files
        that do not load."""
        lines = []
        for name, client in [("", self.default), *self._clients.items()]:
            throttle = getattr(client, "throttle", None)  # test doubles have none
            if throttle is not None and throttle.hold(now) > 0:
                lines.append(
                    f"[!]backend {label(name)} throttling ({throttle.reason}; "
                    f"{throttle.count} such answers): holding queries for {throttle.hold(now):.1f}s"
                )
            signer = getattr(client, "signer", None)
            if signer is not None and signer.error:
                lines.append(f"[!]backend {label(name)} {signer.error}")
            tls_error = getattr(client, "tls_error", None)
            if tls_error:
                lines.append(f"[!]backend {label(name)} {tls_error}; the last good ones are in use")
        return lines

    def close(self) -> None:
        for name in list(self._clients):
            _close(self._clients.pop(name))
        _close(self.default)


def backend_factory(
    base: PrometheusSettings,
    cache_ttl: float,
    on_query: Callable[[str, float, bool], None] | None = None,
    on_throttled: Callable[[str], None] | None = None,
    on_credentials_failure: Callable[[str], None] | None = None,
) -> Callable[[Backend], Prometheus]:
    """Clients for the rule file's backends: what a backend leaves unset comes from the
    command line's Prometheus flags (timeout, method, POST threshold, retries)."""

    def make(spec: Backend) -> Prometheus:
        settings = dataclasses.replace(
            base,
            url=spec.url,
            name=spec.name,
            headers=dict(spec.headers),
            params=dict(spec.params),
            ca_file=spec.ca_file,
            token_file=spec.bearer_token_file,
            client_cert=spec.client_cert,
            client_key=spec.client_key,
            basic_auth=basic_auth(spec),
            password_file=spec.password_file,
            sigv4=spec.sigv4,
            google=spec.google,
            oauth2=spec.oauth2,
            azure=spec.azure,
            tenant=spec.tenant_header,
            insecure_skip_verify=spec.insecure_skip_tls_verify,
            timeout=spec.timeout if spec.timeout is not None else base.timeout,
            method=spec.method or base.method,
        )
        counted = (lambda: on_throttled(label(spec.name))) if on_throttled else None
        failed = (lambda: on_credentials_failure(label(spec.name))) if on_credentials_failure else None
        return Prometheus(
            settings,
            cache_ttl=cache_ttl,
            on_query=on_query,
            on_throttled=counted,
            on_credentials_failure=failed,
        )

    return make


def label(name: str) -> str:
    """A backend as users see it in logs, metrics and readiness: the default is "default"."""
    return name or "default"


def basic_auth(spec: Backend) -> tuple[str, str] | None:
    """The backend's user and password (read from its file, so a Secret can hold it: read
    here so an unreadable one refuses the rule file, and again as it rotates)."""
    if not spec.username:
        return None
    password = read_secret(spec.password_file) if spec.password_file else ""
    return spec.username, password


def _attach(client: PrometheusAPI, session: object | None) -> None:
    attach = getattr(client, "attach", None)  # test doubles have none
    if callable(attach):
        attach(session)


def _close(client: PrometheusAPI | None) -> None:
    close = getattr(client, "close", None)
    if callable(close):
        close()
