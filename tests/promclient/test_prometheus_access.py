"""Prometheus access against a real Prometheus: caching, coalescing, counters through rate()."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from adapter.serving.app import AdapterMetrics
from promclient.backends import Backends
from promclient.promapi import PrometheusUnavailable
from promclient.prometheus import Prometheus
from promclient.prometheus import PrometheusSettings
from rules.config import Backend
from rules.config import parse_config
from tests.support import TRANSPORTS
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import python_m
from tests.support import query_values
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until


def counting(prometheus: PrometheusProcess, ttl: float) -> tuple[Prometheus, list[str]]:
    calls: list[str] = []
    return Prometheus(
        PrometheusSettings(prometheus.url),
        cache_ttl=ttl,
        on_query=lambda kind, seconds, ok: calls.append(kind),
    ), calls


def test_identical_concurrent_queries_share_one_prometheus_query(prometheus: PrometheusProcess) -> None:
    prom, calls = counting(prometheus, ttl=0)

    async def burst() -> list[int]:
        results = await asyncio.gather(*(prom.query("vector(7)") for _ in range(20)))
        return [len(r) for r in results]

    assert asyncio.run(burst()) == [1] * 20
    assert calls == ["query"]


def test_results_are_reused_for_the_cache_ttl(prometheus: PrometheusProcess) -> None:
    prom, calls = counting(prometheus, ttl=60)

    async def twice() -> None:
        await prom.query("vector(8)")
        await prom.query("vector(8)")

    asyncio.run(twice())
    assert calls == ["query"]
    assert prom.cache_hits == 1


def test_the_cache_hits_gauge_counts_every_backends_hits(prometheus: PrometheusProcess) -> None:
    default, _ = counting(prometheus, ttl=60)
    other, _ = counting(prometheus, ttl=60)
    backends = Backends(default, lambda spec: other, [Backend(name="team-b", url=prometheus.url)])
    metrics = AdapterMetrics()
    metrics.count_cache_hits_of(backends)  # as build_app does with the serving adapter's backends

    async def repeated() -> None:
        for client in (backends.get(""), backends.get("team-b")):
            for _ in range(3):
                await client.query("vector(9)")

    asyncio.run(repeated())
    assert "promhpa_adapter_query_cache_hits 4.0" in generate_latest(metrics.registry).decode()


@pytest.fixture
def ticking_counter(exporter: Exporter) -> Iterator[None]:
    stop = threading.Event()

    def tick() -> None:
        value = 0
        while not stop.is_set():
            value += 10
            exporter.set('rate_test_requests_total{namespace="default",pod="web-0"}', value)
            time.sleep(0.5)

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    yield
    stop.set()
    t.join()


def test_counters_are_served_through_rate(
    ticking_counter: None, exporter: Exporter, prometheus: PrometheusProcess, tmp_path: object
) -> None:
    config = """
