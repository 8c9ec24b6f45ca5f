"""Amazon Managed Service for Prometheus: every request signed with SigV4 (service ``aps``),
with credentials from AWS's own credential chain -- botocore's, the ``aws`` extra: the
environment, shared files and profiles, IRSA (``AWS_WEB_IDENTITY_TOKEN_FILE`` and
``AWS_ROLE_ARN``, exchanged at STS; ``AWS_ENDPOINT_URL_STS`` and
``AWS_STS_REGIONAL_ENDPOINTS`` honoured), EKS Pod Identity
(``AWS_CONTAINER_CREDENTIALS_FULL_URI`` and its token file), and ``roleARN`` assumed on top.
Held and refreshed off the event loop as ``cloud_credentials`` says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from rules.backend import SigV4Config

from .cloud_credentials import CloudCredentials


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


class SigV4(CloudCredentials):
    scheme = "sigv4"

    def __init__(self, config: SigV4Config, who: str, on_failure: Callable[[], None] | None = None) -> None:
        super().__init__(who, on_failure)
        self.source = "the AWS credential chain"  # until botocore names the link it found
        self.config = config
        self._bc = _botocore()
        self._chain: Any = None  # botocore's credentials object, resolved on first fetch (it may fetch)

    def _resolve(self) -> Any:
        session = self._bc.session.get_session()
        chain = session.get_credentials()
        if chain is None:
            raise ValueError(
                "no AWS credentials found (environment, shared files, IRSA web identity, EKS Pod "
                "Identity): see docs/cloud.md"
            )
        self.source = str(chain.method)
        if self.config.role_arn:
            fetcher = self._bc.credentials.AssumeRoleCredentialFetcher(
                client_creator=session.create_client,
                source_credentials=chain,
                role_arn=self.config.role_arn,
                extra_args={"RoleSessionName": "promhpa-adapter"},
            )
            self.source = f"{chain.method}, then AssumeRole {self.config.role_arn}"
            chain = self._bc.credentials.DeferredRefreshableCredentials(
                method="assume-role", refresh_using=fetcher.fetch_credentials
            )
        return chain

    def fetch_blocking(self) -> tuple[Any, float | None]:
        if self._chain is None:
            self._chain = self._resolve()
        frozen = self._chain.get_frozen_credentials()
        expiry = getattr(self._chain, "_expiry_time", None)  # refreshable ones expire
        return frozen, (expiry - datetime.now(UTC)).total_seconds() if expiry is not None else None

    def sign(
        self, held: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        request = self._bc.awsrequest.AWSRequest(
            method=method, url=url, data=body or b"", headers=dict(headers)
        )
        self._bc.auth.SigV4Auth(held, self.config.service, self.config.region).add_auth(request)
        return dict(request.headers.items())
