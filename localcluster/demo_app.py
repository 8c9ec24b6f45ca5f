"""The demo app of the real node, as containers run it (standard library only: its image is
Debian's Python and this file).

``demo_app.py serve``: answers HTTP on :8080 and counts each request it serves in
``demo_http_requests_total`` on ``/metrics`` (Prometheus' text format), so a pod's request
rate is what Prometheus computes from what the pod really served.

``demo_app.py load URL``: sends GET requests to URL at ``LOAD_RPS`` per second (default 10),
for ever. The load's knob is its Deployment's replica count: each replica adds LOAD_RPS.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_count = 0
_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        global _count
        if self.path == "/metrics":
            with _lock:
                n = _count
            body = f"# TYPE demo_http_requests_total counter\ndemo_http_requests_total {n}\n".encode()
            ctype = "text/plain; version=0.0.4"
        else:
            with _lock:
                _count += 1
            body, ctype = b"ok\n", "text/plain"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # one line per request is noise here
        pass


def serve() -> None:
    server = ThreadingHTTPServer(("", int(os.environ.get("PORT", "8080"))), Handler)
    server.daemon_threads = True
    print("serving on", server.server_address, flush=True)
    server.serve_forever()


def load(url: str) -> None:
    rps = float(os.environ.get("LOAD_RPS", "10"))
    print(f"sending {rps}/s to {url}", flush=True)
    interval, due = 1 / rps, time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                r.read()
        except OSError as e:  # the Service may have no ready endpoint for a moment
            print("request failed:", e, flush=True)
        due += interval
        time.sleep(max(0.0, due - time.monotonic()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["load"] and len(sys.argv) == 3:
        load(sys.argv[2])
    elif sys.argv[1:] == ["serve"]:
        serve()
    else:
        sys.exit("usage: demo_app.py serve | demo_app.py load URL")
