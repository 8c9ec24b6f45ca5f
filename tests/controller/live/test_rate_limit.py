"""--kube-api-qps holds on a real API server: the controller, asked for far more than its
limit (60 HPAs every second), sends no more than it allows.

As in kube-controller-manager the limit is per client, and the scale client's requests are
the ones to count: with ``--scale-reads=get`` (upstream's way) every reconcile GETs its
target's scale. Counted by the kube-apiserver
itself (``apiserver_request_total{subresource="scale"}``) while no other HPA controller
runs (the cluster's kube-controller-manager has its own turned off) and nothing else reads
scale subresources.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from tests.support import external_metric_app
from tests.support import start_controller_process
from tests.support import stop_process
from tests.support import wait_until

pytestmark = pytest.mark.slow

NS = "ratelimit-test"
HPAS = 60
QPS, BURST = 5, 5
WINDOW = 30.0
_SCALE_CALLS = re.compile(r'^apiserver_request_total\{(?=[^}]*subresource="scale")[^}]*\} (\S+)$', re.M)


def scale_calls(cluster: Cluster) -> float:
    """Requests for scale subresources, as the API server has counted them so far."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    return sum(float(v) for v in _SCALE_CALLS.findall(text))


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for i in range(HPAS):
        # 0 replicas: every reconcile reads the scale, and nothing else is asked of the API
        labels = {"ratelimit": "true"}
        out += external_metric_app(
            NS, f"app-{i}", "ratelimit_queue", labels=labels, replicas=0, max_replicas=3
        )
    return out


def test_requests_to_the_api_server_stay_within_kube_api_qps(cluster: Cluster, tmp_path: Path) -> None:
    cluster.apply(objects())
    controller = start_controller_process(
        cluster.kubeconfig,
        tmp_path / "controller.log",
        "--hpa-selector=ratelimit",
        "--scale-reads=get",
        "--horizontal-pod-autoscaler-sync-period=1s",
        f"--kube-api-qps={QPS}",
        f"--kube-api-burst={BURST}",
        "--log-format=console",
    )
    try:
        wait_until(lambda: scale_calls(cluster) > 0, timeout=60, what="the controller's first calls")
        time.sleep(5)  # past the start: the burst is spent, the bucket paces every call
        before, t0 = scale_calls(cluster), time.monotonic()
        time.sleep(WINDOW)
        after, t1 = scale_calls(cluster), time.monotonic()
    finally:
        stop_process(controller)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    rate = (after - before) / (t1 - t0)
    print(f"{rate:.2f} scale requests/s at --kube-api-qps={QPS} (asked for ~{HPAS}/s)")
    assert rate <= QPS + BURST / WINDOW, f"{rate:.2f} requests/s over a limit of {QPS}"
    assert rate >= 0.6 * QPS, "not vacuous: the controller was held at its limit, not idle"
