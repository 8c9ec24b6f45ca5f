"""Migration from prometheus-adapter without an outage, as docs/migration.md tells it.

prometheus-adapter v0.12.0 (the real binary) owns the metrics APIServices and an HPA reads
its metric. Then: promhpa starts forwarding every metric to it, the APIServices move to
promhpa, the rule moves into promhpa (its rule file, reloaded), prometheus-adapter stops.
A reader asks the aggregator for the metric four times a second throughout, and an HPA
reconciled every second reads it too: no read may fail.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.manifests import adapter_manifests
from localcluster.manifests import service_account_kubeconfig
from shared.tls import self_signed
from tests.live import grant_forwarding
from tests.live import hpa_conditions
from tests.live import running_controller
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_metric_app
from tests.support import external_rules
from tests.support import free_port
from tests.support import prometheus_adapter_binary
from tests.support import start_adapter
from tests.support import start_prometheus_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "cutover"
METRIC = "cut_queue_depth"
PATH = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/{METRIC}"


def registration(namespace: str, service: str, port: int, ca: bytes) -> tuple[list[Any], list[Any]]:
    """A provider's ServiceAccount and RBAC, and apart from them its APIServices."""
    objs = adapter_manifests(namespace, service, port, ca)
    return [o for o in objs if o["kind"] != "APIService"], [o for o in objs if o["kind"] == "APIService"]


def routed_to(cluster: Cluster, apis: list[dict[str, Any]]) -> bool:
    """Whether each of ``apis`` (APIServices) is Available through the service it names now."""
    for api in apis:
        out = cluster.kubectl("get", "apiservice", api["metadata"]["name"], "-o", "json", check=False)
        if out.returncode != 0:
            return False
        live = json.loads(out.stdout)
        if live["spec"].get("service") != api["spec"]["service"]:
            return False
        if not any(
            c["type"] == "Available" and c["status"] == "True" for c in live["status"].get("conditions", [])
        ):
            return False
    return True


class Reader(threading.Thread):
    """GETs the metric through the aggregator every 250 ms, as the cluster's admin."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.url = cluster.server + PATH
        self.ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
        self.ctx.load_cert_chain(cluster.pki / "admin.crt", cluster.pki / "admin.key")
        self.stopped = threading.Event()
        self.ok = 0
        self.failed: list[str] = []

    def run(self) -> None:
        while not self.stopped.wait(0.25):
            try:
                with urllib.request.urlopen(self.url, timeout=10, context=self.ctx) as r:
                    body = json.loads(r.read())
                if body["items"] and body["items"][0]["metricName"] == METRIC:
                    self.ok += 1
                else:
                    self.failed.append(f"{time.strftime('%X')} empty answer {body}")
            except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
                detail = e.read().decode()[:300] if isinstance(e, urllib.error.HTTPError) else ""
                self.failed.append(f"{time.strftime('%X')} {e} {detail}")


def test_cutover_from_prometheus_adapter_loses_no_read(
    cluster: Cluster, exporter: Exporter, prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    prometheus_adapter_binary()
    exporter.set(f'{METRIC}{{namespace="{NS}",queue="q"}}', 8)
    wait_until(lambda: prometheus.query(METRIC) != [], what="scrape")
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}])
    rule = external_rules(METRIC, by="")
    # 0. prometheus-adapter owns the APIServices
    pa = start_prometheus_adapter(
        cluster, tmp_path / "pa", prometheus.url, rule, dns_name="prometheus-adapter.monitoring.svc"
    )
    pa_cert = (tmp_path / "pa" / "pa-certs" / "apiserver.crt").read_bytes()
    pa_rbac, pa_apis = registration("monitoring", "prometheus-adapter", pa.port, pa_cert)
    cluster.apply(pa_rbac + pa_apis)
    ours = None
    reader = Reader(cluster)

    def more_reads(n: int) -> None:  # reads keep succeeding through each step, n more of them
        target = reader.ok + n
        wait_until(lambda: reader.ok >= target or bool(reader.failed), timeout=30, what=f"{n} more reads")

    flags = ("--hpa-selector=cutover", "--horizontal-pod-autoscaler-sync-period=1s")
    running = contextlib.ExitStack()
    try:
        wait_until(lambda: cluster.kubectl("get", "--raw", PATH, check=False).returncode == 0, timeout=60,
                   what="prometheus-adapter serving through the aggregator")  # fmt: skip
        reader.start()
        cluster.apply(external_metric_app(NS, "cut", METRIC, labels={"cutover": "true"}, max_replicas=4,
                                           average_value="100"))  # fmt: skip
        running.enter_context(running_controller(cluster.kubeconfig, tmp_path / "controller.log", *flags))
        active = ("True", "ValidMetricFound")
        wait_until(lambda: hpa_conditions(cluster, NS, "cut").get("ScalingActive") == active, timeout=30,
                   what="the HPA reading through prometheus-adapter")  # fmt: skip
        # 1. promhpa beside it, forwarding everything to it, then the APIServices move
        work = tmp_path / "promhpa"
        work.mkdir()
        cert, key = self_signed(work / "certs", ["promhpa-adapter.promhpa.svc"])
        port = free_port()
        ph_rbac, ph_apis = registration("promhpa", "promhpa-adapter", port, cert.read_bytes())
        cluster.apply(ph_rbac)
        grant_forwarding(cluster, "cutover-forwarding", "external.metrics.k8s.io", "custom.metrics.k8s.io")
        kubeconfig = service_account_kubeconfig(
            cluster, "promhpa", "promhpa-adapter", work / "adapter.kubeconfig"
        )
        token = json.loads(kubeconfig.read_text())["users"][0]["user"]["token"]
        (work / "token").write_text(token)
        forwarding = f"""
upstreams:
- name: prometheus-adapter
  url: https://127.0.0.1:{pa.port}
  insecureSkipTLSVerify: true
  bearerTokenFile: {work / "token"}
  external: ['.*']
  custom: ['.*']
"""
        ours = start_adapter(
            work, prometheus.url, forwarding, f"--kubeconfig={kubeconfig}", f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}", "--config-reload-interval=1s",
            "--upstream-discovery-interval=1s", insecure=False, port=port,
        )  # fmt: skip
        cluster.apply(ph_apis)  # the cutover of the APIServices
        wait_until(lambda: routed_to(cluster, ph_apis), timeout=30, what="the APIServices on promhpa")
        more_reads(12)
        # 2. the rule moves into promhpa: served by its own rules, routed nowhere else
        (work / "adapter.yaml").write_text(rule + forwarding.replace("['.*']", "['^never$']"))
        wait_until(lambda: "rule file reloaded" in ours.log.read_text(), timeout=30, what="the reload")
        more_reads(12)
        # 3. prometheus-adapter goes
        stop_adapter(pa)
        more_reads(16)
    finally:
        reader.stopped.set()
        reader.join(15)
        running.close()
        if ours is not None:
            stop_adapter(ours)
        stop_adapter(pa)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        cluster.kubectl("delete", "apiservice", *(a["metadata"]["name"] for a in pa_apis), check=False)
    print(f"{reader.ok} reads through the cutover, {len(reader.failed)} failed")
    assert reader.failed == [], reader.failed[:5]
    assert reader.ok >= 40  # not vacuous: reads all through the cutover
    events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json", check=False).stdout or "{}")
    failed = [e["message"] for e in events.get("items", []) if e.get("reason") == "FailedGetExternalMetric"]
    assert failed == []  # the HPA never failed to read it either
