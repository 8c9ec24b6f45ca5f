"""Replay against the live controller: the same load, recorded in a real Prometheus.

The demo's app (a total request rate shared by the running pods, and the running count as
kube-state-metrics exports it) runs a known load curve while the live controller scales
the Deployment on the local control plane. Then ``python -m controller replay`` reads that
history through the adapter's rule file and replays the same HPA spec: its simulated
replicas must match the replicas that really ran within one sync period at every step. A
second spec (twice the target) must cost fewer pod-hours, and the picture is drawn.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.demo import HPA
from localcluster.demo import RULES
from localcluster.demo import DemoApp
from shared.durations import format_time
from tests.live import Live
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import python_m
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS, APP = "replay", "shop"
SYNC = 3


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    live.publish({f'demo_http_requests_per_second{{namespace="{NS}",pod="seed"}}': 0},
                 "demo_http_requests_per_second")  # fmt: skip
    return live.adapter(RULES)


def hpa() -> dict[str, Any]:
    h = json.loads(json.dumps(HPA))
    h["metadata"] = {"name": APP, "namespace": NS, "labels": {"replay": "true"}}
    return h


def replicas(cluster: Cluster) -> int:
    return scale_replicas(cluster, NS, APP)


@dataclass(frozen=True)
class History:
    began: datetime
    ended: datetime
    files: Path  # hpa.yaml and rules.yaml


@pytest.fixture(scope="module")
def history(
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    adapter: AdapterProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> History:
    """The live controller scales the demo app through a known load curve; Prometheus
    records it (the load, and the replicas that ran)."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("-n", NS, "create", "deployment", APP, "--image=example.invalid/shop", "--replicas=1")
    app = DemoApp(cluster, exporter, NS, APP)
    flags = ("--hpa-selector=replay", f"--horizontal-pod-autoscaler-sync-period={SYNC}s")
    try:
        with running_controller(cluster.kubeconfig, tmp_path / "controller.log", *flags):
            app.rate = 5
            wait_until(lambda: len(app.pods()) == 1, timeout=60, what="the first pod")
            time.sleep(2)  # the curve: a short quiet lead-in before the HPA exists
            began = datetime.now(UTC)
            cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa()))
            time.sleep(12)  # the curve: 12 s at 5 req/s
            app.rate = 65
            wait_until(lambda: replicas(cluster) == 7, timeout=90, what="7 replicas")
            time.sleep(9)  # the curve: held at 65 req/s
            app.rate = 8
            wait_until(lambda: replicas(cluster) == 1, timeout=90, what="back to 1 replica")
            time.sleep(6)  # the curve: a quiet tail
            ended = datetime.now(UTC)
            load = f'demo_http_requests_per_second{{namespace="{NS}"}}'
            wait_until(lambda: prometheus.sampled_since(load, ended.timestamp()), timeout=30,
                       what="the last samples scraped")  # fmt: skip
    finally:
        app.stop()
    (tmp_path / "hpa.yaml").write_text(json.dumps(hpa()))
    (tmp_path / "rules.yaml").write_text(RULES)
    return History(began, ended, tmp_path)


def replay_cli(cluster: Cluster, prometheus: PrometheusProcess, h: History, *flags: str) -> Any:
    return python_m(
        "controller", "replay", f"{NS}/{APP}", f"--kubeconfig={cluster.kubeconfig}",
        f"--prometheus-url={prometheus.url}", f"--config={h.files / 'rules.yaml'}",
        f"--from={format_time(h.began)}", f"--to={format_time(h.ended)}",
        f"--horizontal-pod-autoscaler-sync-period={SYNC}s", *flags, timeout=300,
    )  # fmt: skip


@pytest.mark.timeout(420)
def test_replay_matches_the_live_controller_within_one_sync_period(
    cluster: Cluster, prometheus: PrometheusProcess, history: History, tmp_path: Path
) -> None:
    out = replay_cli(cluster, prometheus, history, "--set", "metrics[0].pods.target.averageValue=20",
                     "-o", "json", f"--plot={tmp_path / 'replay.png'}")  # fmt: skip
    assert out.returncode == 0, out.stderr
    startup = re.search(r"pod startup: ([\d.]+)s, the median of (\d+) pods in the history", out.stderr)
    assert startup, out.stderr  # from kube-state-metrics' series, as the demo app exports them
    assert 0 <= float(startup.group(1)) <= SYNC
    assert int(startup.group(2)) >= 7
    result = json.loads(out.stdout)
    a = [r for r in result["series"] if r["variant"] == "A"]
    real = [r["real_replicas"] for r in a]
    assert None not in real
    assert max(real) == 7  # the history holds the live run
    mismatches = [
        (r["time"], r["replicas"], real[max(i - 1, 0) : i + 2])
        for i, r in enumerate(a)
        if r["replicas"] not in real[max(i - 1, 0) : i + 2]
    ]
    assert mismatches == [], f"simulated vs live (one sync period either side): {mismatches}"
    summary = {s["variant"]: s for s in result["summary"]}
    assert summary["B"]["pod_hours"] < summary["A"]["pod_hours"]
    assert (summary["A"]["peak"], summary["B"]["peak"]) == (7, 4)
    assert summary["A"]["pod_hours"] == pytest.approx(summary["A"]["real_pod_hours"], rel=0.15)
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "replay.png")
    assert image.shape[:2] == (650, 1100)


def test_tune_recommends_a_spec_with_fewer_pod_hours_within_todays_minutes_above_target(
    cluster: Cluster, prometheus: PrometheusProcess, history: History, tmp_path: Path
) -> None:
    flags = (
        "--tune",
        "--tune-budget=24",
        "--tune-seed=3",
        "--pod-startup=2s",
        "--max-minutes-above-target=0.6",
    )
    out = replay_cli(cluster, prometheus, history, *flags, f"--plot={tmp_path / 'tune.png'}")
    assert out.returncode == 0, out.stderr
    assert "--- current" in out.stdout
    assert "+++ recommended" in out.stdout
    rows = {
        line.split()[0]: line.split()
        for line in out.stdout.splitlines()
        if line.startswith(("current ", "recommended "))
    }
    assert float(rows["recommended"][1]) < float(rows["current"][1])  # pod-hours
    assert float(rows["recommended"][4]) <= 0.6  # minutes above today's target: within the bound
    again = replay_cli(cluster, prometheus, history, *flags)
    assert again.stdout.split("\n", 1)[1] == out.stdout.split("\n", 1)[1]  # the same search, the same answer
    assert (tmp_path / "tune.png").stat().st_size > 0


def test_check_fails_a_worse_change_and_passes_a_better_one(
    cluster: Cluster, prometheus: PrometheusProcess, history: History
) -> None:
    worse = replay_cli(cluster, prometheus, history, "--check", "--pod-startup=2s",
                       "--set", "metrics[0].pods.target.averageValue=5")  # fmt: skip
    assert worse.returncode == 1, worse.stderr
    assert "WORSE: pod-hours" in worse.stdout
    lax = ("--check-minutes-above=1000", "--set", "metrics[0].pods.target.averageValue=20")
    better = replay_cli(cluster, prometheus, history, "--check", "--pod-startup=2s", *lax)
    assert better.returncode == 0, better.stdout + better.stderr
    assert "OK: the change is no worse" in better.stdout
