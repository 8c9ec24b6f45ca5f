"""``replay`` refuses what it cannot replay before it reads any history, run as a user runs
it. The Prometheus it is given is a listener that accepts connections and never answers
(as a hung one does): a replay that queried it would not end on its own."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shared.test_entry import HPA
from tests.shared.test_entry import RULES

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def hung_prometheus() -> Iterator[str]:
    s = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


def replay(tmp_path: Path, url: str, hpa: str, *flags: str) -> subprocess.CompletedProcess[str]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    argv = [sys.executable, "-m", "controller", "replay", hpa, f"--prometheus-url={url}", f"--config={rules}"]
    return subprocess.run([*argv, *flags], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ("--set", "maxReplicas=-3"),
            "B: spec.maxReplicas: Invalid value: -3: must be greater than or equal to 1",
        ),
        (("--set", "minReplicas=20"), "must be greater than or equal to `minReplicas`"),
        (("--set", "behavior.scaleUp.selectPolicy=Bogus"), 'selectPolicy: Unsupported value: "Bogus"'),
        (("--set", "metrics[0].type=Bogus"), 'spec.metrics[0].type: Unsupported value: "Bogus"'),
        (("--step=0s",), "--step must be longer than 0s"),
        (("--requests", "cpu=abc"), "--requests 'cpu=abc'"),
        (("--plot=out.gif",), "--plot out.gif: draws PNG or SVG"),
    ],
)
def test_what_cannot_be_replayed_is_refused_before_any_query(
    tmp_path: Path, hung_prometheus: str, flags: tuple[str, ...], said: str
) -> None:
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(HPA)
    out = replay(tmp_path, hung_prometheus, str(hpa), *flags)
    assert out.returncode == 2, out.stderr
    assert said in out.stderr
    assert "Traceback" not in out.stderr


def test_a_path_that_names_no_file_is_no_such_file_not_a_cluster_read(
    tmp_path: Path, hung_prometheus: str
) -> None:
    out = replay(tmp_path, hung_prometheus, "sub/missing.yaml")
    assert out.returncode == 2
    assert out.stderr.strip() == "error: sub/missing.yaml: no such file"


def test_a_utf16_file_is_named_with_what_to_do(tmp_path: Path, hung_prometheus: str) -> None:
    hpa = tmp_path / "hpa.yaml"
    hpa.write_bytes(HPA.encode("utf-16"))
    out = replay(tmp_path, hung_prometheus, str(hpa))
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {hpa}: is UTF-16 encoded; save it as UTF-8"


def test_the_rule_file_can_come_from_standard_input(tmp_path: Path, hung_prometheus: str) -> None:
    """A mistake in it is reported as <stdin>'s, before any query."""
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(HPA)
    argv = [sys.executable, "-m", "controller", "replay", str(hpa), f"--prometheus-url={hung_prometheus}"]
    out = subprocess.run(
        [*argv, "--config=-"], input="rulez: []\n", capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 2
    assert "<stdin>:1: rulez: unknown key (did you mean 'rules'?)" in out.stderr


def test_only_one_argument_may_read_standard_input(tmp_path: Path, hung_prometheus: str) -> None:
    out = replay(tmp_path, hung_prometheus, "-", "--spec-b=-")
    assert out.returncode == 2
    assert "HPA and --spec-b both read standard input" in out.stderr
