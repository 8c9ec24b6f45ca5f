"""How the console tools end when killed, run as a user runs them: a killed check exits
with the signal's code (143, 130), never 0, and prints no traceback. The slowness they are
killed in is real: a TCP listener that accepts a connection and never answers, as a hung
Prometheus does."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = """\
rules:
- seriesQuery: 'jobs_waiting{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)
"""


HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric: {name: jobs_waiting}
      target: {type: AverageValue, averageValue: "10"}
"""


@pytest.fixture
def hung_prometheus() -> Iterator[str]:
    """A listener whose connections are accepted by the kernel and never answered."""
    s = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


def killed(argv: list[str], sig: signal.Signals, after: float = 3.0) -> subprocess.CompletedProcess[str]:
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    running = p.poll() is None
    if running:
        p.send_signal(sig)
    out, err = p.communicate(timeout=20)
    assert running, f"it ended ({p.returncode}) before it was killed: {err}"
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def check_config(tmp_path: Path, url: str) -> list[str]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    return [sys.executable, "-m", "adapter", "check-config", str(rules), f"--prometheus-url={url}"]


def test_check_config_killed_by_sigterm_exits_143(tmp_path: Path, hung_prometheus: str) -> None:
    done = killed(check_config(tmp_path, hung_prometheus), signal.SIGTERM)
    assert done.returncode == 143, done
    assert "Traceback" not in done.stderr


def test_check_config_interrupted_exits_130_without_a_traceback(tmp_path: Path, hung_prometheus: str) -> None:
    done = killed(check_config(tmp_path, hung_prometheus), signal.SIGINT)
    assert done.returncode == 130, done
    assert "Traceback" not in done.stderr


def test_replay_check_killed_by_sigterm_exits_143(tmp_path: Path, hung_prometheus: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    hpa = tmp_path / "hpa.yaml"
    hpa.write_text(HPA)
    argv = [
        sys.executable, "-m", "controller", "replay", str(hpa), f"--prometheus-url={hung_prometheus}",
        f"--config={rules}", "--check", "--set", "maxReplicas=20",
    ]  # fmt: skip
    done = killed(argv, signal.SIGTERM)
    assert done.returncode == 143, done
    assert "Traceback" not in done.stderr
