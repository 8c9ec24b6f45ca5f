"""Beside KEDA: a ScaledObject's HPA reads KEDA's metric through promhpa and is scaled by
promhpa's controller.

KEDA v2 (operator and metrics server, built from the Go module proxy by `make cluster-tools`)
runs on the local control plane. promhpa owns the external metrics APIService and forwards
KEDA's metric names (``s<trigger>-<scaler>``) to KEDA's metrics server; the HPA KEDA's
operator created for the ScaledObject is reconciled by promhpa's controller.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.keda import Keda
from localcluster.keda import keda_upstream
from localcluster.keda import start_keda
from tests.live import Live
from tests.live import adapter_token
from tests.live import grant_forwarding
from tests.live import hpa
from tests.live import hpa_conditions
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import missing
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "keda-app"
METRIC_PATH = (
    f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/s0-prometheus"
    "?labelSelector=scaledobject.keda.sh%2Fname%3Dkapp"
)


@pytest.fixture(scope="module")
def keda(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keda]:
    from localcluster.tools import Binaries
    from localcluster.tools import cache_bin

    if not Path(Binaries(cache_bin()).keda_operator).exists():
        missing("KEDA is not built: run `make cluster-tools`")
    k = start_keda(cluster, tmp_path_factory.mktemp("keda"))
    yield k
    k.stop()


@pytest.fixture(scope="module")
def promhpa(live: Live, keda: Keda) -> AdapterProcess:
    cluster, work = live.cluster, live.folder("promhpa-keda")
    token = adapter_token(cluster, work / "token")
    grant_forwarding(cluster, "keda-forwarding", "external.metrics.k8s.io")
    return live.adapter(external_rules("keda_own_queue", by="") + keda_upstream(keda, token), folder=work)


def scaled_object(prometheus_url: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kapp", "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "kapp"}},
                     "template": {"metadata": {"labels": {"app": "kapp"}},
                                  "spec": {"containers": [{"name": "c", "image": "example.invalid/x"}]}}},
        },
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": {"name": "kapp", "namespace": NS},
            "spec": {
                "scaleTargetRef": {"name": "kapp"}, "pollingInterval": 5,
                "minReplicaCount": 1, "maxReplicaCount": 5,
                "triggers": [{"type": "prometheus", "metadata": {
                    "serverAddress": prometheus_url, "query": f'sum(keda_queue_depth{{namespace="{NS}"}})',
                    "threshold": "10"}}],
            },
        },
    ]  # fmt: skip


def test_a_scaled_objects_hpa_reads_kedas_metric_through_promhpa_and_promhpa_scales_it(
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    keda: Keda,
    promhpa: AdapterProcess,
    tmp_path: Path,
) -> None:
    exporter.set(f'keda_queue_depth{{namespace="{NS}"}}', 30)  # 30 / 10 per replica: 3
    wait_until(lambda: prometheus.query("keda_queue_depth") != [], what="scrape")
    cluster.apply(scaled_object(prometheus.url))
    try:
        wait_until(
            lambda: cluster.kubectl("-n", NS, "get", "hpa", "keda-hpa-kapp", check=False).returncode == 0,
            timeout=120,
            what="KEDA's operator to create the ScaledObject's HPA",
        )
    except AssertionError as e:
        raise AssertionError(f"{e}\n{keda.logs()}") from None

    def through_promhpa() -> str:
        out = cluster.kubectl("get", "--raw", METRIC_PATH, check=False)
        return str(json.loads(out.stdout)["items"][0]["value"]) if out.returncode == 0 else ""

    wait_until(
        lambda: through_promhpa() == "30", timeout=60, what="KEDA's metric through promhpa's APIService"
    )
    flags = ("--hpa-selector=scaledobject.keda.sh/name=kapp", "--horizontal-pod-autoscaler-sync-period=1s")
    try:
        with running_controller(cluster.kubeconfig, tmp_path / "controller.log", *flags):
            wait_until(lambda: scale_replicas(cluster, NS, "kapp") == 3, timeout=90,
                       what="promhpa's controller to scale kapp to 3")  # fmt: skip
            assert hpa_conditions(cluster, NS, "keda-hpa-kapp")["ScalingActive"][1] == "ValidMetricFound"
            status = hpa(cluster, NS, "keda-hpa-kapp")["status"]
            assert status["currentMetrics"][0]["external"]["metric"]["name"] == "s0-prometheus"
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
