"""The adapter's object informers, seen from outside: a frozen cache is never served
silently. Their age is a metric, and /readyz fails while one has heard nothing from the API
server past --informer-stale-after, then recovers by itself.

The adapter reaches the real kube-apiserver through a loopback proxy; freezing it is a
partition in which no one closes the connection.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import Cluster
from tests.netproxy import Proxy
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import pod_manifest
from tests.support import prefixed_rules
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "informer-health"
PODS = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NS}/pods/*/requests?labelSelector=app%3Dweb"


@pytest.fixture
def proxy(cluster: Cluster) -> Iterator[Proxy]:
    p = Proxy(int(cluster.server.rsplit(":", 1)[1]))
    yield p
    p.close()


def readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


def pods_age(metrics: str) -> float:
    m = re.search(r'promhpa_adapter_informer_last_contact_age_seconds\{resource="pods"\} (\S+)', metrics)
    assert m, "no age for the pods informer"
    return float(m.group(1))


def test_a_partitioned_informer_fails_readiness_and_recovers(
    cluster: Cluster, exporter: Exporter, prometheus: PrometheusProcess, proxy: Proxy, tmp_path: Path
) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod_manifest("web-1", NS, {"app": "web"})))
    exporter.set(f'heal_requests{{namespace="{NS}",pod="web-1"}}', 4)
    wait_until(lambda: prometheus.query("heal_requests") != [], what="the series scraped")
    kubeconfig = json.loads(cluster.kubeconfig.read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    (tmp_path / "kubeconfig").write_text(json.dumps(kubeconfig))
    adapter = start_adapter(
        tmp_path,
        prometheus.url,
        prefixed_rules("heal"),
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        "--informer-stale-after=3s",
        "--informer-watch-idle-timeout=1s",
    )
    try:
        wait_until(lambda: adapter.get(PODS)[0] == 200, timeout=30, what="pods/* served (informer started)")
        assert readyz(adapter.health_port) == (200, "ok")
        assert pods_age(adapter.text("/metrics")) < 3
        proxy.freeze()
        wait_until(lambda: readyz(adapter.health_port)[0] == 503, timeout=20, what="/readyz to fail")
        _, reason = readyz(adapter.health_port)
        assert "informer has heard nothing from the Kubernetes API" in reason, reason
        assert pods_age(adapter.text("/metrics")) > 3
        assert adapter.get(PODS)[0] == 200  # the cache still answers meanwhile; only readiness says it
        proxy.thaw()
        wait_until(lambda: readyz(adapter.health_port)[0] == 200, timeout=30, what="/readyz to recover")
        assert pods_age(adapter.text("/metrics")) < 3
    finally:
        stop_adapter(adapter)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