rules:
- seriesQuery: '{__name__="rate_test_requests_total",namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[10s])) by (<<.GroupBy>>)'
"""

    def window_full() -> bool:  # rate() under-reports while the series is younger than its window
        r = prometheus.query("rate(rate_test_requests_total[10s])")
        return bool(r) and float(r[0]["value"][1]) >= 15

    wait_until(window_full, timeout=30, what="a full 10s window of the counter")
    a: AdapterProcess = start_adapter(tmp_path, prometheus.url, config, "--query-cache-ttl=0s")  # type: ignore[arg-type]
    try:
        code, body = a.get(
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/web-0/rate_test_requests_per_second"
        )
        assert code == 200
        value = body["items"][0]["value"]
        per_second = float(value[:-1]) / 1000 if value.endswith("m") else float(value)
        assert 15 <= per_second <= 25  # +10 every 0.5s
    finally:
        stop_adapter(a)


def test_insecure_mode_refuses_a_non_loopback_bind_address() -> None:
    out = python_m("adapter", "--insecure-skip-auth", "--bind-address=0.0.0.0",
                   "--prometheus-url=http://127.0.0.1:1", "--log-format=console", timeout=30)  # fmt: skip
    assert out.returncode == 2
    assert "only binds to loopback" in out.stdout + out.stderr


def test_secure_mode_without_a_cluster_fails_clearly(tmp_path: object) -> None:
    missing = f"{tmp_path}/no-such-kubeconfig"
    out = python_m("adapter", "--bind-address=127.0.0.1", "--prometheus-url=http://127.0.0.1:1",
                   f"--kubeconfig={missing}", "--log-format=console", timeout=30)  # fmt: skip
    assert out.returncode == 2
    assert "cannot set up delegated authentication" in out.stdout + out.stderr


def test_prometheus_adapters_klog_flags_are_accepted(prometheus: PrometheusProcess, tmp_path: object) -> None:
    """prometheus-community's chart passes --v=4 and --logtostderr: a migration needs no edit."""
    config = """
rules:
- seriesQuery: '{__name__="klog_flag_probe"}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
    a = start_adapter(tmp_path, prometheus.url, config, "--v=4", "--logtostderr=true")  # type: ignore[arg-type]
    try:
        assert a.get("/apis/custom.metrics.k8s.io/v1beta2")[0] == 200
        assert "accepted for prometheus-adapter compatibility and ignored" in a.log.read_text()
    finally:
        stop_adapter(a)


def test_a_range_query_in_chunks_equals_one_in_a_piece(
    exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    exporter.set('range_probe{pod="a"}', 1)
    exporter.set('range_probe{pod="b"}', 2)
    wait_until(lambda: len(prometheus.query("range_probe")) == 2, what="scrape")
    # more than the range's 5 s of history, whole seconds back: 8 samples of each, a second apart
    history = "count_over_time(range_probe[1m]) >= 8"
    wait_until(lambda: len(prometheus.query(history)) == 2, timeout=20, what="8 samples of each")
    end = datetime.now(UTC).replace(microsecond=0)
    start, step = end - timedelta(seconds=5), timedelta(milliseconds=500)
    p = Prometheus(PrometheusSettings(prometheus.url), cache_ttl=0)
    try:
        whole = asyncio.run(p.query_range("range_probe", start, end, step))
        chunked = asyncio.run(p.query_range("range_probe", start, end, step, max_points=4))
    finally:
        p.close()
    assert sorted((sorted(labels.items()), values) for labels, values in chunked) == sorted(
        (sorted(labels.items()), values) for labels, values in whole
    )
    assert {len(v) for _, v in chunked} == {11}  # every step, none twice at a chunk boundary


def test_a_query_over_5000_pods_is_posted_past_a_proxys_url_limit(
    exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    """The query a pods/* request over 5,000 pods becomes (one regex of every name) is
    ~44 KB here (~100 KB with real pod names): as a GET, a proxy with nginx's 8 KB limit
    refuses it."""
    from rules.naming import PODS
    from rules.queries import ObjectQuery
    from rules.queries import custom_query
    from tests.support import Recorder

    exporter.set('big_requests{namespace="big",pod="web-1234"}', 3)
    exporter.set('big_requests{namespace="big",pod="web-4999"}', 4)
    wait_until(lambda: len(prometheus.query("big_requests")) == 2, what="scrape")
    rule = parse_config(
        """
rules:
- seriesQuery: '{__name__="big_requests"}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
    ).rules[0]
    names = tuple(f"web-{i}" for i in range(5000))
    query, _ = custom_query(rule, "big_requests", ObjectQuery(PODS, "big", names))
    assert len(query) > 40_000
    proxy = Recorder(prometheus.url, max_url=8192)
    url = proxy.start()
    try:
        p = Prometheus(PrometheusSettings(url), cache_ttl=0)
        got = {s.labels["pod"]: s.value for s in asyncio.run(p.query(query))}
        assert got == {"web-1234": 3.0, "web-4999": 4.0}
        assert proxy.methods[-1] == "POST"
        short = asyncio.run(p.query('big_requests{pod="web-1234"}'))
        assert [s.value for s in short] == [3.0]
        assert proxy.methods[-1] == "GET"  # short queries stay cacheable GETs
        never = Prometheus(PrometheusSettings(url, post_over=0), cache_ttl=0)
        with pytest.raises(PrometheusUnavailable, match="414"):
            asyncio.run(never.query(query))  # the refusal POST avoids
        p.close()
        never.close()
    finally:
        proxy.close()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--tls-cert-file=/no/such.crt", "--tls-private-key-file=/no/such.key"],
            "cannot load the serving certificate",
        ),
        (["--prometheus-url=prometheus:9090"], "--prometheus-url must be an http(s) URL"),
        (["--secure-port={busy}"], "cannot serve"),
    ],
    ids=["certificate", "prometheus-url", "port-in-use"],
)
def test_startup_mistakes_are_one_clean_error(flags: list[str], message: str, tmp_path: Path) -> None:
    import socket

    log = tmp_path / "adapter.log"
    with socket.socket() as busy, open(log, "w") as out:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        argv = [f.format(busy=busy.getsockname()[1]) for f in flags]
        # output to a file and wait for the exit: a pipe's end may outlive the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "adapter", "--insecure-skip-auth", "--bind-address=127.0.0.1",
             "--health-port=0", "--prometheus-url=http://127.0.0.1:1", "--secure-port=0",
             f"--cert-dir={tmp_path / 'certs'}", *argv,
             "--log-format=console"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            code = proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait()  # reaped here, not warned about by a later test's garbage collection
    text = log.read_text()
    assert code == 2, text
    assert message in text
    assert "Traceback" not in text


@pytest.fixture(scope="module")
def tls_prometheus(
    exporter: Exporter, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A real Prometheus that serves only TLS and requires a client certificate from our CA."""
    from localcluster.pki import issue
    from localcluster.pki import make_ca
    from tests.support import free_port
    from tests.support import prometheus_binary

    d = tmp_path_factory.mktemp("tls-prometheus")
    ca = make_ca(d / "ca", "promhpa-test-ca")
    issue(d / "server", ca, "prometheus", ips=("127.0.0.1",), server=True)
    issue(d / "client", ca, "promhpa-adapter")
    (d / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: {d / 'server.crt'}\n  key_file: {d / 'server.key'}\n"
        f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {d / 'ca.crt'}\n"
    )
    (d / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: test\n  honor_labels: true\n"
        f"  static_configs: [{{targets: ['127.0.0.1:{exporter.port}']}}]\n"
    )
    port = free_port()
    with open(d / "prometheus.log", "ab") as log:
        proc = subprocess.Popen(
            [prometheus_binary(), f"--config.file={d / 'prometheus.yml'}",
             f"--storage.tsdb.path={d / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
             f"--web.config.file={d / 'web.yml'}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"https://127.0.0.1:{port}"
    exporter.set('tls_probe{namespace="tls"}', 5)
    p = Prometheus(
        PrometheusSettings(url, ca_file=str(d / "ca.crt"), client_cert=str(d / "client.crt"),
                           client_key=str(d / "client.key")),
        cache_ttl=0,
    )  # fmt: skip
    try:
        wait_until(lambda: _answers(p), timeout=60, what="TLS Prometheus with the first scrape")
        yield url, d
    finally:
        p.close()
        proc.terminate()
        proc.wait(timeout=20)


def _answers(p: Prometheus) -> bool:
    try:
        return query_values(p, "own", "tls_probe") == [5.0]
    except PrometheusUnavailable:
        return False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mutual_tls_uses_our_ca_and_client_certificate(
    transport: str, tls_prometheus: tuple[str, Path]
) -> None:
    url, d = tls_prometheus
    good = Prometheus(
        PrometheusSettings(url, ca_file=str(d / "ca.crt"), client_cert=str(d / "client.crt"),
                           client_key=str(d / "client.key")),
        cache_ttl=0,
    )  # fmt: skip
    no_client_cert = Prometheus(PrometheusSettings(url, ca_file=str(d / "ca.crt")), cache_ttl=0)
    unknown_ca = Prometheus(
        PrometheusSettings(url, client_cert=str(d / "client.crt"), client_key=str(d / "client.key")),
        cache_ttl=0,
    )
    try:
        assert query_values(good, transport, "tls_probe") == [5.0]
        for refused in (no_client_cert, unknown_ca):
            with pytest.raises(PrometheusUnavailable):
                query_values(refused, transport, "tls_probe")
    finally:
        for p in (good, no_client_cert, unknown_ca):
            p.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_without_a_ca_file_the_systems_cas_verify_prometheus(
    transport: str, tls_prometheus: tuple[str, Path]
) -> None:
    url, _ = tls_prometheus
    system_cas = Prometheus(PrometheusSettings(url), cache_ttl=0)  # the test CA is not among them
    try:
        with pytest.raises(PrometheusUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            query_values(system_cas, transport, "tls_probe")
    finally:
        system_cas.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_credentials_and_headers_reach_prometheus(
    transport: str, prometheus: PrometheusProcess, exporter: Exporter, tmp_path: Path
) -> None:
    from tests.support import Recorder

    exporter.set('cred_probe{namespace="c"}', 2)
    wait_until(lambda: prometheus.query("cred_probe") != [], what="scrape")
    token = tmp_path / "token"
    token.write_text("first-token\n")
    proxy = Recorder(prometheus.url)
    url = proxy.start()
    bearer = Prometheus(
        PrometheusSettings(url, token_file=str(token), headers={"X-Scope-OrgID": "team-a"},
                           params={"dedup": "true"}),
        cache_ttl=0,
    )  # fmt: skip
    basic = Prometheus(PrometheusSettings(url, basic_auth=("adapter", "s3cret")), cache_ttl=0)
    try:
        assert query_values(bearer, transport, "cred_probe") == [2.0]
        _, params, headers = proxy.calls[-1]
        assert headers["Authorization"] == "Bearer first-token"
        assert headers["X-Scope-OrgID"] == "team-a"
        assert params["dedup"] == ["true"]
        assert query_values(basic, transport, "cred_probe") == [2.0]
        assert proxy.calls[-1][2]["Authorization"] == "Basic YWRhcHRlcjpzM2NyZXQ="
    finally:
        bearer.close()
        basic.close()
        proxy.close()


def test_every_call_of_a_tool_carries_the_backends_credentials_and_parameters(
    prometheus: PrometheusProcess, exporter: Exporter, tmp_path: Path
) -> None:
    """check-config and the replay reach Prometheus with the serving code: range queries,
    series and label names carry the token, headers and parameters an instant query does,
    and a range query too long for a URL is POSTed like one."""
    from tests.support import Recorder

    exporter.set('tool_probe{pod="a"}', 4)
    history = "count_over_time(tool_probe[1m]) >= 6"  # scraped every second: the range is whole
    wait_until(lambda: prometheus.query(history) != [], timeout=20, what="6 samples")
    token = tmp_path / "token"
    token.write_text("tool-token\n")
    proxy = Recorder(prometheus.url, max_url=2048)
    url = proxy.start()
    p = Prometheus(
        PrometheusSettings(url, token_file=str(token), headers={"X-Scope-OrgID": "team-t"},
                           params={"dedup": "true"}, post_over=1024),
        cache_ttl=0,
    )  # fmt: skip
    end = datetime.now(UTC).replace(microsecond=0)
    long = "tool_probe" + " or tool_probe" * 200  # ~2.8 KB: refused as a URL by the proxy

    async def calls() -> tuple[Any, ...]:
        return (
            await p.query_range("tool_probe", end - timedelta(seconds=4), end, timedelta(seconds=2)),
            await p.query_range(long, end - timedelta(seconds=4), end, timedelta(seconds=2)),
            await p.series('{__name__="tool_probe"}', timedelta(minutes=5)),
            await p.labels(),
        )

    try:
        short_range, long_range, series, labels = asyncio.run(calls())
    finally:
        p.close()
        proxy.close()
    assert [v for _, vs in short_range for _, v in vs] == [4.0, 4.0, 4.0]
    assert long_range == short_range
    assert [s["pod"] for s in series] == ["a"]
    assert "pod" in labels
    paths = [path for path, _, _ in proxy.calls]
    assert paths == ["/api/v1/query_range", "/api/v1/query_range", "/api/v1/series", "/api/v1/labels"]
    assert proxy.methods == ["GET", "POST", "GET", "GET"]
    for _, params, headers in proxy.calls:
        assert headers["Authorization"] == "Bearer tool-token"
        assert headers["X-Scope-OrgID"] == "team-t"
        assert params["dedup"] == ["true"]
        assert "timeout" in params  # what is left of the deadline, for Prometheus to stop too
