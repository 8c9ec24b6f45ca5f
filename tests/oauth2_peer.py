"""A Prometheus behind an OAuth2 gateway, on 127.0.0.1: Ory Hydra (built from the Go module
proxy, in memory, telemetry off) issues client-credentials tokens, and a proxy in front of a
real Prometheus accepts a request only if Hydra's own introspection says its bearer token is
active -- so Hydra, not the test, decides what a valid token is."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from localcluster import free_port
from localcluster.tools import wait_until

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


class IntrospectingProxy:
    def __init__(self, upstream: str, hydra: Hydra) -> None:
        self.accepted = 0
        self.refused: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self, body: bytes) -> None:
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                if not token or not hydra.active(token):
                    proxy.refused.append(token[:12])
                    body = b'{"status":"error","errorType":"unauthorized","error":"inactive token"}'
                    self._answer(401, body)
                    return
                proxy.accepted += 1
                req = urllib.request.Request(upstream + self.path, data=body or None, method=self.command)
                if body:
                    req.add_header("Content-Type", self.headers.get("Content-Type", ""))
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        self._answer(r.status, r.read())
                except urllib.error.HTTPError as e:
                    with e:
                        self._answer(e.code, e.read())

            def _answer(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._handle(b"")

            def do_POST(self) -> None:
                self._handle(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
