"""What the probes report: liveness from the serving loop's heartbeat, readiness from its reason,
read across processes by the probe server."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from adapter.serving.health import Health
from adapter.serving.health import ProbeServer
from tests.support import free_port


def test_a_loop_that_beats_is_alive() -> None:
    health = Health(stall_seconds=30)
    health.beat()
    assert health.alive() is None


def test_a_loop_that_stopped_beating_is_reported_with_how_long() -> None:
    health = Health(stall_seconds=0.05)
    health.beat()
    time.sleep(0.1)
    assert health.alive() == "the serving event loop has not run for 0s"
    assert health.ready() == health.alive()  # a dead loop is not ready either


def test_ready_waits_for_the_first_discovery() -> None:
    health = Health()
    assert health.ready() == "the first series discovery has not completed"
    health.ready_reason = None
    assert health.ready() is None


def test_reasons_longer_than_the_shared_memory_are_cut_not_refused() -> None:
    health = Health()
    health.ready_reason = "r" * 2000
    health.detail = "d" * 5000
    assert health.ready_reason == "r" * 511
    assert health.detail == "d" * 2047


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


@pytest.fixture
def probes() -> Iterator[tuple[Health, str]]:
    health = Health(stall_seconds=0.5)
    server = ProbeServer(health, "127.0.0.1", free_port())
    server.start()
    try:
        yield health, f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


@pytest.mark.slow
def test_the_probe_process_reports_what_the_serving_process_writes(probes: tuple[Health, str]) -> None:
    health, url = probes
    health.beat()
    assert get(url + "/readyz") == (503, "the first series discovery has not completed")
    health.ready_reason = None
    health.detail = "backend team-b: connection refused"
    assert get(url + "/readyz") == (200, "ok\nbackend team-b: connection refused")


@pytest.mark.slow
def test_the_probe_process_fails_liveness_when_the_loop_stops_beating(probes: tuple[Health, str]) -> None:
    health, url = probes
    health.beat()
    assert get(url + "/healthz") == (200, "ok")
    time.sleep(1.2)  # no beat for longer than stall_seconds
    code, text = get(url + "/livez")
    assert (code, text.startswith("the serving event loop has not run for")) == (500, True), text
    health.beat()
    assert get(url + "/healthz") == (200, "ok")
