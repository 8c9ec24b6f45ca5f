"""The second-writer guard beside kube-controller-manager's own HPA controller.

kube-controller-manager runs only its HPA controller (as on a managed control plane, where
it cannot be turned off), and promhpa runs in active mode on the same HPAs. The metric
moves every sync period, so the built-in controller keeps writing status. promhpa must
notice and then write nothing to those HPAs -- counted by field manager in managedFields
over several periods -- say so with one Event per HPA, and never alternate with it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from controller.live.second_writer import FIELD_MANAGER
from localcluster import Cluster
from tests.live import Live
from tests.live import hpa
from tests.live import running_controller
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import controller_get
from tests.support import controller_get_json
from tests.support import external_metric_app
from tests.support import free_port
from tests.support import prefixed_rules
from tests.support import start_hpa_only_kcm
from tests.support import stop_process
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "second-writer"
HPAS = ("alpha", "beta")


@pytest.fixture(scope="module")
def adapter(live: Live) -> AdapterProcess:
    live.publish(
        {f'sw_queue_depth{{namespace="{NS}",queue="{name}"}}': 10 for name in HPAS}, "sw_queue_depth"
    )
    return live.adapter(prefixed_rules("sw"))


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    for name in HPAS:
        out += external_metric_app(NS, name, "sw_queue_depth", labels={"second-writer": "true"}, replicas=2,
                                   max_replicas=6, average_value="5", selector={"queue": name})  # fmt: skip
    return out


def our_writes(cluster: Cluster) -> dict[str, str]:
    """Per HPA and per target: the time of promhpa's last write, by its field manager."""
    out = {}
    for kind in ("hpa", "deployment"):
        items = json.loads(cluster.kubectl("-n", NS, "get", kind, "-o", "json").stdout)["items"]
        for item in items:
            for entry in item["metadata"].get("managedFields") or []:
                if entry.get("manager") == FIELD_MANAGER:
                    out[f"{kind}/{item['metadata']['name']}/{entry.get('subresource', '')}"] = entry.get(
                        "time", ""
                    )
    return out


def detections(cluster: Cluster) -> dict[str, int]:
    items = json.loads(
        cluster.kubectl(
            "-n", NS, "get", "events", "--field-selector=reason=SecondWriterDetected", "-o", "json"
        ).stdout
    )["items"]
    return {e["involvedObject"]["name"]: int(e.get("count") or 1) for e in items}


def test_beside_the_built_in_controller_promhpa_stops_writing_and_says_so_once(
    cluster: Cluster, exporter: Exporter, adapter: AdapterProcess, tmp_path: Path
) -> None:
    cluster.apply(objects())
    moving = threading.Event()

    def move() -> None:  # the metric changes every second: the built-in controller keeps writing
        i = 0
        while not moving.wait(1.0):
            i += 1
            for name in HPAS:
                exporter.set(f'sw_queue_depth{{namespace="{NS}",queue="{name}"}}', 10 + (i % 5))

    mover = threading.Thread(target=move, daemon=True)
    mover.start()
    kcm = start_hpa_only_kcm(
        cluster, tmp_path / "kcm.log", free_port(), "--horizontal-pod-autoscaler-sync-period=2s"
    )
    port = free_port()
    flags = ("--hpa-selector=second-writer", "--horizontal-pod-autoscaler-sync-period=2s",
             "--second-writer-quiet-period=10m", f"--secure-port={port}")  # fmt: skip

    def passive() -> list[dict[str, Any]]:
        return list(controller_get_json(cluster.kubeconfig, port, "/debug/writers")["items"])

    try:
        wait_until(lambda: all(hpa(cluster, NS, n).get("status", {}).get("conditions") for n in HPAS),
                   timeout=60, what="the built-in controller's first statuses")  # fmt: skip
        with running_controller(cluster.kubeconfig, tmp_path / "promhpa.log", *flags) as ours:
            wait_until(lambda: set(detections(cluster)) == set(HPAS), timeout=60, what="a detection per HPA")
            wait_until(lambda: {i["name"] for i in passive()} == set(HPAS), timeout=10, what="both passive")
            after_detection = our_writes(cluster)
            for _ in range(10):  # several periods of both controllers: promhpa writes nothing more
                time.sleep(2)
                assert our_writes(cluster) == after_detection
            assert detections(cluster) == dict.fromkeys(HPAS, 1)  # said once per HPA, not every sync
            metrics = controller_get(cluster.kubeconfig, port, "/metrics").decode()
            for name in HPAS:
                assert f'promhpa_controller_second_writer{{name="{name}",namespace="{NS}"}} 1.0' in metrics
            assert all("kube-controller-manager wrote its status" in i["evidence"] for i in passive())
            log = ours.log.read_text()
            assert log.count("another controller writes this HPA") == len(HPAS)
            assert "writes this HPA again" not in log  # never alternates back while the other writes
    finally:
        moving.set()
        stop_process(kcm)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
