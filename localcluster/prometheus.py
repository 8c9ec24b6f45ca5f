"""A real Prometheus for tests, benchmarks and the demo: an exporter whose series the
caller sets, and a Prometheus process scraping it every second, on 127.0.0.1."""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .tools import Binaries, cache_bin, free_port, wait_http


class Exporter:
    """A /metrics endpoint whose series the test sets."""

    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = ("\n".join(f"{k} {v}" for k, v in exporter.lines.items()) + "\n").encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a scrape that timed out on a loaded machine closed first: nothing to say

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
    extra_config: str = ""  # more scrape jobs (YAML list items) for a monitoring Prometheus
    rule_files: tuple[str, ...] = ()
    # every second for tests; a benchmark of a million series scrapes them slower
    scrape_interval: str = "1s"
    scrape_timeout: str = "1s"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cfg = self.directory / "prometheus.yml"
        cfg.write_text(
            f"global: {{scrape_interval: {self.scrape_interval}, scrape_timeout: {self.scrape_timeout}, "
            "evaluation_interval: 1s}\nscrape_configs:\n"
            "- job_name: test\n  honor_labels: true\n"
            f"  static_configs: [{{targets: ['127.0.0.1:{self.target_port}']}}]\n"
            + self.extra_config
            + (f"rule_files: {list(self.rule_files)}\n" if self.rule_files else "")
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

    def sampled_since(self, selector: str, moment: float) -> bool:
        """Whether a series of ``selector`` has a sample scraped at or after ``moment`` (Unix
        seconds): a range ending then is whole in the TSDB."""
        return any(float(r["value"][1]) >= moment for r in self.query(f"timestamp({selector})"))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None

    def query(self, promql: str) -> list[Any]:
        """An instant query's result (tooling: synchronous, prometheus-api-client's)."""
        from prometheus_api_client import PrometheusConnect

        return list(PrometheusConnect(self.url, disable_ssl=True, timeout=5).custom_query(promql))


def prometheus_path() -> Path:
    """Where hack/build-tools.sh puts Prometheus (it may not be built yet)."""
    return Path(Binaries(cache_bin()).prometheus)
