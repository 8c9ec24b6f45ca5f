"""Amazon Managed Service for Prometheus: every request signed with SigV4 (service ``aps``),
with credentials from AWS's own credential chain -- botocore's, the ``aws`` extra: the
environment, shared files and profiles, IRSA (``AWS_WEB_IDENTITY_TOKEN_FILE`` and
``AWS_ROLE_ARN``, exchanged at STS; ``AWS_ENDPOINT_URL_STS`` and
``AWS_STS_REGIONAL_ENDPOINTS`` honoured), EKS Pod Identity
(``AWS_CONTAINER_CREDENTIALS_FULL_URI`` and its token file), and ``roleARN`` assumed on top.

Fetching credentials is network I/O (STS, the Pod Identity agent), so it never runs on the
event loop: the loop signs with the credentials it holds, and a refresh goes to a worker
thread when a third of their lifetime (at most 5 minutes) is left, once at a time. A refresh
that fails keeps the old credentials until they expire, and is reported (``error``) with the
backend and the credential source; only a request with no valid credentials left waits for
(or fails on) a fetch.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any

import structlog

from rules.backend_config import SigV4Config

log = structlog.get_logger("promhpa.prometheus")
REFRESH_AT_MOST = 300.0  # seconds before expiry
NO_EXPIRY = float("inf")


def _botocore() -> Any:
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        import botocore.session
    except ImportError as e:
        raise ValueError(
            "sigv4 needs botocore: install promhpa with the aws extra (pip install 'promhpa[aws]')"
        ) from e
    return botocore


class SigV4:
    """One backend's signer: the credential chain, the credentials held, their refresh."""

    def __init__(self, config: SigV4Config, who: str, on_failure: Callable[[], None] | None = None) -> None:
        self.config, self.who = config, who
        self._bc = _botocore()
        self._chain: Any = None  # botocore's credentials object, resolved on first use (it may fetch)
        self._held: tuple[Any, float, float] | None = None  # (frozen, fetched at, expires at), monotonic
        self._lock = threading.Lock()
        self._refreshing: asyncio.Future[None] | None = None
        self._on_failure = on_failure or (lambda: None)
        self.source = "not resolved yet"
        self.error: str | None = None  # the last refresh failure, until one succeeds

    # --- credentials (worker threads only) ---------------------------------------------------

    def _resolve(self) -> Any:
        session = self._bc.session.get_session()
        chain = session.get_credentials()
        if chain is None:
            raise ValueError(
                "no AWS credentials found (environment, shared files, IRSA web identity, EKS Pod "
                "Identity): see docs/cloud.md"
            )
        if self.config.role_arn:
            fetcher = self._bc.credentials.AssumeRoleCredentialFetcher(
                client_creator=session.create_client,
                source_credentials=chain,
                role_arn=self.config.role_arn,
                extra_args={"RoleSessionName": "promhpa-adapter"},
            )
            source = f"{chain.method}, then AssumeRole {self.config.role_arn}"
            chain = self._bc.credentials.DeferredRefreshableCredentials(
                method="assume-role", refresh_using=fetcher.fetch_credentials
            )
            self.source = source
        else:
            self.source = str(chain.method)
        return chain

    def fetch(self) -> None:
        """Credentials from the chain into ``_held`` (blocking: a worker thread)."""
        with self._lock:
            try:
                if self._chain is None:
                    self._chain = self._resolve()
                frozen = self._chain.get_frozen_credentials()
            except Exception as e:  # botocore raises many kinds; each is one failed refresh
                self.error = f"{self.who}: sigv4 credentials from {self.source} could not be fetched: {e}"
                self._on_failure()
                log.warning("sigv4 credentials not refreshed; the old ones are used until they expire",
                            backend=self.who, source=self.source, error=str(e))  # fmt: skip
                raise
            expiry = getattr(self._chain, "_expiry_time", None)  # refreshable ones expire
            now = time.monotonic()
            left = (expiry - datetime.now(UTC)).total_seconds() if expiry is not None else NO_EXPIRY
            self._held = (frozen, now, now + left)
            self.error = None

    def frozen_blocking(self) -> Any:
        """The credentials to sign with, from a worker thread (the synchronous transport)."""
        if self._needs_fetch(time.monotonic()) or self._held is None:
            try:
                self.fetch()
            except Exception:
                if not self._valid(time.monotonic()):
                    raise
        assert self._held is not None
        return self._held[0]

    # --- the loop's side -----------------------------------------------------------------------

    def _valid(self, now: float) -> bool:
        return self._held is not None and now < self._held[2]

    def _needs_fetch(self, now: float) -> bool:
        if self._held is None:
            return True
        _, fetched, expires = self._held
        if expires == NO_EXPIRY:
            return False
        return now >= expires - min(REFRESH_AT_MOST, (expires - fetched) / 3)

    async def frozen(self, pool: Executor) -> Any:
        """The credentials to sign with now: held ones while valid (refreshed in the
        background when due), else the outcome of a fetch."""
        now = time.monotonic()
        if self._needs_fetch(now) and self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._refresh(pool))
        if not self._valid(now):
            assert self._refreshing is not None or self._held is not None
            if self._refreshing is not None:
                await asyncio.shield(self._refreshing)
            if not self._valid(time.monotonic()):
                raise PermissionError(self.error or f"{self.who}: no valid sigv4 credentials")
        assert self._held is not None
        return self._held[0]

    async def _refresh(self, pool: Executor) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self.fetch)
        except Exception as e:  # logged and kept in ``error`` by fetch; the held ones serve while valid
            log.debug("sigv4 refresh failed", backend=self.who, error=str(e))
        finally:
            self._refreshing = None

    def sign(
        self, frozen: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        """``headers`` with SigV4's (Authorization, X-Amz-Date, X-Amz-Security-Token) for
        this request, exactly as it will be sent."""
        request = self._bc.awsrequest.AWSRequest(
            method=method, url=url, data=body or b"", headers=dict(headers)
        )
        self._bc.auth.SigV4Auth(frozen, self.config.service, self.config.region).add_auth(request)
        return dict(request.headers.items())
