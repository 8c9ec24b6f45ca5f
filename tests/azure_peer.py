"""Azure Monitor managed Prometheus as promhpa meets it, on 127.0.0.1:

- a cluster's service account issuer, which signs the projected token Azure Workload
  Identity's webhook mounts (``AZURE_FEDERATED_TOKEN_FILE``: audience
  ``api://AzureADTokenExchange``);
- Microsoft Entra ID's token endpoint (``/{tenant}/oauth2/v2.0/token``, over TLS as Entra
  and azure-identity require), which takes that token as a client assertion, verifies its
  signature with the issuer's key and its issuer, subject and audience against the client's
  federated identity credential, as Entra does, and answers with ``AADSTS`` errors otherwise;
- the Instance Metadata Service's managed identity endpoint (``Metadata: true`` required);
- a proxy in front of a real Prometheus that accepts only a current token one of them issued.
"""

from __future__ import annotations

import json
import secrets
import ssl
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from localcluster.pki import issue
from localcluster.pki import make_ca
from tests.gateway import Gateway
from tests.gateway import LoopbackServer
from tests.gateway import QuietHandler
from tests.gateway import Refusal
from tests.gateway import token_refused

TENANT = "72f988bf-0000-4000-8000-2d7cd011db47"
CLIENT_ID = "5e6b2c39-0000-4000-8000-a1b2c3d4e5f6"
EXCHANGE = "api://AzureADTokenExchange"
ISSUER = "https://oidc.prod-aks.azure.com/local/"
SUBJECT = "system:serviceaccount:promhpa:promhpa-adapter"


class Tokens:
    """Access tokens issued by the authority and the metadata service, with their expiry, and
    what each was asked for."""

    def __init__(self, lifetime: int = 3599) -> None:
        self.lifetime = lifetime
        self.expiry: dict[str, float] = {}
        self.asked: list[str] = []  # scope (Entra) or resource (IMDS) of each token
        self.lock = threading.Lock()

    def issue(self, asked: str) -> str:
        token = "eyJ0eXAi." + secrets.token_urlsafe(32)
        with self.lock:
            self.expiry[token] = time.time() + self.lifetime
            self.asked.append(asked)
        return token

    def revoke_all(self) -> None:
        with self.lock:
            self.expiry.clear()


class ServiceAccountIssuer:
    """The cluster's service account token issuer: what AKS' OIDC issuer signs with."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def project(
        self, path: Path, subject: str = SUBJECT, lasts: int = 3600, audience: str = EXCHANGE
    ) -> Path:
        """Write the projected service account token, as the kubelet does."""
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": [audience],
            "iat": now,
            "nbf": now,
            "exp": now + lasts,
        }
        path.write_text(jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "sa-key"}))
        return path


def _tls_context(d: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for 127.0.0.1 and the CA bundle that verifies it."""
    d.mkdir(parents=True, exist_ok=True)
    ca = make_ca(d / "entra-ca", "entra-ca")
    issue(d / "entra", ca, "127.0.0.1", ips=("127.0.0.1",), server=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "entra.crt", d / "entra.key")
    return ctx, d / "entra-ca.crt"


def _aadsts(code: str, message: str, error: str = "invalid_client") -> tuple[int, dict[str, Any]]:
    return 400 if error != "unauthorized_client" else 401, {
        "error": error,
        "error_description": f"{code}: {message} Trace ID: {secrets.token_hex(8)}",
        "error_codes": [int(code.removeprefix("AADSTS"))],
    }


