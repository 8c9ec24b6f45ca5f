"""Test-side access to the real components (``localcluster``): the same helpers, plus the
one policy for a test whose tool, cluster or folder is missing (``missing``): it fails,
unless the person running the tests opted into skipping with ``PROMHPA_ALLOW_SKIPS=1``.
A skipped suite is a green run that proved nothing, so CI never opts in."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from typing import NoReturn

import pytest

from localcluster import ROOT
from localcluster import free_port
from localcluster.prometheus import Exporter
from localcluster.prometheus import PrometheusProcess
from localcluster.prometheus import prometheus_path
from localcluster.promhpa import AdapterProcess
from localcluster.promhpa import controller_get
from localcluster.promhpa import controller_get_json
from localcluster.promhpa import cpu_deployment
from localcluster.promhpa import external_rules
from localcluster.promhpa import pods_rules
from localcluster.promhpa import register_and_start_adapter
from localcluster.promhpa import start_adapter
from localcluster.promhpa import start_controller_process
from localcluster.promhpa import start_hpa_only_kcm
from localcluster.promhpa import start_prometheus_adapter
from localcluster.promhpa import stop_adapter
from localcluster.promhpa import stop_process
from localcluster.tools import insecure_tls
from localcluster.tools import wait_http
from localcluster.tools import wait_until
from tests.gateway import QuietHandler

__all__ = [
    "ROOT",
    "AdapterProcess",
    "Exporter",
    "PrometheusProcess",
    "Recorder",
    "controller_get",
    "controller_get_json",
    "cpu_deployment",
    "external_metric_app",
    "external_rules",
    "free_port",
    "insecure_tls",
    "leader_identity",
    "pods_rules",
    "prefixed_rules",
    "prometheus_adapter_binary",
    "prometheus_binary",
    "python_m",
    "register_and_start_adapter",
    "start_adapter",
    "start_controller_process",
    "start_hpa_only_kcm",
    "start_prometheus_adapter",
    "stop_adapter",
    "stop_process",
    "thanos_binary",
    "wait_http",
    "wait_until",
]


def external_metric_app(
    namespace: str,
    name: str,
    metric: str,
    *,
    labels: dict[str, str],
    replicas: int = 1,
    min_replicas: int = 1,
    max_replicas: int = 5,
    average_value: str = "10",
    selector: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A Deployment of kwok pods and an HPA (``labels``) on one External metric's average."""
    metric_ref: dict[str, Any] = {"name": metric}
    if selector:
        metric_ref["selector"] = {"matchLabels": selector}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "example.invalid/x"}]},
                },
            },
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "minReplicas": min_replicas,
                "maxReplicas": max_replicas,
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": metric_ref,
                            "target": {"type": "AverageValue", "averageValue": average_value},
                        },
                    }
                ],
            },
        },
    ]


METRIC_RULE_CRDS = ROOT / "charts" / "promhpa" / "crds" / "metricrules.yaml"


def install_metric_rule_crds(cluster: Any, *namespaces: str) -> None:
    """The chart's MetricRule and ClusterMetricRule CRDs, established, and ``namespaces``."""
    cluster.kubectl("apply", "--server-side", "-f", str(METRIC_RULE_CRDS))
    cluster.kubectl("wait", "--for=condition=Established", "crd/metricrules.promhpa.io", "--timeout=60s")
    for ns in namespaces:
        cluster.kubectl("create", "namespace", ns, check=False)


def leader_identity(log: Path) -> str:
    """The leader-election identity a controller logged at start (host name and a UUID)."""
    found: list[str] = []

    def logged() -> bool:
        m = re.search(r"identity=(\S+)", log.read_text())
        if m:
            found.append(m.group(1))
        return bool(m)

    wait_until(logged, timeout=30, what=f"the leader-election identity in {log}")
    return found[0]


