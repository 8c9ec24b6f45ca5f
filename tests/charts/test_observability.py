"""The chart's Grafana dashboard and alert rules against the metrics the processes really expose.

A monitoring Prometheus scrapes the adapter (HTTPS, with a ServiceAccount token it is
authorized by, as the chart's ServiceMonitor does) and the controller under the job names
the chart's ServiceMonitors give them, and loads the chart's rendered PrometheusRule as a
rule file. The adapter serves a real HPA through the aggregator and the controller scales
it, so every panel has something to show.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
import yaml

from localcluster import Cluster
from localcluster.manifests import binding
from localcluster.manifests import cluster_role
from localcluster.manifests import hpa_manifest
from localcluster.manifests import pods_metric
from localcluster.prometheus import PrometheusProcess as Prom
from shared.durations import parse_time
from tests.charts.chart import CHART
from tests.charts.chart import of_kind
from tests.charts.chart import render
from tests.live import Live
from tests.support import AdapterProcess
from tests.support import PrometheusProcess
from tests.support import free_port
from tests.support import insecure_tls
from tests.support import prefixed_rules
from tests.support import prometheus_binary
from tests.support import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NS = "obs"
ADAPTER_JOB, CONTROLLER_JOB = "hpa-promhpa-adapter", "hpa-promhpa-controller-metrics"
DASHBOARD = json.loads((CHART / "files" / "dashboards" / "promhpa.json").read_text())
CONFIG = prefixed_rules("obs")
OPTIONAL = "promhpa_controller_shadow_"  # only a --dry-run controller has samples of these


@dataclass
class Setup:
    monitoring: Prom
    adapter: AdapterProcess
    controller_port: int
    token: str


def dashboard_queries() -> list[tuple[str, str]]:
    return [
        (p["title"], t["expr"].replace("$__rate_interval", "1m"))
        for p in DASHBOARD["panels"]
        for t in p.get("targets", [])
    ]


def query(prom: Prom, expr: str) -> dict[str, Any]:
    url = f"{prom.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return dict(json.loads(r.read()))
    except urllib.error.HTTPError as e:
        return dict(json.loads(e.read()))


def rules(prom: Prom) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{prom.url}/api/v1/rules", timeout=10) as r:
        return [rule for g in json.loads(r.read())["data"]["groups"] for rule in g["rules"]]


class Traffic(threading.Thread):
    """Metrics requests through the aggregator, twice a second, while the module runs."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.cluster, self.stopped = cluster, threading.Event()

    def run(self) -> None:
        paths = [
            f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/{NS}/pods/*/requests",
            f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/obs_queue_depth",
        ]
        while not self.stopped.wait(0.5):
            for p in paths:
                self.cluster.kubectl("get", "--raw", p, check=False)


@pytest.fixture(scope="module")
def setup(live: Live) -> Iterator[Setup]:
    cluster, work = live.cluster, live.folder("observability")
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("-n", NS, "create", "deployment", "web", "--image=example.invalid/w", "--replicas=1")
    live.publish({f'obs_queue_depth{{namespace="{NS}",queue="jobs"}}': 3,
                  f'obs_requests{{namespace="{NS}",pod="seed"}}': 0}, "obs_queue_depth")  # fmt: skip
    adapter = live.adapter(CONFIG, folder=work)
    # the scraper: a ServiceAccount allowed to GET /metrics, as the chart grants Prometheus
    scraper = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "scraper", "namespace": NS}},
        cluster_role("obs-scraper", {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
        binding("obs-scraper", "obs-scraper", NS, "scraper"),
    ]
    cluster.apply(scraper)
    token = cluster.kubectl("-n", NS, "create", "token", "scraper", "--duration=1h").stdout.strip()
    (work / "token").write_text(token)
    docs = render(
        "--set=prometheus.url=http://p:9090", "--set=prometheusRule.enabled=true", release="hpa", namespace=NS
    )
    (rule,) = of_kind(docs, "PrometheusRule")
    (work / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    controller_port = free_port()
    scrape = (
        f"- job_name: {ADAPTER_JOB}\n  scheme: https\n"
        f"  authorization: {{credentials_file: {work / 'token'}}}\n"
        f"  tls_config: {{insecure_skip_verify: true}}\n"
        f"  static_configs: [{{targets: ['127.0.0.1:{adapter.port}']}}]\n"
        f"- job_name: {CONTROLLER_JOB}\n  scheme: https\n"
        f"  authorization: {{credentials_file: {work / 'token'}}}\n"
        f"  tls_config: {{insecure_skip_verify: true}}\n"
        f"  static_configs: [{{targets: ['127.0.0.1:{controller_port}']}}]\n"
    )
    monitoring = Prom(prometheus_binary(), work / "monitoring", free_port(), extra_config=scrape,
                      rule_files=(str(work / "rules.yaml"),))  # fmt: skip
    monitoring.directory.mkdir()
    # the HPA and its controller
    wait_until(lambda: "Running" in cluster.kubectl("-n", NS, "get", "pods").stdout, timeout=60, what="a pod")
    for pod in cluster.kubectl("-n", NS, "get", "pods", "-o", "name").stdout.split():
        live.exporter.set(f'obs_requests{{namespace="{NS}",pod="{pod.split("/")[1]}"}}', 5)
    hpa = hpa_manifest(NS, "web", pods_metric("requests", "10"), labels={"obs": "true"}, max_replicas=3)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa))
    live.controller("--hpa-selector=obs", f"--secure-port={controller_port}",
                    "--horizontal-pod-autoscaler-sync-period=1s")  # fmt: skip
    traffic = Traffic(cluster)
    traffic.start()
    monitoring.start()
    try:
        yield Setup(monitoring, adapter, controller_port, token)
    finally:
        traffic.stopped.set()
        monitoring.stop()
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def exposed_names(s: Setup) -> set[str]:
    """Every metric family the two processes expose (HELP lines: families without samples too)."""
    import ssl

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    req = urllib.request.Request(s.adapter.url + "/metrics", headers={"Authorization": f"Bearer {s.token}"})
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        text = r.read().decode()
    req = urllib.request.Request(
        f"https://127.0.0.1:{s.controller_port}/metrics", headers={"Authorization": f"Bearer {s.token}"}
    )
    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
        text += r.read().decode()
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        name, kind = m.groups()
        names.add(name)
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        if kind == "counter" and not name.endswith("_total"):
            names.add(f"{name}_total")
    return names


def metric_names(expr: str) -> set[str]:
    return set(re.findall(r"\b((?:promhpa|horizontal_pod_autoscaler)_[a-z_]+)\b", expr))


def test_every_dashboard_query_runs_and_shows_data(setup: Setup) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 15

    def empty() -> list[str]:
        out = []
        for title, expr in queries:
            answer = query(setup.monitoring, expr)
            assert answer["status"] == "success", f"{title}: {expr}: {answer.get('error')}"
            if not answer["data"]["result"] and not all(n.startswith(OPTIONAL) for n in metric_names(expr)):
                out.append(f"{title}: {expr}")
        return out

    wait_until(lambda: empty() == [], timeout=90, what="data in every dashboard panel")


def test_dashboard_and_alerts_name_only_metrics_the_processes_expose(setup: Setup) -> None:
    exprs = [e for _, e in dashboard_queries()] + [r["query"] for r in rules(setup.monitoring)]
    used = set().union(*(metric_names(e) for e in exprs))
    assert len(used) >= 12
    assert used - exposed_names(setup) == set()


def test_alert_rules_load_and_stay_quiet_while_all_is_well(setup: Setup) -> None:
    loaded = rules(setup.monitoring)
    assert len(loaded) == 11
    assert [r["name"] for r in loaded if r.get("health") != "ok"] == []
    # a few evaluations with both processes scraped: every rule evaluated after both are up
    up = f'up{{job=~"{ADAPTER_JOB}|{CONTROLLER_JOB}"}} == 1'
    wait_until(lambda: len(setup.monitoring.query(up)) == 2, timeout=30, what="both processes scraped")
    since = datetime.now(UTC) + timedelta(seconds=2)
    wait_until(lambda: all(parse_time(r["lastEvaluation"]) >= since for r in rules(setup.monitoring)),
               timeout=30, what="the rules evaluated with both scraped")  # fmt: skip
    assert [(r["name"], r["state"]) for r in rules(setup.monitoring) if r["state"] != "inactive"] == []


def test_a_prometheus_outage_trips_the_prometheus_errors_alert(
    setup: Setup, prometheus: PrometheusProcess
) -> None:
    prometheus.stop()
    try:

        def state() -> str:
            return next(
                r["state"] for r in rules(setup.monitoring) if r["name"] == "PromhpaAdapterPrometheusErrors"
            )

        wait_until(
            lambda: state() == "pending", timeout=60, what="PromhpaAdapterPrometheusErrors to be pending"
        )
    finally:
        prometheus.start()


def test_dashboard_ships_in_the_chart_for_the_grafana_sidecar() -> None:
    docs = render("--set=prometheus.url=http://p:9090", "--set=grafanaDashboard.enabled=true")
    (cm,) = [d for d in of_kind(docs, "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["promhpa.json"]) == DASHBOARD


def _controller_status(s: Setup, path: str, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"https://127.0.0.1:{s.controller_port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=insecure_tls()) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_controller_endpoints_refuse_a_caller_without_credentials(setup: Setup) -> None:
    assert _controller_status(setup, "/metrics", None) == 401
    assert _controller_status(setup, "/debug/shadow", None) == 401


def test_the_monitoring_account_reads_metrics_but_not_debug(setup: Setup) -> None:
    assert _controller_status(setup, "/metrics", setup.token) == 200
    assert _controller_status(setup, f"/debug/history/{NS}/web", setup.token) == 403
    assert _controller_status(setup, "/debug/shadow", setup.token) == 403


def test_controller_probes_are_open(setup: Setup) -> None:
    assert _controller_status(setup, "/healthz", None) == 200
    assert _controller_status(setup, "/readyz", None) == 200


def test_a_forged_token_is_not_authenticated(setup: Setup) -> None:
    assert _controller_status(setup, "/metrics", setup.token[:-4] + "AAAA") == 401
