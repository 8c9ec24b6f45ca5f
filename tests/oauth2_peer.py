"""A Prometheus behind an OAuth2 gateway, on 127.0.0.1: Ory Hydra (built from the Go module
proxy, in memory, telemetry off) issues client-credentials tokens, and a proxy in front of a
real Prometheus accepts a request only if Hydra's own introspection says its bearer token is
active -- so Hydra, not the test, decides what a valid token is."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from localcluster import free_port
from localcluster.tools import wait_until
from tests.gateway import Gateway
from tests.gateway import Refusal

CLIENT_ID = "promhpa-adapter"


class Hydra:
    def __init__(self, binary: str, directory: Path, token_lifetime: str = "1h") -> None:
        self.binary, self.dir = binary, directory
        self.public, self.admin = free_port(), free_port()
        self.token_url = f"http://127.0.0.1:{self.public}/oauth2/token"
        self.admin_url = f"http://127.0.0.1:{self.admin}"
        self.secret = secrets.token_urlsafe(24)
        self.env = {
            "PATH": os.environ.get("PATH", ""), "HOME": str(directory),
            "DSN": "memory", "SQA_OPT_OUT": "true", "LOG_LEVEL": "warn",
            "SERVE_PUBLIC_HOST": "127.0.0.1", "SERVE_PUBLIC_PORT": str(self.public),
            "SERVE_ADMIN_HOST": "127.0.0.1", "SERVE_ADMIN_PORT": str(self.admin),
            "URLS_SELF_ISSUER": f"http://127.0.0.1:{self.public}",
            "SECRETS_SYSTEM": secrets.token_hex(32), "STRATEGIES_ACCESS_TOKEN": "opaque",
            "TTL_ACCESS_TOKEN": token_lifetime,
        }  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Hydra:
        with open(self.dir / "hydra.log", "ab") as log:
            self.proc = subprocess.Popen(
                [self.binary, "serve", "all", "--dev"], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        wait_until(self._healthy, timeout=60, what="hydra")
        self._admin("POST", "/admin/clients", {
            "client_id": CLIENT_ID, "client_secret": self.secret, "grant_types": ["client_credentials"],
            "token_endpoint_auth_method": "client_secret_basic", "scope": "metrics.read",
        })  # fmt: skip
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.admin_url}/health/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def _admin(
        self, method: str, path: str, body: dict[str, Any] | None = None, form: bytes | None = None
    ) -> Any:
        data = form if form is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.admin_url + path, data=data, method=method)
        kind = "application/x-www-form-urlencoded" if form is not None else "application/json"
        req.add_header("Content-Type", kind)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def active(self, token: str) -> bool:
        """Hydra's introspection of ``token`` (RFC 7662)."""
        form = urllib.parse.urlencode({"token": token}).encode()
        answer = self._admin("POST", "/admin/oauth2/introspect", form=form)
        return bool(answer.get("active"))

    def revoke_all(self) -> None:
        """Every token of the client is revoked (an operator rotating its secret)."""
        self._admin("DELETE", f"/admin/oauth2/tokens?client_id={CLIENT_ID}")


class IntrospectingProxy(Gateway):
    """Forwards to ``upstream`` a request whose bearer token Hydra calls active; 401 otherwise."""

    def __init__(self, upstream: str, hydra: Hydra) -> None:
        def check(method: str, path: str, headers: dict[str, str], body: bytes) -> Refusal | None:
            token = headers.get("Authorization", "").removeprefix("Bearer ")
            if token and hydra.active(token):
                return None
            return 401, b'{"status":"error","errorType":"unauthorized","error":"inactive token"}', token[:12]

        super().__init__(upstream, check)