def pod_manifest(name: str, namespace: str, labels: dict[str, str]) -> dict[str, object]:
    """A pod the tests create for its name and labels (it is never scheduled to run)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "example.invalid/x"}]},
    }


def hydra_binary() -> str:
    from localcluster.tools import Binaries
    from localcluster.tools import cache_bin

    return _built(Path(Binaries(cache_bin()).hydra), "Ory Hydra", "the OAuth2 tests")


def mimir_binary() -> str:
    from localcluster.tools import Binaries
    from localcluster.tools import cache_bin

    return _built(Path(Binaries(cache_bin()).mimir), "Grafana Mimir", "the tenants tests")


def prometheus_adapter_binary() -> str:
    from localcluster.tools import Binaries
    from localcluster.tools import cache_bin

    return _built(Path(Binaries(cache_bin()).prometheus_adapter), "prometheus-adapter", "the upstream tests")


def prometheus_binary() -> str:
    return _built(prometheus_path(), "Prometheus", "the adapter tests")


def thanos_binary() -> str:
    from localcluster.thanos import thanos_path

    return _built(thanos_path(), "Thanos", "the Thanos tests")


ALLOW_SKIPS = "PROMHPA_ALLOW_SKIPS"


def freeze(pid: int, timeout: float = 10) -> None:
    """SIGSTOP ``pid`` and wait until every one of its threads has stopped: ``kill`` only
    queues the signal, and a thread still running on another core may answer one more
    request (a Go server has many threads), which made "hung" tests race the signal."""
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        states = []
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                stat = (task / "stat").read_text()
            except OSError:
                continue  # a thread that just ended
            states.append(stat.rsplit(")", 1)[1].split()[0])
        return bool(states) and all(s in ("T", "t") for s in states)

    deadline = time.monotonic() + timeout
    while not stopped():
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} still has running threads {timeout:g}s after SIGSTOP")
        time.sleep(0.005)


def python_m(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` from the checkout as a user runs it: output captured as text, the
    exit code left for the test to judge."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
        **kw,
    )


def skips_allowed() -> bool:
    """The explicit opt-in; CI (``CI=true``) never skips, whatever the environment says."""
    return os.environ.get(ALLOW_SKIPS) == "1" and os.environ.get("CI") != "true"


def missing(what: str) -> NoReturn:
    """A test cannot run because ``what`` is missing: a failure, or a skip for someone who
    set ``PROMHPA_ALLOW_SKIPS=1``."""
    if skips_allowed():
        pytest.skip(f"{what} ({ALLOW_SKIPS}=1)")
    pytest.fail(f"{what}; set {ALLOW_SKIPS}=1 to skip such tests instead", pytrace=False)


def _built(path: Path, name: str, enables: str) -> str:
    """A binary from `make cluster-tools`, or a failure (``missing``) that says how to build it."""
    if not path.exists():
        missing(f"{name} is not installed at {path}: run `make cluster-tools` to enable {enables}")
    return str(path)


def prefixed_rules(prefix: str) -> str:
    """The rule file the live tests share, for series named ``<prefix>_*``: every such
    series with namespace and pod labels as a Pods metric, ``<prefix>_service_rps`` per
    Service, ``<prefix>_queue_depth`` as an External metric by queue, and CPU from
    ``<prefix>_container_cpu_cores``. A 1s resource window: within the CPU initialization
    period upstream drops samples whose window began before the pod became Ready, and test
    pods became Ready seconds ago."""
    p = prefix
    return (
        pods_rules(p)
        + f"""- seriesQuery: '{{__name__="{p}_service_rps",namespace!="",service!=""}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}, service: {{resource: service}}}}
  name: {{matches: "^{p}_(.*)$", as: "${{1}}"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{{__name__="{p}_queue_depth"}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum({p}_container_cpu_cores{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    nodeQuery: 'sum({p}_node_cpu_cores{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    resources:
      overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}, node: {{resource: node}}}}
    containerLabel: container
  window: 1s
"""
    )


def every_kind_rules(p: str, node_metric: bool = False) -> str:
    """A rule of every kind over series named ``<p>_*``: ``<p>_requests`` per pod and
    ``<p>_ns_load`` per namespace (and ``<p>_node_load`` per node, with ``node_metric``),
    ``<p>_queue`` as an External metric by queue, CPU from ``<p>_cpu`` and ``<p>_node_cpu``.
    For the tests that walk every path the APIs serve."""
    everything = "{namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}"
    per_node = f"""- seriesQuery: '{{__name__="{p}_node_load",node!=""}}'
  resources: {{overrides: {{node: {{resource: node}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
"""
    return f"""
rules:
- seriesQuery: '{{__name__="{p}_requests",namespace!="",pod!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
- seriesQuery: '{{__name__="{p}_ns_load",namespace!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
{per_node if node_metric else ""}externalRules:
- seriesQuery: '{{__name__="{p}_queue",namespace!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum({p}_cpu{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    nodeQuery: 'sum({p}_node_cpu{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    resources: {{overrides: {everything}}}
    containerLabel: container
  window: 1m
"""


@dataclass
class Recorder:
    """A forwarding proxy to Prometheus that keeps (query, status) of every instant query,
    and the HTTP method of each; with ``max_url`` it refuses longer request lines with 414,
    as proxies in front of Prometheus do; with ``throttle`` set to N it answers the next N
    queries ``throttle_status`` (429) with ``retry_after`` (if set) as a throttling managed
    service does, without forwarding them."""

    upstream: str
    max_url: int = 0
    throttle: int = 0
    throttle_status: int = 429
    retry_after: str | None = None
    arrivals: list[float] = field(default_factory=list)  # monotonic time of every query
    queries: list[tuple[str, int]] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    # (path, parameters, headers) of every call, for backends' headers and parameters
    calls: list[tuple[str, dict[str, list[str]], dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> str:
        rec = self

        class Handler(QuietHandler):
            def _forward(self, body: bytes | None) -> None:
                with rec.lock:
                    rec.methods.append(self.command)
                    if self.path.startswith("/api/v1/query"):
                        rec.arrivals.append(time.monotonic())
                    throttled = rec.throttle > 0 and self.path.startswith("/api/v1/query")
                    rec.throttle -= 1 if throttled else 0
                if throttled:
                    data = b'{"status":"error","errorType":"throttled","error":"rate exceeded"}'
                    self.send_response(rec.throttle_status)
                    if rec.retry_after is not None:
                        self.send_header("Retry-After", rec.retry_after)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if rec.max_url and len(self.path) > rec.max_url:
                    self.send_response(414)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                url = rec.upstream + self.path
                params = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                if body:
                    params.update(urllib.parse.parse_qs(body.decode()))
                req = urllib.request.Request(url, data=body, method=self.command)
                if body:
                    req.add_header("Content-Type", "application/x-www-form-urlencoded")
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        code, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    with e:
                        code, data = e.code, e.read()
                except OSError as e:  # upstream down: what a proxy answers
                    code, data = 502, f'{{"status":"error","error":"upstream: {e}"}}'.encode()
                with rec.lock:
                    rec.calls.append((urllib.parse.urlsplit(self.path).path, params, dict(self.headers)))
                if self.path.startswith("/api/v1/query"):
                    with rec.lock:
                        rec.queries.append((params.get("query", [""])[0], code))
                self.answer(code, data)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Recorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take(self) -> list[tuple[str, int]]:
        with self.lock:
            out, self.queries = self.queries, []
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Reader:
    """Calls ``read`` every ``every`` seconds in a thread until ``stop``: each call returns
    None when the read succeeded, else what failed (kept in ``failures``). The credential
    tests' "no failed read while X rotates" reader."""

    def __init__(self, read: Callable[[], str | None], every: float = 0.25) -> None:
        self.reads = 0
        self.failures: list[str] = []
        self._read, self._every = read, every
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.reads += 1
            failed = self._read()
            if failed is not None:
                self.failures.append(f"{time.monotonic() - self._t0:.1f}s: {failed}")

    def stop(self) -> Reader:
        self._stop.set()
        self._thread.join()
        return self

    @property
    def report(self) -> str:
        return f"{len(self.failures)} of {self.reads} reads failed: {self.failures[:3]}"


def failed_read(adapter: AdapterProcess, path: str, expect: bytes = b"") -> str | None:
    """One GET of ``path`` from the adapter: None if it answered 200 (with ``expect`` in the
    body), else what went wrong -- a ``Reader``'s read."""
    try:
        with urllib.request.urlopen(adapter.url + path, context=adapter.ctx, timeout=5) as r:
            return None if expect in r.read() else f"no {expect!r} in the answer"
    except (urllib.error.URLError, OSError) as e:
        body = e.read()[:300] if isinstance(e, urllib.error.HTTPError) else b""
        return f"{e} {body!r}"


def answer(adapter: AdapterProcess, path: str) -> tuple[int, str]:
    """The adapter's status and body for a GET of ``path``, errors included."""
    try:
        with urllib.request.urlopen(adapter.url + path, context=adapter.ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


def read_for(read: Callable[[], str | None], seconds: float) -> Reader:
    """A ``Reader`` over ``seconds``, stopped."""
    reader = Reader(read)
    time.sleep(seconds)
    return reader.stop()


def serving(adapter: AdapterProcess, path: str) -> tuple[int, str]:
    """The adapter's first 200 answer for ``path``, once it gives one (within 30 s)."""
    wait_until(lambda: answer(adapter, path)[0] == 200, timeout=30, what=f"the adapter serving {path}")
    return answer(adapter, path)


def soak(adapter: AdapterProcess, path: str, seconds: float, issued: Callable[[], int]) -> tuple[Reader, int]:
    """Reads of ``path`` every 250 ms for ``seconds`` once it is served, and how many more
    credentials ``issued()`` counts at the end than at the start (their refreshes)."""
    serving(adapter, path)
    before = issued()
    reader = read_for(lambda: failed_read(adapter, path), seconds)
    return reader, issued() - before


def probe_scraped(
    prometheus: PrometheusProcess, exporter: Exporter, metric: str, namespace: str, value: float
) -> None:
    """``metric`` of ``namespace`` at ``value`` on the exporter, once Prometheus has scraped it."""
    exporter.set(f'{metric}{{namespace="{namespace}"}}', value)
    wait_until(lambda: prometheus.query(metric) != [], what="the probe scraped")


def assert_soak_passed(
    reader: Reader, refreshed: int, seconds: float, lifetime: float, refused: object
) -> None:
    """A credential soak held: no failed read, a refresh at least once per ``lifetime`` over
    ``seconds``, and nothing the server refused (``refused``: its record of refusals)."""
    assert reader.failures == [], reader.report
    assert refreshed >= seconds / lifetime
    assert not refused  # never sent an expired token


def serve_and_stop(adapter: AdapterProcess, path: str) -> tuple[int, str]:
    """``serving``'s answer; the adapter is stopped after it, whatever happened."""
    try:
        return serving(adapter, path)
    finally:
        stop_adapter(adapter)


def soak_and_stop(
    adapter: AdapterProcess, path: str, seconds: float, issued: Callable[[], int]
) -> tuple[Reader, int]:
    """``soak``'s reads and refreshes; the adapter is stopped after them, whatever happened."""
    try:
        return soak(adapter, path, seconds, issued)
    finally:
        stop_adapter(adapter)


def answer_after(adapter: AdapterProcess, path: str, change: Callable[[], object]) -> tuple[int, str]:
    """Once ``path`` is served: ``change()``, then one more answer for it; the adapter is
    stopped after, whatever happened."""
    try:
        serving(adapter, path)
        change()
        return answer(adapter, path)
    finally:
        stop_adapter(adapter)


def adapter_says(directory: Path, prometheus_url: str, rules: str, expected: str, *flags: str) -> str:
    """Starts the adapter on loopback without waiting for it to be ready (it may never be: a
    backend it cannot authenticate to), until its log says ``expected``; the log then."""
    from localcluster.promhpa import python_m as adapter_process

    (directory / "rules.yaml").write_text(rules)
    log = directory / "adapter.log"
    proc = adapter_process(
        log, "adapter", "--insecure-skip-auth", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
        f"--health-port={free_port()}", f"--prometheus-url={prometheus_url}",
        f"--config={directory / 'rules.yaml'}", f"--cert-dir={directory / 'certs'}", "--log-format=console",
        *flags,
    )  # fmt: skip
    try:
        wait_until(
            lambda: expected in log.read_text(), timeout=60, what=f"the adapter's log to say {expected!r}"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return log.read_text()


# how a Prometheus client is used: a tool's connection per call ("own"), or the serving
# loop's kept-alive connections, attached as the adapter's app attaches them ("loop")
TRANSPORTS = ["own", "loop"]


def query_values(p: Any, transport: str, promql: str) -> list[float]:
    """``promql``'s values through ``promclient.prometheus.Prometheus`` ``p`` over one transport."""
    import asyncio

    from shared.httpclient import Connections

    async def go() -> list[float]:
        if transport == "own":
            return [s.value for s in await p.query(promql)]
        async with Connections() as connections:
            p.attach(connections)
            try:
                return [s.value for s in await p.query(promql)]
            finally:
                p.attach(None)

    return asyncio.run(go())
