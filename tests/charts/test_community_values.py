"""prometheus-adapter's community chart values (prometheus-community/prometheus-adapter 5.3.0)
install promhpa unchanged: each value is mapped onto ours or refused with what to do, the
chart works as a subchart, and -- live -- HPAs that worked on prometheus-adapter with those
values and rules work on promhpa installed with the same values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import Cluster
from localcluster.manifests import adapter_manifests
from localcluster.manifests import hpa_manifest
from localcluster.manifests import pods_metric
from rules.config import parse_config
from tests.charts.chart import CHART
from tests.charts.chart import helm
from tests.charts.chart import of_kind
from tests.charts.chart import render
from tests.support import ROOT
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import free_port
from tests.support import prometheus_adapter_binary
from tests.support import register_and_start_adapter
from tests.support import start_hpa_only_kcm
from tests.support import start_prometheus_adapter
from tests.support import stop_adapter
from tests.support import stop_process
from tests.support import wait_until

COMMUNITY = CHART / "ci" / "prometheus-adapter-chart-values.yaml"


def adapter_container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    dep = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    return dict(dep["spec"]["template"]["spec"]["containers"][0])


def rendered_rules(docs: list[dict[str, Any]]) -> str:
    cm = next(d for d in of_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("rules"))
    return str(cm["data"]["config.yaml"])


def test_the_community_default_values_render_promhpa_with_their_settings() -> None:
    docs = render("-f", str(COMMUNITY))
    c = adapter_container(docs)
    assert c["image"].startswith("promhpa/promhpa:")  # the image given, not prometheus-adapter's
    assert "--prometheus-url=http://prometheus.default.svc:9090" in c["args"]
    assert "--metrics-relist-interval=1m" in c["args"]
    assert "--secure-port=6443" in c["args"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "health"}  # ours, not theirs
    assert c["securityContext"]["runAsUser"] == 10001  # their securityContext
    dep = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["revisionHistoryLimit"] == 10
    config = parse_config(rendered_rules(docs), "<rendered>")
    assert len(config.rules) == 6  # the community chart's six default rules


@pytest.mark.parametrize(
    ("value", "check"),
    [
        ("logLevel=6", lambda docs: "--v=6" in adapter_container(docs)["args"]),
        ("listenPort=7443", lambda docs: "--secure-port=7443" in adapter_container(docs)["args"]),
        (
            "livenessProbe.initialDelaySeconds=99",
            lambda docs: adapter_container(docs)["livenessProbe"]["initialDelaySeconds"] == 99,
        ),
        (
            "customLabels.team=platform",
            lambda docs: all(d["metadata"]["labels"]["team"] == "platform" for d in docs),
        ),
        (
            "rules.existing=my-rules",
            lambda docs: (
                not [c for c in of_kind(docs, "ConfigMap") if c["metadata"]["name"].endswith("rules")]
            ),
        ),
        ("certManager.enabled=true", lambda docs: bool(of_kind(docs, "Certificate"))),
        ("hostNetwork.enabled=true", lambda docs: _pod(docs).get("hostNetwork") is True),
        (
            "extraArguments[0]=--client-qps=50",
            lambda docs: "--client-qps=50" in adapter_container(docs)["args"],
        ),
        ("service.type=NodePort", lambda docs: of_kind(docs, "Service")[0]["spec"]["type"] == "NodePort"),
        ("image.pullSecrets[0].name=reg", lambda docs: _pod(docs)["imagePullSecrets"] == [{"name": "reg"}]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_community_value_is_mapped_onto_ours(value: str, check: Any) -> None:
    docs = render("-f", str(COMMUNITY), f"--set={value}")
    assert check(docs), value


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    dep = next(d for d in of_kind(docs, "Deployment") if d["metadata"]["name"].endswith("adapter"))
    return dict(dep["spec"]["template"]["spec"])


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("tls.enable=true", "did you mean tls.existingSecret?"),
        ("psp.create=true", "PodSecurityPolicy was removed in Kubernetes 1.25"),
    ],
)
def test_a_community_value_promhpa_cannot_honour_is_refused_with_what_to_do(value: str, said: str) -> None:
    out = helm("template", "r", str(CHART), "-f", str(COMMUNITY), f"--set={value}", check=False)
    assert out.returncode != 0
    assert said in out.stderr


def test_prometheus_adapters_image_is_refused_with_how_to_build_promhpas() -> None:
    out = helm("template", "r", str(CHART), "-f", str(COMMUNITY), check=False, image=False)
    assert out.returncode != 0
    assert "image.repository is prometheus-adapter's image" in out.stderr
    assert "make image" in out.stderr


def test_a_two_line_parent_chart_renders_promhpa_as_a_subchart(tmp_path: Path) -> None:
    parent = tmp_path / "platform"
    (parent / "charts").mkdir(parents=True)
    (parent / "Chart.yaml").write_text("apiVersion: v2\nname: platform\nversion: 0.1.0\n")
    shutil.copytree(CHART, parent / "charts" / "promhpa")
    (parent / "values.yaml").write_text(
        "global: {imageRegistry: mirror.example.com}\n"
        "promhpa: {prometheus: {url: 'http://prometheus:9090'}, image: {repository: promhpa/promhpa}}\n"
    )
    out = helm("template", "p", str(parent), image=False)
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    images = {
        c["image"] for d in of_kind(docs, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images
    assert all(i.startswith("mirror.example.com/promhpa/promhpa:") for i in images)


def test_every_schema_field_has_a_description() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    missing: list[str] = []

    def walk(node: dict[str, Any], path: str) -> None:
        for key, sub in (node.get("properties") or {}).items():
            if not sub.get("description"):
                missing.append(path + key)
            walk(sub, f"{path}{key}.")

    walk(schema, "")
    assert missing == [], "run python hack/schema_descriptions.py after documenting them in values.yaml"


def test_the_migration_page_maps_every_community_value() -> None:
    page = (ROOT / "docs" / "migration.md").read_text()
    values = yaml.safe_load(COMMUNITY.read_text())
    unlisted = [key for key in values if f"`{key}" not in page]
    assert unlisted == []


# -- live ---------------------------------------------------------------------------------

NS = "community"
HPA = hpa_manifest(NS, "web", pods_metric("queue_items", "10"), max_replicas=5)


def hpa_reads(cluster: Cluster, value: str) -> bool:
    out = cluster.kubectl("-n", NS, "get", "hpa", "web", "-o", "json", check=False)
    if out.returncode != 0:
        return False
    status = json.loads(out.stdout).get("status", {})
    active = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("ScalingActive")
    current = [
        m["pods"]["current"]["averageValue"] for m in status.get("currentMetrics") or [] if m.get("pods")
    ]
    return active == "True" and current == [value]


@pytest.mark.timeout(300)
def test_hpas_that_worked_on_prometheus_adapter_work_on_promhpa_installed_with_its_values(
    cluster: Cluster, exporter: Exporter, prometheus: PrometheusProcess, tmp_path: Path
) -> None:
    prometheus_adapter_binary()
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("-n", NS, "create", "deployment", "web", "--image=example.invalid/web", "--replicas=1")
    wait_until(
        lambda: (
            "Running"
            in cluster.kubectl("-n", NS, "get", "pods", "-o", "jsonpath={.items[*].status.phase}").stdout
        ),
        timeout=60,
        what="the web pod running",
    )
    pod = cluster.kubectl("-n", NS, "get", "pods", "-o", "jsonpath={.items[0].metadata.name}").stdout
    exporter.set(f'queue_items{{namespace="{NS}",pod="{pod}"}}', 5)
    wait_until(lambda: prometheus.query("queue_items") != [], what="scrape")
    # the values the community chart was installed with, the test's Prometheus for theirs
    host, _, port = prometheus.url.rpartition(":")
    docs = render("-f", str(COMMUNITY), f"--set=prometheus.url={host}", f"--set=prometheus.port={port}")
    rules = rendered_rules(docs)
    # 1. prometheus-adapter with the community chart's rules: the HPA reads its metric
    pa = start_prometheus_adapter(
        cluster, tmp_path / "pa", prometheus.url, rules, dns_name="pa.monitoring.svc"
    )
    pa_apis = adapter_manifests(
        "monitoring", "pa", pa.port, (tmp_path / "pa" / "pa-certs" / "apiserver.crt").read_bytes()
    )
    cluster.apply(pa_apis)
    kcm = start_hpa_only_kcm(
        cluster, tmp_path / "kcm.log", free_port(), "--horizontal-pod-autoscaler-sync-period=2s"
    )
    ours = None
    try:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(HPA))
        wait_until(
            lambda: hpa_reads(cluster, "5"),
            timeout=90,
            what="the HPA reading queue_items from prometheus-adapter",
        )
        stop_adapter(pa)
        # 2. promhpa with the arguments its chart renders from the same values
        chart_args = [
            a
            for a in adapter_container(docs)["args"]
            if not a.startswith(
                ("--config", "--bind-address", "--secure-port", "--health-port", "--tls-", "--prometheus-url")
            )
        ]
        assert "--metrics-relist-interval=1m" in chart_args
        (tmp_path / "promhpa").mkdir()
        ours = register_and_start_adapter(cluster, prometheus, tmp_path / "promhpa", rules, *chart_args)
        exporter.set(f'queue_items{{namespace="{NS}",pod="{pod}"}}', 7)
        wait_until(
            lambda: hpa_reads(cluster, "7"), timeout=90, what="the same HPA reading queue_items from promhpa"
        )
    finally:
        if ours is not None:
            stop_adapter(ours)
        stop_adapter(pa)
        stop_process(kcm, timeout=10)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