class Entra(LoopbackServer):
    """Entra ID's token endpoint for one tenant, knowing one app (``CLIENT_ID``) whose federated
    credential trusts ``issuer``'s tokens for ``SUBJECT``."""

    def __init__(self, issuer: ServiceAccountIssuer, tokens: Tokens, d: Path) -> None:
        self.issuer, self.tokens = issuer, tokens
        self.exchanges = 0
        self.refusals: list[str] = []
        entra = self
        ctx, self.ca_file = _tls_context(d)

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                form = urllib.parse.parse_qs(
                    self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                )
                status, body = entra._token(self.path, {k: v[0] for k, v in form.items()})
                self.answer(status, json.dumps(body).encode(), "application/json; charset=utf-8")

        super().__init__(Handler, tls=ctx)
        self.host = f"https://127.0.0.1:{self.port}"

    def _token(self, path: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if path != f"/{TENANT}/oauth2/v2.0/token":
            return _aadsts("AADSTS90002", f"Tenant '{path.split('/')[1]}' not found.", "invalid_request")
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ):
            return _aadsts(
                "AADSTS900144", "The request body must contain a client assertion.", "invalid_request"
            )
        if form.get("client_id") != CLIENT_ID:
            return _aadsts(
                "AADSTS700016", f"Application with identifier '{form.get('client_id')}' was not found."
            )
        try:
            claims = jwt.decode(
                form.get("client_assertion", ""), self.issuer.key.public_key(), algorithms=["RS256"],
                audience=EXCHANGE, issuer=ISSUER,
            )  # fmt: skip
        except jwt.ExpiredSignatureError:
            return self._refuse("AADSTS700024", "Client assertion is not within its valid time range.")
        except jwt.InvalidTokenError as e:
            return self._refuse("AADSTS700211", f"No matching federated identity record found ({e}).")
        if claims.get("sub") != SUBJECT:
            subject = claims.get("sub")
            return self._refuse(
                "AADSTS700213",
                f"No matching federated identity record found for presented assertion subject '{subject}'.",
            )
        scope = form.get("scope", "")
        self.exchanges += 1
        token = self.tokens.issue(scope)
        lasts = self.tokens.lifetime
        return 200, {
            "token_type": "Bearer",
            "expires_in": lasts,
            "ext_expires_in": lasts,
            "access_token": token,
        }

    def _refuse(self, code: str, message: str) -> tuple[int, dict[str, Any]]:
        self.refusals.append(code)
        return _aadsts(code, message)

    def env(self, token_file: Path) -> dict[str, str]:
        """What Azure Workload Identity's webhook gives a labelled pod, pointed here."""
        return {
            "AZURE_CLIENT_ID": CLIENT_ID, "AZURE_TENANT_ID": TENANT,
            "AZURE_FEDERATED_TOKEN_FILE": str(token_file), "AZURE_AUTHORITY_HOST": self.host + "/",
            "REQUESTS_CA_BUNDLE": str(self.ca_file),
        }  # fmt: skip


class Imds(LoopbackServer):
    """The Instance Metadata Service's managed identity token endpoint, with the node's
    user-assigned identities (client IDs) and whether it has a system-assigned one."""

    def __init__(self, tokens: Tokens, assigned: tuple[str, ...] = (), system: bool = True) -> None:
        self.tokens = tokens
        self.without_metadata = 0
        imds = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
                status, body = imds._token(url.path, query, self.headers.get("Metadata"))
                self.answer(status, json.dumps(body).encode(), "application/json; charset=utf-8")

        self.assigned, self.system = assigned, system
        super().__init__(Handler)

    def _token(self, path: str, query: dict[str, str], metadata: str | None) -> tuple[int, dict[str, Any]]:
        if metadata != "true":
            self.without_metadata += 1
            return 400, {
                "error": "invalid_request",
                "error_description": "Required metadata header not specified",
            }
        if path != "/metadata/identity/oauth2/token" or "resource" not in query:
            return 400, {
                "error": "invalid_request",
                "error_description": "Required query variable 'resource' is missing",
            }
        wanted = query.get("client_id")
        if (wanted is None and not self.system) or (wanted is not None and wanted not in self.assigned):
            return 400, {"error": "invalid_request", "error_description": "Identity not found"}
        token = self.tokens.issue(query["resource"])
        lasts = self.tokens.lifetime
        return 200, {
            "access_token": token, "expires_in": str(lasts), "expires_on": str(int(time.time()) + lasts),
            "ext_expires_in": str(lasts), "not_before": str(int(time.time())), "resource": query["resource"],
            "token_type": "Bearer", "client_id": wanted or "system-assigned",
        }  # fmt: skip

    def env(self) -> dict[str, str]:
        """What aad-pod-identity's node agent gives a pod, pointed here (azure-identity and MSAL
        both take it in place of 169.254.169.254)."""
        return {"AZURE_POD_IDENTITY_AUTHORITY_HOST": self.url}


class TokenCheckingProxy(Gateway):
    """Forwards a request whose bearer token ``tokens`` holds and that is still current, as
    Azure Monitor's query endpoint answers 401 otherwise."""

    def __init__(self, upstream: str, tokens: Tokens) -> None:
        def check(method: str, path: str, headers: dict[str, str], body: bytes) -> Refusal | None:
            why = token_refused(tokens.lock, tokens.expiry, headers)
            if why is None:
                return None
            error = {
                "error": {
                    "code": "InvalidAuthenticationToken",
                    "message": f"The access token is invalid ({why}).",
                }
            }
            return 401, json.dumps(error).encode(), why

        super().__init__(upstream, check)
