"""Delegated authentication and authorization, as an aggregated API server must do.

Authentication, in order:
1. a client certificate signed by the *requestheader* CA with an allowed common name (the
   kube-apiserver's front proxy): the user is in ``X-Remote-User``, groups in
   ``X-Remote-Group``, extras in ``X-Remote-Extra-*``;
2. a bearer token, checked with a ``TokenReview``;
3. anything else: 401.
Authorization: a ``SubjectAccessReview`` for the request (resource attributes for API
paths, non-resource attributes for ``/metrics``), cached briefly. ``/healthz``, ``/livez``
and ``/readyz`` are open. The CA, allowed names and header names come from the
``kube-system/extension-apiserver-authentication`` ConfigMap, as the kube-apiserver
publishes them.
"""

from __future__ import annotations

import ssl
import tempfile
import weakref
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware

from adapter.api.requests import REQUEST_INFO, BadRequest, RequestInfo, request_info
from shared.kube.client import Kube
from shared.kube.delegated import AUTHENTICATION_CONFIGMAP, DelegatedAuth, User
from shared.kube.errors import KubeError
from shared.kube.secureport import Gate, bearer_token, status_response

log = structlog.get_logger("adapter.serving.auth")


@dataclass(frozen=True)
class RequestHeaderConfig:
    client_ca_pem: str
    allowed_names: tuple[str, ...]
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


def _json_list(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    import json

    if not text:
        return default
    try:
        return tuple(str(v) for v in json.loads(text))
    except ValueError:
        return default


async def load_requestheader_config(kube: Kube) -> RequestHeaderConfig:
    cm = await kube.get(AUTHENTICATION_CONFIGMAP)
    data = cm.get("data", {})
    if "requestheader-client-ca-file" not in data:
        raise KubeError(
            0,
            "kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: "
            "is the kube-apiserver's aggregation layer configured?",
        )
    return RequestHeaderConfig(
        client_ca_pem=data["requestheader-client-ca-file"],
        allowed_names=_json_list(data.get("requestheader-allowed-names"), ()),
        username_headers=_json_list(data.get("requestheader-username-headers"), ("X-Remote-User",)),
        group_headers=_json_list(data.get("requestheader-group-headers"), ("X-Remote-Group",)),
        extra_prefixes=_json_list(data.get("requestheader-extra-headers-prefix"), ("X-Remote-Extra-",)),
    )


def add_client_ca(ctx: ssl.SSLContext, cfg: RequestHeaderConfig) -> None:
    """Ask clients for a certificate (optional) and verify it against the requestheader CA."""
    with tempfile.NamedTemporaryFile("w", suffix=".crt") as f:
        f.write(cfg.client_ca_pem)
        f.flush()
        ctx.load_verify_locations(f.name)
    ctx.verify_mode = ssl.CERT_OPTIONAL


# per TLS connection (keyed weakly by its SSL object, gone with the connection): a client
# certificate cannot change within a connection, so it is read once, not on every request
_CONNECTION_CN: weakref.WeakKeyDictionary[ssl.SSLObject, str | None] = weakref.WeakKeyDictionary()


def _peer_common_name(request: web.Request) -> str | None:
    """The verified client certificate's subject CN. The ssl module's own decoding of the
    certificate (a few microseconds) is enough for one attribute: parsing it with
    cryptography cost its import at start-up and a parse per connection."""
    transport = request.transport
    sslobj = transport.get_extra_info("ssl_object") if transport else None
    if sslobj is None:
        return None
    try:
        return _CONNECTION_CN[sslobj]
    except KeyError:
        pass
    cn: str | None = None
    # empty unless a certificate was presented and verified against the requestheader CA
    cert = sslobj.getpeercert()
    if cert:
        cn = next((str(v) for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"), "")
    _CONNECTION_CN[sslobj] = cn
    return cn


def _attributes(info: RequestInfo) -> dict[str, Any]:
    """The SubjectAccessReview's attributes for exactly what the kube-apiserver authorized:
    its own reading of the path (``request_info``), so the namespace we check is the one we
    query."""
    if not info.is_resource:
        return {"nonResourceAttributes": {"path": info.path, "verb": "get"}}
    attrs = {
        "group": info.api_group,
        "version": info.api_version,
        "verb": info.verb,
        "namespace": info.namespace,
        "resource": info.resource,
        "subresource": info.subresource,
        "name": info.name,
    }
    return {"resourceAttributes": {k: v for k, v in attrs.items() if v}}


class Authenticator:
    def __init__(self, kube: Kube, cfg: RequestHeaderConfig, cache_ttl: float = 10.0) -> None:
        self.kube, self.cfg = kube, cfg
        self.delegated = DelegatedAuth(kube, cache_ttl)

    async def authenticate(self, request: web.Request) -> User | None:
        cn = _peer_common_name(request)
        if cn is not None and (not self.cfg.allowed_names or cn in self.cfg.allowed_names):
            name = next((request.headers[h] for h in self.cfg.username_headers if request.headers.get(h)), "")
            if name:
                groups = tuple(v for h in self.cfg.group_headers for v in request.headers.getall(h, []))
                extra: dict[str, list[str]] = {}
                for key, value in request.headers.items():
                    for prefix in self.cfg.extra_prefixes:
                        if key.lower().startswith(prefix.lower()):
                            extra.setdefault(key[len(prefix) :].lower(), []).append(value)
                # like the generic apiserver: every authenticated user is in system:authenticated
                if "system:authenticated" not in groups:
                    groups += ("system:authenticated",)
                return User(name, groups, extra)
        token = bearer_token(request)
        return await self.delegated.token(token) if token is not None else None

    async def authorize(self, info: RequestInfo, user: User) -> tuple[bool, str]:
        return await self.delegated.authorize(user, _attributes(info))

    def middleware(self) -> Middleware:
        """The shared secure port's gate, with the aggregated API's reading of each request."""

        def admit(request: web.Request) -> web.StreamResponse | None:
            try:
                request[REQUEST_INFO] = request_info(request.rel_url.raw_path)
            except BadRequest as e:  # the apiserver's HTTP server refuses such a URL outright
                return status_response(400, "BadRequest", str(e))
            return None

        async def authorize(request: web.Request, user: User) -> tuple[bool, str]:
            return await self.authorize(request[REQUEST_INFO], user)

        def forbidden(request: web.Request, user: User) -> str:
            info: RequestInfo = request[REQUEST_INFO]
            return f'user "{user.name}" cannot {info.verb} path "{info.path}"'

        return Gate(self.authenticate, authorize, forbidden, admit=admit).middleware()
