"""Several backends behind one adapter: each rule is answered by its own backend (its
headers and parameters on every call), and one backend down costs only its own metrics.

Two real Prometheus servers; the second is reached through a recording proxy, as a
tenant's Mimir or a Thanos Querier would be, so the test sees what the adapter sends.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import Recorder
from tests.support import freeze
from tests.support import prometheus_binary
from tests.support import python_m
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.slow

EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default"


def rules(proxy: str) -> str:
    return f"""
backends:
- name: team-b
  url: {proxy}
  headers: {{X-Scope-OrgID: team-b}}
  params: {{partial_response: "false"}}
  timeout: 3s
externalRules:
- seriesQuery: '{{__name__="team_a_queue"}}'
  resources: {{namespaced: false}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
- seriesQuery: '{{__name__="team_b_queue"}}'
  resources: {{namespaced: false}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
  backend: team-b
"""


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Exporter, PrometheusProcess]]:
    exporter = Exporter()
    prom = PrometheusProcess(prometheus_binary(), tmp_path_factory.mktemp("prometheus-b"), exporter.port)
    prom.start()
    yield exporter, prom
    prom.stop()
    exporter.close()


@pytest.fixture(scope="module")
def recorder(second: tuple[Exporter, PrometheusProcess]) -> Iterator[Recorder]:
    with Recorder(second[1].url) as r:
        yield r


@pytest.fixture(scope="module")
def adapter(
    exporter: Exporter,
    prometheus: PrometheusProcess,
    second: tuple[Exporter, PrometheusProcess],
    recorder: Recorder,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[AdapterProcess]:
    exporter.set('team_a_queue{queue="a"}', 7)
    second[0].set('team_b_queue{queue="b"}', 11)
    wait_until(lambda: prometheus.query("team_a_queue") != [], what="team A's series scraped")
    wait_until(lambda: second[1].query("team_b_queue") != [], what="team B's series scraped")
    a = start_adapter(
        tmp_path_factory.mktemp("adapter"),
        prometheus.url,
        rules(recorder.url),
        "--metrics-relist-interval=1s",
        "--query-cache-ttl=0s",
    )
    yield a
    stop_adapter(a)


def value(a: AdapterProcess, metric: str) -> tuple[int, dict[str, object]]:
    return a.get(f"{EXTERNAL}/{metric}")


def test_each_rule_is_answered_by_its_own_backend(adapter: AdapterProcess) -> None:
    code_a, body_a = value(adapter, "team_a_queue")
    code_b, body_b = value(adapter, "team_b_queue")
    assert (code_a, code_b) == (200, 200), (body_a, body_b)
    assert [i["value"] for i in body_a["items"]] == ["7"]  # type: ignore[index]
    assert [i["value"] for i in body_b["items"]] == ["11"]  # type: ignore[index]


def test_a_backend_gets_its_headers_and_parameters_on_every_call(
    adapter: AdapterProcess, recorder: Recorder
) -> None:
    assert value(adapter, "team_b_queue")[0] == 200
    with recorder.lock:
        calls = list(recorder.calls)
    paths = {path for path, _, _ in calls}
    assert {"/api/v1/series", "/api/v1/query"} <= paths
    for path, params, headers in calls:
        assert headers.get("X-Scope-OrgID") == "team-b", path
        assert params.get("partial_response") == ["false"], path
    # the default backend's rule never goes to team B's backend
    assert not any(
        "team_a_queue" in q for _, p, _ in calls for q in p.get("query", []) + p.get("match[]", [])
    )


def test_one_backend_down_keeps_the_others_serving(
    adapter: AdapterProcess, second: tuple[Exporter, PrometheusProcess]
) -> None:
    prom_b = second[1]
    prom_b.stop()
    try:
        code, body = value(adapter, "team_b_queue")
        assert code == 503, body
        assert 'backend "team-b"' in str(body["message"])
        assert value(adapter, "team_a_queue")[0] == 200

        def ready_text() -> str:
            with urllib.request.urlopen(adapter.url + "/readyz", context=adapter.ctx, timeout=5) as r:
                assert r.status == 200  # still ready: the other backend serves
                return str(r.read().decode())

        wait_until(lambda: "[-]backend team-b" in ready_text(), timeout=15, what="readiness names team-b")
        assert "[+]backend default ok" in ready_text()
        metrics = adapter.text("/metrics")
        assert 'promhpa_adapter_backend_up{backend="team-b"} 0.0' in metrics
        assert 'promhpa_adapter_backend_up{backend="default"} 1.0' in metrics
    finally:
        prom_b.start()
    wait_until(lambda: value(adapter, "team_b_queue")[0] == 200, timeout=30, what="team B serves again")
    wait_until(
        lambda: "[+]backend team-b ok" in adapter.text("/readyz"), timeout=15, what="team-b ready again"
    )


def test_a_backend_added_by_a_rule_file_edit_is_served_without_a_restart(
    exporter: Exporter,
    prometheus: PrometheusProcess,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{recorder.server.server_address[1]}"
    full = rules(url)
    only_a = "externalRules:" + full.split("externalRules:")[1].split("- seriesQuery: '{__name__=\"team_b")[0]
    a = start_adapter(
        tmp_path, prometheus.url, only_a, "--config-reload-interval=0.5s", "--query-cache-ttl=0s"
    )
    try:
        assert value(a, "team_b_queue")[0] == 404
        new = tmp_path / "adapter.yaml.new"
        new.write_text(full)
        os.replace(new, tmp_path / "adapter.yaml")  # as the kubelet swaps a ConfigMap volume
        wait_until(lambda: value(a, "team_b_queue")[0] == 200, timeout=20, what="the new backend's metric")
        assert [i["value"] for i in value(a, "team_b_queue")[1]["items"]] == ["11"]  # type: ignore[index]
    finally:
        stop_adapter(a)


def test_check_config_checks_each_rule_against_its_own_backend(
    adapter: AdapterProcess, prometheus: PrometheusProcess, recorder: Recorder, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{recorder.server.server_address[1]}"
    path = tmp_path / "adapter.yaml"
    path.write_text(rules(url))
    with recorder.lock:
        recorder.calls.clear()
    out = python_m("adapter", "check-config", str(path), f"--prometheus-url={prometheus.url}")  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 series matched" in out.stdout
    with recorder.lock:
        matched = [p.get("match[]", []) for path_, p, _ in recorder.calls if path_ == "/api/v1/series"]
    # (the module's adapter relists through the same proxy meanwhile: same selector)
    assert matched
    assert all(m == ['{__name__="team_b_queue"}'] for m in matched)  # team A's: --prometheus-url


def test_a_hung_backend_answers_504_within_its_own_timeout(
    adapter: AdapterProcess, second: tuple[Exporter, PrometheusProcess]
) -> None:
    """team-b's `timeout: 3s`, not --prometheus-timeout's 10s; team A is not held up."""
    proc = second[1].proc
    assert proc is not None
    freeze(proc.pid)  # accepts connections, never answers: a wedged server
    try:
        start = time.monotonic()
        code, body = value(adapter, "team_b_queue")
        took = time.monotonic() - start
        assert code == 504, body
        assert "within 3s" in str(body["message"])
        # team-b's 3 s, not the 10 s of --prometheus-timeout (when the metric has dropped out
        # of the index, the on-demand lookup waits for the relist's hung call and takes its
        # failure: still one timeout, test_registry_lookup.py)
        assert took < 5, took
        assert value(adapter, "team_a_queue")[0] == 200
    finally:
        proc.send_signal(signal.SIGCONT)
    wait_until(lambda: value(adapter, "team_b_queue")[0] == 200, timeout=20, what="team B answers again")
