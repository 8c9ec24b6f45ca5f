"""A hung Prometheus: the adapter answers a clean 504 within its deadline, and recovers.

The Prometheus here is real and really hung: SIGSTOP freezes the process, so the kernel
still accepts its connections but nothing ever answers -- what a wedged or overloaded
server looks like from the outside.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import freeze
from tests.support import prometheus_binary
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.slow

CONFIG = external_rules("deadline_queue", by="")
PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/deadline_queue"
DEADLINE = 2.0


@pytest.fixture
def own_prometheus(exporter: Exporter, tmp_path: Path) -> Iterator[PrometheusProcess]:
    """A Prometheus of this test's own: it is frozen, so no other test may share it."""
    p = PrometheusProcess(prometheus_binary(), tmp_path / "prometheus", exporter.port)
    p.directory.mkdir()
    p.start()
    try:
        yield p
    finally:
        if p.proc is not None:
            os.kill(p.proc.pid, signal.SIGCONT)
        p.stop()


@pytest.fixture
def adapter(
    exporter: Exporter, own_prometheus: PrometheusProcess, tmp_path: Path
) -> Iterator[AdapterProcess]:
    exporter.set('deadline_queue{namespace="default"}', 5)
    wait_until(lambda: own_prometheus.query("deadline_queue") != [], what="first scrape")
    a = start_adapter(
        tmp_path, own_prometheus.url, CONFIG, "--query-cache-ttl=0s", f"--prometheus-timeout={DEADLINE:g}s"
    )
    try:
        yield a
    finally:
        stop_adapter(a)


def test_hung_prometheus_gets_a_504_within_the_deadline(
    adapter: AdapterProcess, own_prometheus: PrometheusProcess
) -> None:
    assert adapter.get(PATH)[0] == 200
    assert own_prometheus.proc is not None
    freeze(own_prometheus.proc.pid)
    start = time.monotonic()
    code, body = adapter.get(PATH)
    elapsed = time.monotonic() - start
    assert (code, body["reason"]) == (504, "Timeout"), body
    assert "--prometheus-timeout" in body["message"]
    print(f"504 after {elapsed:.3f}s (deadline {DEADLINE:g}s)")
    # not before the deadline, and not a retry's or a backoff's worth after it (a busy CI
    # machine may add scheduling delay; a retry would add at least another deadline)
    assert DEADLINE * 0.9 <= elapsed <= DEADLINE * 1.5, f"answered after {elapsed:.2f}s"


def test_adapter_serves_again_once_prometheus_resumes(
    adapter: AdapterProcess, own_prometheus: PrometheusProcess
) -> None:
    assert own_prometheus.proc is not None
    freeze(own_prometheus.proc.pid)
    assert adapter.get(PATH)[0] == 504
    os.kill(own_prometheus.proc.pid, signal.SIGCONT)
    code, body = adapter.get(PATH)
    assert code == 200, body
    assert body["items"][0]["value"] == "5"


def test_refused_connection_is_a_503_without_waiting_out_the_deadline(
    adapter: AdapterProcess, own_prometheus: PrometheusProcess
) -> None:
    own_prometheus.stop()  # nothing listens on the port any more: connections are refused
    start = time.monotonic()
    code, body = adapter.get(PATH)
    assert (code, body["reason"]) == (503, "ServiceUnavailable"), body
    assert time.monotonic() - start < DEADLINE / 2
