"""Real components for tests: an exporter we control, a real Prometheus scraping it every
second, the adapter as a real process (optionally registered with the local control
plane's aggregation layer), all on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "hack"))

import localcluster  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Exporter:
    """A /metrics endpoint whose series the test sets."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = ("\n".join(f"{k} {v}" for k, v in exporter.lines.items()) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set(self, series: str, value: float | str) -> None:
        self.lines[series] = str(value)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class PrometheusProcess:
    binary: str
    directory: Path
    target_port: int
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cfg = self.directory / "prometheus.yml"
        cfg.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n"
            "- job_name: test\n  honor_labels: true\n"
            f"  static_configs: [{{targets: ['127.0.0.1:{self.target_port}']}}]\n"
        )
        log = open(self.directory / "prometheus.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        wait_http(f"{self.url}/-/ready", what="prometheus")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None

    def query(self, promql: str) -> list[Any]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as r:
            return list(json.loads(r.read())["data"]["result"])


def wait_http(url: str, what: str, timeout: float = 30, context: ssl.SSLContext | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} did not become ready at {url} within {timeout}s")


def wait_until(predicate: Any, timeout: float = 15, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def prometheus_binary() -> str:
    path = Path(localcluster.Binaries(localcluster.cache_bin()).prometheus)
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Prometheus is not installed: run `make cluster-tools`", pytrace=False)
        pytest.skip("Prometheus is not installed: run `make cluster-tools` to enable the adapter tests")
    return str(path)


@dataclass
class AdapterProcess:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    ctx: ssl.SSLContext
    health_port: int = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=15, context=self.ctx) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            with e:  # an error response holds its socket until closed
                return e.code, json.loads(e.read())

    def text(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10, context=self.ctx) as r:
            return str(r.read().decode())


def start_adapter(
    directory: Path,
    prometheus_url: str,
    config: str,
    *extra: str,
    insecure: bool = True,
    port: int | None = None,
) -> AdapterProcess:
    cfg = directory / "adapter.yaml"
    cfg.write_text(config)
    port = port or free_port()
    health_port = free_port()
    log = directory / "adapter.log"
    out = open(log, "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adapter",
            *(["--insecure-skip-auth"] if insecure else []),
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--health-port={health_port}",
            f"--prometheus-url={prometheus_url}",
            f"--config={cfg}",
            f"--cert-dir={directory / 'certs'}",
            "--log-format=console",
            *extra,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    out.close()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the test trusts the adapter's fresh self-signed certificate
    a = AdapterProcess(port, proc, log, ctx, health_port)
    try:
        wait_http(f"{a.url}/readyz", "adapter", timeout=30, context=ctx)
    except AssertionError:
        stop_adapter(a)
        raise AssertionError("adapter did not become ready:\n" + log.read_text()[-3000:]) from None
    return a


def stop_adapter(a: AdapterProcess) -> None:
    if a.proc.poll() is None:
        a.proc.terminate()
        try:
            a.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            a.proc.kill()
            a.proc.wait()


def register_and_start_adapter(
    cluster: localcluster.Cluster, prometheus: PrometheusProcess, work: Path, config: str, *extra: str
) -> AdapterProcess:
    """The adapter registered as a cluster would do it, running with its ServiceAccount's token."""
    import json as _json

    from adapter.tls import self_signed

    port = free_port()
    cert, key = self_signed(work / "certs", ["promhpa-adapter.promhpa.svc"])
    manifests = localcluster.adapter_manifests(
        "promhpa", "promhpa-adapter", port, cert.read_bytes(), resource_metrics=True
    )
    cluster.kubectl(
        "apply", "-f", "-", input=_json.dumps({"apiVersion": "v1", "kind": "List", "items": manifests})
    )
    kubeconfig = localcluster.service_account_kubeconfig(
        cluster, "promhpa", "promhpa-adapter", work / "adapter.kubeconfig"
    )
    a = start_adapter(
        work,
        prometheus.url,
        config,
        f"--kubeconfig={kubeconfig}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        "--query-cache-ttl=0s",
        *extra,
        insecure=False,
        port=port,
    )

    def available() -> bool:
        out = _json.loads(cluster.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
        mine = [s for s in out if s["spec"].get("service")]
        return len(mine) == 4 and all(
            any(
                c["type"] == "Available" and c["status"] == "True"
                for c in s.get("status", {}).get("conditions", [])
            )
            for s in mine
        )

    try:
        wait_until(available, timeout=60, what="APIServices Available")
    except AssertionError:
        stop_adapter(a)
        raise
    return a


def start_controller_process(kubeconfig: Path, log: Path, *flags: str) -> subprocess.Popen[bytes]:
    """`python -m controller run` on loopback with its output appended to ``log``."""
    out = open(log, "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "run",
            f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            *(flags if any(f.startswith("--port=") for f in flags) else (*flags, f"--port={free_port()}")),
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    out.close()
    return proc


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM (a clean stop: the controller hands its Lease over), then SIGKILL."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_deployment(namespace: str, name: str, request: str = "100m") -> dict[str, Any]:
    """A one-replica Deployment whose container requests CPU (for Resource metrics)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": f"example.invalid/{name}",
                            "resources": {"requests": {"cpu": request}},
                        }
                    ]
                },
            },
        },
    }
