"""The synchronous transport: prometheus-api-client over requests, run in worker threads.

``prometheus.Prometheus`` uses it for what the serving loop's aiohttp session does not
carry (range queries for the replay, label names, the health check) and for every call
made outside a serving app (``check-config``). Its failures leave here already translated
into the client's own vocabulary (``TimeoutError``, ``ConnectionError``,
``PrometheusHTTPError``, ``TransportError``), so one deadline and retry policy serves both
transports without either knowing the other's exception classes.

It is imported on first use, not with the adapter: requests and prometheus-api-client are
about a sixth of the adapter's imports, and nothing a served request needs before the
first answer uses them.
"""

from __future__ import annotations

import ast
import re
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from .cloud_credentials import CloudCredentials
from .credentials import Credentials, RotatingTLS
from .promsettings import PrometheusHTTPError, PrometheusSettings, TransportError

T = TypeVar("T")

# prometheus-api-client's message for a non-2xx answer: the status and the body's bytes literal
_STATUS = re.compile(r"^HTTP Status Code (\d{3}) \((b'.*'|b\".*\")\)$", re.S)


class _PerCall(threading.local):
    headers: Mapping[str, str] = {}  # this worker thread's call's own headers (its tenant)


class _FromCredentials(requests.auth.AuthBase):
    """The loop side's headers (``credentials.Credentials``: the token and password files
    read again as they rotate) on every request of this transport too, then the call's own."""

    def __init__(self, credentials: Credentials, per_call: _PerCall) -> None:
        self.credentials, self.per_call = credentials, per_call

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers.update(self.credentials.headers())
        r.headers.update(self.per_call.headers)
        return r


class _CloudSigned(_FromCredentials):
    """A cloud's credentials on every request of this transport (``cloud_credentials``):
    signed last, over what is sent."""

    def __init__(self, credentials: Credentials, per_call: _PerCall, signer: CloudCredentials) -> None:
        super().__init__(credentials, per_call)
        self.signer = signer

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        super().__call__(r)
        body = r.body.encode() if isinstance(r.body, str) else r.body if isinstance(r.body, bytes) else None
        signable = {
            k: v if isinstance(v, str) else v.decode()
            for k, v in r.headers.items()
            if k.lower() not in ("content-length", "connection")
        }
        signed = self.signer.sign(self.signer.held_blocking(), r.method or "GET", r.url or "", signable, body)
        r.headers.update(signed)
        return r


class SyncTransport:
    """One backend's prometheus-api-client and requests session (its CA, client certificate,
    bearer token or Basic auth, and headers), with the client's own retries off."""

    def __init__(
        self,
        settings: PrometheusSettings,
        tls: RotatingTLS,
        credentials: Credentials,
        signer: CloudCredentials | None = None,
    ) -> None:
        s = self.settings = settings
        session = requests.Session()
        # paths: urllib3 reads them for each new connection, so a rotated file is used once the
        # connections made before it are closed (``run``, when ``tls`` made a new context)
        session.verify = False if s.insecure_skip_verify else (s.ca_file or True)
        if s.client_cert:
            session.cert = (s.client_cert, s.client_key) if s.client_key else s.client_cert
        self._per_call = _PerCall()
        session.auth = (
            _CloudSigned(credentials, self._per_call, signer)
            if signer
            else _FromCredentials(credentials, self._per_call)
        )
        self.session, self._tls, self._generation = session, tls, tls.generation
        self.client = PrometheusConnect(
            url=s.url.rstrip("/"),
            headers=dict(s.headers) or None,
            disable_ssl=s.insecure_skip_verify,
            session=session,
            timeout=s.timeout,
            method=s.method.upper(),
            retry=Retry(total=0, connect=0, read=0, status=0, redirect=0, raise_on_status=False),
        )

    def run(
        self, fn: Callable[[SyncTransport, float], T], left: float, headers: Mapping[str, str] | None = None
    ) -> T:
        """``fn(self, left)`` with ``headers`` on its requests too, its failures translated
        (see the module docstring)."""
        if self._generation != self._tls.generation:  # the TLS files rotated
            self._generation = self._tls.generation
            self.session.close()  # the pools' connections go; the next ones load the new files
        self._per_call.headers = headers or {}
        try:
            return fn(self, left)
        except requests.exceptions.SSLError as e:  # before ConnectionError, which it is too
            raise ssl.SSLError(str(e)) from e
        except requests.Timeout as e:  # before ConnectionError: a connect timeout is both
            raise TimeoutError(str(e)) from e
        except requests.ConnectionError as e:
            raise ConnectionError(str(e)) from e
        except requests.RequestException as e:
            raise TransportError(str(e)) from e
        except PrometheusApiClientException as e:
            m = _STATUS.match(str(e))
            if m is None:
                raise TransportError(str(e)) from e
            try:
                body = ast.literal_eval(m.group(2))
            except (ValueError, SyntaxError):
                body = m.group(2).encode()
            raise PrometheusHTTPError(int(m.group(1)), body) from e
        finally:
            self._per_call.headers = {}

    def form(self, path: str, form: dict[str, str], timeout: float) -> Any:
        """A form-encoded POST to the HTTP API (prometheus-api-client's "POST" still sends the
        query in the URL; a query too long for a URL goes as a form body instead)."""
        s = self.settings
        response = self.session.post(
            f"{s.url.rstrip('/')}{path}",
            data=form,
            headers=dict(s.headers) or None,
            timeout=timeout,
        )
        if response.status_code != 200:
            raise PrometheusHTTPError(
                response.status_code, response.content, response.headers.get("Retry-After")
            )
        data = response.json()["data"]
        return data["result"] if isinstance(data, dict) else data  # the series API: a plain list
