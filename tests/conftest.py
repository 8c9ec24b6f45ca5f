"""Test-wide fixtures: where the conformance cases live, and the real servers the tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mimir_peer import Mimir
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import mimir_binary
from tests.support import missing
from tests.support import prometheus_binary

ROOT = Path(__file__).resolve().parent.parent
# the cases kept in the repository (tests/conformance/README.md), and any more beside it: the
# founding material's folder next to a clone, or one PROMHPA_CONFORMANCE names
CONFORMANCE = ROOT / "tests" / "conformance"
EXTRA_CONFORMANCE = Path(os.environ.get("PROMHPA_CONFORMANCE", ROOT.parent / "shared" / "conformance"))


# what a test needs, read from the fixtures it uses: `make unit` runs only what needs none
NEEDS_TOOLS = {"prometheus", "exporter", "own_prometheus", "mimir"}  # binaries from `make cluster-tools`


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PROMHPA_PROMETHEUS") == "2":
        _only_what_reaches_prometheus(config, items)
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        # the real node's tests start a control plane of their own (tests/e2e/conftest.py)
        if "cluster" in fixtures or item.nodeid.startswith("tests/e2e/"):
            item.add_marker(pytest.mark.cluster)
        if fixtures & NEEDS_TOOLS or item.nodeid.startswith("tests/charts/"):
            item.add_marker(pytest.mark.tools)


def _only_what_reaches_prometheus(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``make test-prometheus2`` runs again, against Prometheus 2, what can differ between its
    releases: a test that reaches no Prometheus (no Prometheus fixture, no cluster, whose
    Prometheus scrapes the pods) has nothing new to say there and is deselected."""
    reaches = NEEDS_TOOLS | {"cluster"}
    kept = [i for i in items if reaches & set(getattr(i, "fixturenames", ()))]
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not (CONFORMANCE / "hpa").is_dir():
        missing(f"conformance cases not found at {CONFORMANCE}: the repository is incomplete")
    return CONFORMANCE


# the real Kubernetes control plane, shared by every test that needs it (session-scoped)
from tests.cluster_fixture import cluster  # noqa: E402, F401

# the module's live-test layer (tests/live.py)
from tests.live import live  # noqa: E402, F401


@pytest.fixture(scope="module")
def exporter() -> Iterator[Exporter]:
    e = Exporter()
    yield e
    e.close()


@pytest.fixture(scope="module")
def mimir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mimir]:
    """A multi-tenant Grafana Mimir (``tests.mimir_peer``), for the tenants tests."""
    m = Mimir(mimir_binary(), tmp_path_factory.mktemp("mimir")).start()
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture(scope="module")
def prometheus(exporter: Exporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    p = PrometheusProcess(prometheus_binary(), tmp_path_factory.mktemp("prometheus"), exporter.port)
    p.start()
    yield p
    p.stop()


# a run writes nothing into the checkout that git would pick up: what tools leave in their
# working directory (a Mimir activity log, a self-signed certificate) goes to their own
# temporary folders, and what a run is meant to leave (.cluster/, build/, dist/) is ignored
_UNTRACKED: list[str] = []


def _untracked() -> set[str]:
    import subprocess

    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return set(out.stdout.splitlines()) if out.returncode == 0 else set()


def pytest_sessionstart(session: pytest.Session) -> None:
    _UNTRACKED[:] = sorted(_untracked())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    left = sorted(_untracked() - set(_UNTRACKED))
    if left:
        print(f"\nerror: the run left {len(left)} untracked file(s) in the checkout: {', '.join(left[:10])}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
