"""Google Cloud Managed Service for Prometheus as promhpa meets it, on 127.0.0.1: Google's
token endpoint for service account keys (the JWT-bearer grant), a metadata server speaking
the GKE metadata server's protocol (``Metadata-Flavor: Google`` required on
every request and answered; the service account's info, project id and universe; access
tokens on ``.../service-accounts/default/token``) that issues short-lived tokens, and a proxy
in front of a real Prometheus that accepts a request only with a token it issued and that
has not expired or been revoked, as Google's front end answers 401 otherwise.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt

from tests.gateway import Gateway
from tests.gateway import LoopbackServer
from tests.gateway import QuietHandler
from tests.gateway import Refusal
from tests.gateway import token_refused

_ACCOUNT = "promhpa-adapter@my-project.iam.gserviceaccount.com"
_SA = "/computeMetadata/v1/instance/service-accounts/default"


class MetadataServer(LoopbackServer):
    """Issues tokens lasting ``lifetime`` seconds; ``tokens`` maps each to its expiry."""

    def __init__(self, lifetime: int = 3599) -> None:
        self.lifetime = lifetime
        self.tokens: dict[str, float] = {}
        self.scopes: list[str] = []  # the scopes each token was asked for
        self.without_flavor = 0  # requests refused for want of the header
        self.public_keys: dict[str, str] = {}  # key id -> PEM: the service account keys it knows
        self.assertions = 0  # key-signed assertions exchanged
        self.lock = threading.Lock()
        md = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                """Google's OAuth2 token endpoint for a service account key: the JWT-bearer
                grant, its assertion verified with the key's public half by google-auth."""
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                try:
                    # google-auth's assertions name Google's token endpoint as their audience,
                    # whichever token_uri they are posted to; Google's endpoint takes that
                    audience = [md.token_uri, "https://oauth2.googleapis.com/token"]
                    claims = jwt.decode(form["assertion"][0], certs=md.public_keys, audience=audience)
                except (KeyError, ValueError) as e:
                    body = {"error": "invalid_grant", "error_description": f"Invalid JWT Signature ({e})."}
                    self._answer(400, "application/json", json.dumps(body).encode())
                    return
                token = "ya29.key-" + secrets.token_urlsafe(24)
                with md.lock:
                    md.tokens[token] = time.time() + md.lifetime
                    md.scopes.append(str(claims.get("scope", "")))
                    md.assertions += 1
                body = {"access_token": token, "expires_in": md.lifetime, "token_type": "Bearer"}
                self._answer(200, "application/json", json.dumps(body).encode())

            def do_GET(self) -> None:
                if self.headers.get("Metadata-Flavor") != "Google":
                    with md.lock:
                        md.without_flavor += 1
                    self._answer(403, "text/html", b"Missing Metadata-Flavor:Google header.")
                    return
                url = urllib.parse.urlsplit(self.path)
                path = url.path.replace(f"/service-accounts/{_ACCOUNT}", "/service-accounts/default")
                if path == "/":
                    self._answer(200, "application/text", b"computeMetadata/")
                elif path == f"{_SA}/token":
                    token = "ya29.local-" + secrets.token_urlsafe(24)
                    scopes = urllib.parse.parse_qs(url.query).get("scopes", [""])[0]
                    with md.lock:
                        md.tokens[token] = time.time() + md.lifetime
                        md.scopes.append(scopes)
                    body = {"access_token": token, "expires_in": md.lifetime, "token_type": "Bearer"}
                    self._answer(200, "application/json", json.dumps(body).encode())
                elif path in (f"{_SA}/", _SA):
                    info = {
                        "aliases": ["default"],
                        "email": _ACCOUNT,
                        "scopes": [md.scopes[-1] if md.scopes else ""],
                    }
                    self._answer(200, "application/json", json.dumps(info).encode())
                elif path == f"{_SA}/email":
                    self._answer(200, "application/text", _ACCOUNT.encode())
                elif path == "/computeMetadata/v1/project/project-id":
                    self._answer(200, "application/text", b"my-project")
                elif path == "/computeMetadata/v1/universe/universe-domain":
                    self._answer(200, "application/text", b"googleapis.com")
                else:
                    self._answer(404, "text/html", b"not found")

            def _answer(self, code: int, ctype: str, data: bytes) -> None:
                self.answer(code, data, ctype, {"Metadata-Flavor": "Google"})

        super().__init__(Handler)

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def key_file(self, path: Path, known: bool = True) -> Path:
        """A service account key as Google issues it (JSON, RSA), its token_uri here; ``known``:
        its public half is registered, so assertions it signs verify."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        key_id = secrets.token_hex(8)
        if known:
            public = key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            self.public_keys[key_id] = public.decode()
        path.write_text(json.dumps({
            "type": "service_account", "project_id": "my-project", "private_key_id": key_id,
            "private_key": pem, "client_email": _ACCOUNT, "client_id": "1", "token_uri": self.token_uri,
        }))  # fmt: skip
        return path

    def revoke_all(self) -> None:
        with self.lock:
            self.tokens.clear()

    def env(self) -> dict[str, str]:
        """What a GKE pod with Workload Identity has, pointed here."""
        host = f"127.0.0.1:{self.port}"
        return {"GCE_METADATA_HOST": host, "GCE_METADATA_IP": host}


class TokenCheckingProxy(Gateway):
    """Forwards to ``upstream`` a request whose bearer token ``metadata`` issued and that is
    still current; 401 otherwise."""

    def __init__(self, upstream: str, metadata: MetadataServer) -> None:
        def check(method: str, path: str, headers: dict[str, str], body: bytes) -> Refusal | None:
            why = token_refused(metadata.lock, metadata.tokens, headers)
            if why is None:
                return None
            message = f"Request had invalid authentication credentials ({why})."
            error = {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": message}}
            return 401, json.dumps(error).encode(), why

        super().__init__(upstream, check)
