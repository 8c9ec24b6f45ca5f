"""What stands in front of a managed service's Prometheus API, on 127.0.0.1: a proxy that asks
``check`` about each request and forwards it to a real Prometheus only if it passes, as AMP's,
GMP's or an OAuth2 gateway does. Each protocol peer (``tests.aws_peer``, ``tests.gcp_peer``,
``tests.oauth2_peer``) supplies only its check; the forwarding is this one piece."""

from __future__ import annotations

import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any

Refusal = tuple[int, bytes, str]  # the status and body to answer with, and why (``refused``)
# (method, path, headers, body) -> None to forward the request, or its refusal
Check = Callable[[str, str, dict[str, str], bytes], Refusal | None]


class QuietHandler(BaseHTTPRequestHandler):
    """A test peer's request handler: answers with a body and no access log."""

    def answer(
        self, code: int, data: bytes, content_type: str = "application/json", headers: Mapping[str, str] = {}
    ) -> None:
        self.send_response(code)
        for name, value in {**headers, "Content-Type": content_type}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def token_refused(
    lock: threading.Lock, expiry: Mapping[str, float], headers: Mapping[str, str]
) -> str | None:
    """Why the request's bearer token is not one of ``expiry``'s current ones, or None if it is."""
    token = headers.get("Authorization", "").removeprefix("Bearer ")
    with lock:
        until = expiry.get(token)
    if until is not None and until > time.time():
        return None
    return "unknown or revoked token" if until is None else "expired token"


class LoopbackServer:
    """``handler`` served in a thread on a free port of 127.0.0.1 (over TLS with ``tls``)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = int(self.server.server_address[1])
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Gateway(LoopbackServer):
    """Counts what it let through (``accepted``) and why it refused the rest (``refused``)."""

    def __init__(self, upstream: str, check: Check) -> None:
        self.accepted = 0
        self.refused: list[str] = []
        lock = threading.Lock()
        gate = self

        class Handler(QuietHandler):
            def _handle(self, body: bytes) -> None:
                refusal = check(self.command, self.path, dict(self.headers), body)
                if refusal is not None:
                    status, data, reason = refusal
                    with lock:
                        gate.refused.append(reason)
                    self.answer(status, data)
                    return
                with lock:
                    gate.accepted += 1
                req = urllib.request.Request(upstream + self.path, data=body or None, method=self.command)
                if body:
                    req.add_header("Content-Type", self.headers.get("Content-Type", ""))
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        self.answer(r.status, r.read())
                except urllib.error.HTTPError as e:
                    with e:
                        self.answer(e.code, e.read())

            def do_GET(self) -> None:
                self._handle(b"")

            def do_POST(self) -> None:
                self._handle(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        super().__init__(Handler)
