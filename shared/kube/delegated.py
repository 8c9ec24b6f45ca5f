"""Delegated authentication and authorization: who a caller is and what it may do, asked
of the kube-apiserver, as every Kubernetes component's secure port does.

Authentication: a bearer token through a ``TokenReview``, or a client certificate the
server's TLS layer verified against the cluster's client CA (the ``client-ca-file`` the
kube-apiserver publishes in ``kube-system/extension-apiserver-authentication``): the
certificate's common name is the user and its organizations the groups, as the
kube-apiserver reads them. Authorization: a ``SubjectAccessReview`` for the request's
attributes. Answers are reused for ``cache_ttl`` seconds, keyed by a hash of the token or
the review (never the token itself).

Both processes' secure ports put it behind one gate (``secureport``); the adapter adds the
front proxy's headers on top (``adapter.serving.auth``), the controller uses it as it is
(``controller.live.endpoints``).
"""

from __future__ import annotations

import hashlib
import ssl
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache

from .client import Kube
from .errors import KubeError

AUTHENTICATION_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)
    uid: str = ""


async def client_ca(kube: Kube) -> str:
    """The cluster's client CA (PEM), for verifying client certificates."""
    cm = await kube.get(AUTHENTICATION_CONFIGMAP)
    pem = (cm.get("data") or {}).get("client-ca-file")
    if not pem:
        raise KubeError(
            0,
            "kube-system/extension-apiserver-authentication has no client-ca-file: is the "
            "kube-apiserver started with --client-ca-file?",
        )
    return str(pem)


def certificate_user(sslobj: ssl.SSLObject | None) -> User | None:
    """The user a verified client certificate names (CN; O as groups), or None."""
    if sslobj is None:
        return None
    cert = sslobj.getpeercert()  # empty unless presented and verified
    if not cert:
        return None
    name, groups = "", []
    subject: Any = cert.get("subject", ())
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    if not name:
        return None
    return User(name, (*groups, "system:authenticated"))


def non_resource(path: str, verb: str = "get") -> dict[str, Any]:
    return {"nonResourceAttributes": {"path": path, "verb": verb}}


class DelegatedAuth:
    def __init__(self, kube: Kube, cache_ttl: float = 10.0) -> None:
        self.kube = kube
        self._tokens: TTLCache[str, User | None] = TTLCache(maxsize=10_000, ttl=cache_ttl)
        self._decisions: TTLCache[str, tuple[bool, str]] = TTLCache(maxsize=10_000, ttl=cache_ttl)

    async def token(self, token: str) -> User | None:
        """The user a bearer token belongs to (None: not authenticated)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        if key in self._tokens:
            return self._tokens[key]
        review = await self.kube.post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        st = review.get("status", {})
        user = None
        if st.get("authenticated"):
            u = st.get("user", {})
            user = User(
                u.get("username", ""),
                tuple(u.get("groups") or ()),
                dict(u.get("extra") or {}),
                u.get("uid", ""),
            )
        self._tokens[key] = user
        return user

    async def authorize(self, user: User, attributes: dict[str, Any]) -> tuple[bool, str]:
        """Whether ``user`` may do what ``attributes`` (resource or non-resource) say, and why."""
        if "system:masters" in user.groups:  # the generic apiserver's privileged group: no review
            return True, "system:masters"
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "extra": user.extra,
            "uid": user.uid,
            **attributes,
        }
        key = hashlib.sha256(repr(sorted(spec.items(), key=lambda kv: kv[0])).encode()).hexdigest()
        if key in self._decisions:
            return self._decisions[key]
        review = await self.kube.post(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        st = review.get("status", {})
        decision = (bool(st.get("allowed")), str(st.get("reason", "")))
        self._decisions[key] = decision
        return decision
