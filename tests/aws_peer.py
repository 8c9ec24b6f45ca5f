"""Amazon Managed Service for Prometheus as promhpa meets it, on 127.0.0.1: an STS that issues
credentials for a web-identity token (moto's server, in this process) and a proxy in front of
a real Prometheus that accepts a request only if its SigV4 signature, recomputed with
botocore's own signer from the secret STS issued for its access key, matches -- for the
region and service it expects, with credentials not yet expired. What it refuses gets 403
with the reason, as AMP's gateway answers.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
import threading
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from moto.server import ThreadedMotoServer
from moto.sts.models import STSBackend
from moto.sts.models import sts_backends

from localcluster import free_port
from tests.gateway import Gateway
from tests.gateway import Refusal

ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/promhpa-adapter"
_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                   r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$")  # fmt: skip


class Sts:
    """moto's STS on 127.0.0.1; ``lifetime`` is the seconds its credentials last (moto's
    default is an hour: a refresh test asks for seconds)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lifetime: int | None = None
        self.exchanges = 0  # web-identity tokens exchanged
        self.tokens: list[str] = []
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._original = STSBackend.assume_role_with_web_identity
        sts = self

        def exchange(backend: STSBackend, **kwargs: Any) -> Any:
            sts.exchanges += 1
            if sts.lifetime is not None:
                kwargs["duration"] = sts.lifetime
            return sts._original(backend, **kwargs)

        STSBackend.assume_role_with_web_identity = exchange  # type: ignore[method-assign]

    def start(self) -> Sts:
        self._server.start()
        return self

    def stop(self) -> None:
        STSBackend.assume_role_with_web_identity = self._original  # type: ignore[method-assign]
        self._server.stop()

    def issued(self, access_key: str) -> Any:
        """The credentials STS issued with this access key, or None."""
        return sts_backends[ACCOUNT]["aws"].get_assumed_role_from_access_key(access_key)


class VerifyingProxy(Gateway):
    """Checks every request's SigV4 signature, then forwards it to ``upstream``."""

    def __init__(self, upstream: str, sts: Sts, region: str = "us-west-2", service: str = "aps") -> None:
        self.sts, self.region, self.service = sts, region, service
        self.keys: set[str] = set()  # the access keys of accepted requests
        self.lock = threading.Lock()
        super().__init__(upstream, self._check)

    def _check(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Refusal | None:
        reason = self.verify(method, path, headers, body)
        return None if reason is None else (403, f'{{"message":"{reason}"}}'.encode(), reason)

    def verify(self, method: str, path: str, headers: dict[str, str], body: bytes) -> str | None:
        """None if the signature holds, else why not."""
        lower = {k.lower(): v for k, v in headers.items()}
        m = _AUTH.match(lower.get("authorization", ""))
        if m is None:
            return "missing or malformed SigV4 Authorization header"
        key, day, region, service, signed, signature = m.groups()
        if region != self.region:
            return f"credential scope region {region} does not match {self.region}"
        if service != self.service:
            return f"credential scope service {service} does not match {self.service}"
        role = self.sts.issued(key)
        if role is None:
            return f"the security token included in the request is invalid (unknown access key {key})"
        if lower.get("x-amz-security-token") != role.session_token:
            return "the security token included in the request is invalid"
        if role.expiration <= dt.datetime.now(dt.UTC).replace(tzinfo=None):
            return "the security token included in the request is expired"
        amz_date = lower.get("x-amz-date", "")
        if not amz_date.startswith(day):
            return "X-Amz-Date does not match the credential scope's date"
        names = signed.split(";")
        request = AWSRequest(
            method=method, url=f"http://{lower.get('host', '')}{path}", data=body,
            headers={n: lower.get(n, "") for n in names},
        )  # fmt: skip
        request.context["timestamp"] = amz_date
        auth = SigV4Auth(
            ReadOnlyCredentials(key, role.secret_access_key, role.session_token), service, region
        )
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        if not hmac.compare_digest(expected, signature):
            return "the request signature we calculated does not match the signature you provided"
        with self.lock:
            self.keys.add(key)
        return None
