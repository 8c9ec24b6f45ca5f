"""`helm install` of charts/promhpa into the real control plane, in externalEndpoint mode.

The adapter runs on this host with the chart's serving certificate, rules and
ServiceAccount; the controller runs as a process with the chart's ServiceAccount token, so
every request it makes is authorized by exactly the RBAC the chart grants. Then each of
those grants is taken away in turn and the controller must say what is missing; finally
`helm uninstall` must leave nothing behind.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import Cluster
from localcluster import service_account_kubeconfig
from localcluster.manifests import external_metric
from localcluster.manifests import hpa_manifest
from tests.charts.chart import CHART
from tests.charts.chart import helm
from tests.charts.chart import render as render_chart
from tests.live import Controller
from tests.live import hpa
from tests.live import running_controller
from tests.live import scale_replicas
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import cpu_deployment
from tests.support import free_port
from tests.support import leader_identity
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import stop_process
from tests.support import wait_until
from tests.test_doc_commands import COMMANDS

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
RELEASE, NS, APP_NS = "hpa", "promhpa-chart", "chart-app"
ADAPTER, CONTROLLER = "hpa-promhpa-adapter", "hpa-promhpa-controller"
API_NAMES = [
    "v1beta1.custom.metrics.k8s.io",
    "v1beta2.custom.metrics.k8s.io",
    "v1beta1.external.metrics.k8s.io",
    "v1beta1.metrics.k8s.io",
    "v1.metrics.k8s.io",
]
RULES = {
    "default": False,
    "custom": [
        {
            "seriesQuery": '{__name__=~"^chart_.*",namespace!="",pod!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": "^chart_(.*)$", "as": "${1}"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        }
    ],
    "external": [
        {
            "seriesQuery": '{__name__="chart_queue_depth"}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)",
        }
    ],
    "resource": {
        "cpu": {
            "containerQuery": "sum(chart_container_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
            "nodeQuery": "sum(chart_node_cpu_cores{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
            "resources": {
                "overrides": {
                    "namespace": {"resource": "namespace"},
                    "pod": {"resource": "pod"},
                    "node": {"resource": "node"},
                }
            },
            "containerLabel": "container",
        },
        "window": "1s",
    },
}


@dataclass
class Release:
    port: int
    work: Path
    adapter: AdapterProcess


def apiservices(cluster: Cluster) -> list[dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
    return [a for a in items if a["metadata"]["name"] in API_NAMES]


def available(cluster: Cluster) -> bool:
    mine = apiservices(cluster)
    return len(mine) == len(API_NAMES) and all(
        any(
            c["type"] == "Available" and c["status"] == "True"
            for c in a.get("status", {}).get("conditions", [])
        )
        for a in mine
    )


def secret_data(cluster: Cluster, name: str) -> dict[str, bytes]:
    data = json.loads(cluster.kubectl("-n", NS, "get", "secret", name, "-o", "json").stdout)["data"]
    return {k: base64.b64decode(v) for k, v in data.items()}


@pytest.fixture(scope="module")
def release(
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Release]:
    work = tmp_path_factory.mktemp("chart")
    # APIServices registered by earlier test modules are not the chart's: Helm would refuse them
    cluster.kubectl("delete", "apiservice", *API_NAMES, "--ignore-not-found")
    exporter.set(f'chart_queue_depth{{namespace="{APP_NS}",queue="jobs"}}', 0)
    exporter.set(f'chart_requests{{namespace="{APP_NS}",pod="seed"}}', 0)
    wait_until(lambda: prometheus.query("chart_queue_depth") != [], what="scrape")
    port, webhook_port = free_port(), free_port()
    values = work / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "externalEndpoint": {
                    "enabled": True,
                    "host": "127.0.0.1",
                    "port": port,
                    "webhookPort": webhook_port,
                },
                "apiServices": {"resource": True},
                "rules": {
                    **RULES,
                    # the local kube-apiserver presents this CA's certificate to webhooks
                    "webhook": {"enabled": True, "clientCA": cluster.webhook_client_ca.read_text()},
                },
                # the controller runs as a process here (kwok pods run no containers)
                "controller": {"replicas": 0},
            }
        )
    )
    helm("install", RELEASE, str(CHART), "-n", NS, "--create-namespace", "-f", str(values), cluster=cluster)
    tls = secret_data(cluster, f"{ADAPTER}-tls")
    (work / "tls.crt").write_bytes(tls["tls.crt"])
    (work / "tls.key").write_bytes(tls["tls.key"])
    rules = json.loads(cluster.kubectl("-n", NS, "get", "configmap", f"{ADAPTER}-rules", "-o", "json").stdout)
    kubeconfig = service_account_kubeconfig(cluster, NS, ADAPTER, work / "adapter.kubeconfig")
    a = start_adapter(
        work,
        prometheus.url,
        rules["data"]["config.yaml"],
        f"--kubeconfig={kubeconfig}",
        f"--tls-cert-file={work / 'tls.crt'}",
        f"--tls-private-key-file={work / 'tls.key'}",
        "--query-cache-ttl=0s",
        "--rules-webhook",
        f"--rules-webhook-port={webhook_port}",
        f"--rules-webhook-client-ca-file={cluster.webhook_client_ca}",
        insecure=False,
        port=port,
    )
    try:
        wait_until(lambda: available(cluster), timeout=60, what="the chart's APIServices Available")
        yield Release(port, work, a)
    finally:
        stop_adapter(a)
        helm("uninstall", RELEASE, "-n", NS, "--wait", cluster=cluster, check=False)


def test_apiservices_become_available_with_the_charts_certificate(cluster: Cluster, release: Release) -> None:
    ca = secret_data(cluster, f"{ADAPTER}-tls")["ca.crt"]
    for api in apiservices(cluster):
        assert base64.b64decode(api["spec"]["caBundle"]) == ca
        assert not api["spec"].get("insecureSkipTLSVerify")
    out = cluster.kubectl(
        "get", "--raw", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{APP_NS}/chart_queue_depth"
    )
    assert json.loads(out.stdout)["items"][0]["value"] == "0"


def test_upgrade_keeps_the_serving_certificate(cluster: Cluster, release: Release) -> None:
    before = secret_data(cluster, f"{ADAPTER}-tls")
    helm("upgrade", RELEASE, str(CHART), "-n", NS, "--reuse-values", cluster=cluster)
    assert secret_data(cluster, f"{ADAPTER}-tls") == before
    assert available(cluster)


def test_an_invalid_metric_rule_is_refused_at_admission_with_the_parsers_message(
    cluster: Cluster, release: Release
) -> None:
    bad = {
        "apiVersion": "promhpa.io/v1alpha1",
        "kind": "MetricRule",
        "metadata": {"name": "broken", "namespace": APP_NS},
        "spec": {"metric": "broken", "query": "sum(jobs"},
    }
    cluster.kubectl("create", "namespace", APP_NS, check=False)
    out = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert 'admission webhook "metricrules.promhpa.io" denied the request' in out.stderr, out.stderr
    assert f"MetricRule {APP_NS}/broken: spec.query: not valid PromQL" in out.stderr


def test_namespace_editors_manage_metric_rules_and_only_cluster_admins_cluster_rules(
    cluster: Cluster, release: Release
) -> None:
    cluster.kubectl("create", "namespace", APP_NS, check=False)
    for role in ("edit", "view"):
        cluster.kubectl("-n", APP_NS, "create", "serviceaccount", f"a-{role}", check=False)
        cluster.kubectl(
            "-n", APP_NS, "create", "rolebinding", f"a-{role}", f"--clusterrole={role}",
            f"--serviceaccount={APP_NS}:a-{role}", check=False,
        )  # fmt: skip

    def can(role: str, *what: str) -> bool:
        out = cluster.kubectl(
            "auth", "can-i", *what, f"--as=system:serviceaccount:{APP_NS}:a-{role}", check=False
        )
        return out.stdout.strip() == "yes"

    # the aggregation controller folds the chart's roles into edit and view within seconds
    wait_until(lambda: can("edit", "create", "metricrules.promhpa.io", "-n", APP_NS), what="edit aggregated")
    wait_until(lambda: can("view", "list", "metricrules.promhpa.io", "-n", APP_NS), what="view aggregated")
    assert can("edit", "delete", "metricrules.promhpa.io", "-n", APP_NS)
    assert not can("edit", "update", "metricrules.promhpa.io", "--subresource=status", "-n", APP_NS)
    assert not can("edit", "create", "clustermetricrules.promhpa.io")
    assert not can("edit", "create", "metricrules.promhpa.io", "-n", NS)  # another namespace
    assert not can("view", "create", "metricrules.promhpa.io", "-n", APP_NS)


def rules_configmap(cluster: Cluster) -> str:
    cm = json.loads(cluster.kubectl("-n", NS, "get", "configmap", f"{ADAPTER}-rules", "-o", "json").stdout)
    return str(cm["data"]["config.yaml"])


def deployed_revision(cluster: Cluster) -> int:
    history = json.loads(helm("history", RELEASE, "-n", NS, "-o", "json", cluster=cluster).stdout)
    return max(int(h["revision"]) for h in history if h["status"] in ("deployed", "superseded"))


@pytest.mark.parametrize(
    ("broken_query", "expected"),
    [
        # Prometheus' own parser refuses the rendered query: its message, file:line and key
        (
            "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>",
            r"config\.yaml:\d+: rules\[0\]\.metricsQuery: Prometheus rejects the rendered query .*"
            r"parse error",
        ),
        # a misspelled template action, refused before Prometheus is asked
        ("sum(<<.Series>>{<<.LabelMatcher>>}) by (<<.GroupBy>>)", r"config\.yaml:\d+.*LabelMatcher"),
    ],
    ids=["promql-syntax", "template-action"],
)
def test_upgrade_with_a_broken_rule_fails_and_the_old_rules_keep_serving(
    cluster: Cluster, release: Release, broken_query: str, expected: str
) -> None:
    good_revision, before = deployed_revision(cluster), rules_configmap(cluster)
    broken = json.loads(json.dumps(RULES))
    broken["custom"][0]["metricsQuery"] = broken_query
    values = release.work / "broken.yaml"
    values.write_text(yaml.safe_dump({"rules": broken}))
    out = helm(
        "upgrade", RELEASE, str(CHART), "-n", NS, "--reuse-values", "-f", str(values), "--wait",
        "--timeout=60s", cluster=cluster, check=False,
    )  # fmt: skip
    try:
        assert out.returncode != 0
        assert 'admission webhook "rules.promhpa.io" denied the request' in out.stderr, out.stderr
        assert re.search(expected, out.stderr), out.stderr
        assert rules_configmap(cluster) == before  # nothing reached the adapters
        assert available(cluster)
        served = cluster.kubectl(
            "get", "--raw", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{APP_NS}/chart_queue_depth"
        )
        assert json.loads(served.stdout)["items"][0]["metricName"] == "chart_queue_depth"
    finally:
        helm("rollback", RELEASE, str(good_revision), "-n", NS, "--wait", cluster=cluster)
    assert rules_configmap(cluster) == before


def test_a_valid_rule_change_passes_the_webhook(cluster: Cluster, release: Release) -> None:
    good_revision = deployed_revision(cluster)
    changed = json.loads(json.dumps(RULES))
    changed["custom"][0]["metricsQuery"] = "max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
    values = release.work / "changed.yaml"
    values.write_text(yaml.safe_dump({"rules": changed}))
    try:
        helm("upgrade", RELEASE, str(CHART), "-n", NS, "--reuse-values", "-f", str(values), cluster=cluster)
        assert "max(<<.Series>>" in rules_configmap(cluster)
        assert "rules admitted" in release.adapter.log.read_text()
    finally:
        helm("rollback", RELEASE, str(good_revision), "-n", NS, "--wait", cluster=cluster)


# -- the controller with the chart's RBAC ------------------------------------------------


def running(cluster: Cluster, app: str) -> list[str]:
    items = json.loads(cluster.kubectl("-n", APP_NS, "get", "pods", "-l", f"app={app}", "-o", "json").stdout)
    return [p["metadata"]["name"] for p in items["items"] if p["status"].get("phase") == "Running"]


def replicas(cluster: Cluster, app: str) -> int:
    return scale_replicas(cluster, APP_NS, app)


def condition(cluster: Cluster, name: str, ctype: str) -> tuple[str, str]:
    for c in hpa(cluster, APP_NS, name).get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return f"{c['status']}/{c['reason']}", str(c.get("message", ""))
    return "absent", ""


@pytest.fixture(scope="module")
def workloads(cluster: Cluster, exporter: Exporter, release: Release) -> None:
    cluster.kubectl("create", "namespace", APP_NS, check=False)
    cluster.kubectl("-n", APP_NS, "create", "deployment", "work", "--image=example.invalid/w", "--replicas=1")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(cpu_deployment(APP_NS, "cpu")))
    wait_until(lambda: len(running(cluster, "work")) == 1 and len(running(cluster, "cpu")) == 1, what="pods")
    for name in running(cluster, "cpu"):
        exporter.set(f'chart_container_cpu_cores{{namespace="{APP_NS}",pod="{name}",container="main"}}', 0.05)
    cpu = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "500m"}},
    }
    queue = external_metric("chart_queue_depth", "5", {"queue": "jobs"})
    hpas = [
        hpa_manifest(APP_NS, "work", queue, max_replicas=4),
        hpa_manifest(APP_NS, "cpu", cpu, max_replicas=4),
    ]
    cluster.apply(hpas)


CHART_CONTROLLER = (
    "--horizontal-pod-autoscaler-sync-period=1s",
    "--horizontal-pod-autoscaler-downscale-stabilization=0s",
    "--leader-elect",
    f"--leader-elect-resource-namespace={NS}",
    f"--leader-elect-resource-name={CONTROLLER}",
)


def chart_controller(cluster: Cluster, work: Path) -> contextlib.AbstractContextManager[Controller]:
    """The controller as the chart deploys it (leader election on the chart's Lease), with the
    chart ServiceAccount's token."""
    kubeconfig = service_account_kubeconfig(cluster, NS, CONTROLLER, work / "controller.kubeconfig")
    return running_controller(kubeconfig, work / f"controller-{free_port()}.log", *CHART_CONTROLLER)


@pytest.fixture
def controller(cluster: Cluster, release: Release, workloads: None) -> Iterator[Controller]:
    with chart_controller(cluster, release.work) as c:
        yield c


def test_controller_with_the_charts_rbac_reconciles(
    cluster: Cluster, exporter: Exporter, controller: Controller
) -> None:
    exporter.set(f'chart_queue_depth{{namespace="{APP_NS}",queue="jobs"}}', 15)
    wait_until(lambda: replicas(cluster, "work") == 3, timeout=60, what="work scaled to 3")
    wait_until(
        lambda: condition(cluster, "cpu", "ScalingActive")[0] == "True/ValidMetricFound", what="cpu metric"
    )
    # the reconcile after the rescale comes one sync period later (not on our own status write)
    wait_until(
        lambda: condition(cluster, "work", "AbleToScale")[0] == "True/ReadyForNewScale",
        timeout=40,
        what="the next periodic reconcile",
    )
    events = json.loads(
        cluster.kubectl(
            "-n", APP_NS, "get", "events", "--field-selector=involvedObject.name=work", "-o", "json"
        ).stdout
    )["items"]
    assert any(
        e["reason"] == "SuccessfulRescale" and e["source"]["component"] == "horizontal-pod-autoscaler"
        for e in events
    )
    lease = json.loads(cluster.kubectl("-n", NS, "get", "lease", CONTROLLER, "-o", "json").stdout)
    assert lease["spec"]["holderIdentity"] == leader_identity(controller.log)
    stop_process(controller.proc)  # SIGTERM: a clean stop hands the Lease over at once
    assert controller.proc.returncode == 0
    lease = json.loads(cluster.kubectl("-n", NS, "get", "lease", CONTROLLER, "-o", "json").stdout)
    assert "holderIdentity" not in lease["spec"]


def log_says(*words: str) -> Callable[[Cluster, Controller], bool]:
    return lambda cluster, c: all(w in c.log.read_text() for w in words)


def condition_says(hpa: str, ctype: str, state: str) -> Callable[[Cluster, Controller], bool]:
    def check(cluster: Cluster, c: Controller) -> bool:
        got, message = condition(cluster, hpa, ctype)
        return got == state and "forbidden" in message

    return check


@dataclass
class Ask:
    verb: str
    group: str
    resource: str
    namespace: str = ""
    subresource: str = ""
    name: str = ""


@dataclass
class Removal:
    kind: str  # ClusterRole or Role
    resources: list[str]  # the rule to take away, by its resources
    can_i: Ask  # a question the removal turns to "no"
    failure: Callable[[Cluster, Controller], bool]
    bump: bool = False  # change the load so that the controller has a status and an event to write


REMOVALS = {
    "hpa-list-watch": Removal(
        "ClusterRole", ["horizontalpodautoscalers"], Ask("list", "autoscaling", "horizontalpodautoscalers"),
        log_says("not allowed to list and watch", "horizontalpodautoscalers", "forbidden"),
    ),
    "hpa-status": Removal(
        "ClusterRole", ["horizontalpodautoscalers/status"],
        Ask("update", "autoscaling", "horizontalpodautoscalers", APP_NS, "status"),
        log_says("status not written", "forbidden"), bump=True,
    ),
    "scale": Removal(
        "ClusterRole", ["*/scale"], Ask("get", "apps", "deployments", APP_NS, "scale"),
        condition_says("work", "AbleToScale", "False/FailedGetScale"),
    ),
    "scale-watch": Removal(
        "ClusterRole", ["deployments", "replicasets", "statefulsets"], Ask("watch", "apps", "deployments"),
        log_says("scale reads", "GET", "not allowed to list deployments.v1.apps"),
    ),
    "pods": Removal(
        "ClusterRole", ["pods"], Ask("list", "", "pods"),
        log_says("not allowed to list and watch", "/api/v1/pods", "forbidden"),
    ),
    "events": Removal(
        "ClusterRole", ["events"], Ask("create", "", "events", APP_NS),
        log_says("event not recorded", "forbidden"), bump=True,
    ),
    "custom-and-external-metrics": Removal(
        "ClusterRole", ["*"], Ask("list", "external.metrics.k8s.io", "chart_queue_depth", APP_NS),
        condition_says("work", "ScalingActive", "False/FailedGetExternalMetric"),
    ),
    "resource-metrics": Removal(
        "ClusterRole", ["pods"], Ask("list", "metrics.k8s.io", "pods", APP_NS),
        condition_says("cpu", "ScalingActive", "False/FailedGetResourceMetric"),
    ),
    "lease": Removal(
        "Role", ["leases"], Ask("update", "coordination.k8s.io", "leases", NS, name=CONTROLLER),
        log_says("not allowed to manage the leader-election Lease", "forbidden"),
    ),
}  # fmt: skip


def can_i(cluster: Cluster, ask: Ask) -> bool:
    """A SubjectAccessReview for the chart's controller ServiceAccount (exact: no discovery)."""
    attributes = {"verb": ask.verb, "group": ask.group, "resource": ask.resource}
    for key, value in (("namespace", ask.namespace), ("subresource", ask.subresource), ("name", ask.name)):
        if value:
            attributes[key] = value
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{NS}:{CONTROLLER}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"],
            "resourceAttributes": attributes,
        },
    }
    out = cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review))
    return bool(json.loads(out.stdout)["status"].get("allowed"))


@pytest.mark.parametrize("case", list(REMOVALS), ids=list(REMOVALS))
def test_controller_says_what_is_missing_when_a_grant_is_removed(
    cluster: Cluster, exporter: Exporter, release: Release, workloads: None, case: str
) -> None:
    removal = REMOVALS[case]
    name = CONTROLLER if removal.kind == "ClusterRole" else f"{CONTROLLER}-leader-election"
    where = ["-n", NS] if removal.kind == "Role" else []
    role = json.loads(cluster.kubectl(*where, "get", removal.kind.lower(), name, "-o", "json").stdout)
    metrics_group = "metrics.k8s.io" if case == "resource-metrics" else None
    kept = [
        r
        for r in role["rules"]
        if not (
            r.get("resources") == removal.resources
            and (metrics_group is None or r.get("apiGroups") == [metrics_group])
            and (case != "pods" or r.get("apiGroups") == [""])
        )
    ]
    assert len(kept) == len(role["rules"]) - 1, f"the chart's {removal.kind} has no such rule"
    assert can_i(cluster, removal.can_i), "the chart grants it"
    role.pop("status", None)
    role["metadata"].pop("resourceVersion", None)
    cluster.kubectl("replace", "-f", "-", input=json.dumps({**role, "rules": kept}))
    try:
        wait_until(lambda: not can_i(cluster, removal.can_i), what="the grant removed")
        with chart_controller(cluster, release.work) as c:
            if removal.bump:
                wait_until(lambda: "became leader" in c.log.read_text(), timeout=30, what="leadership")
                exporter.set(
                    f'chart_queue_depth{{namespace="{APP_NS}",queue="jobs"}}',
                    20 if replicas(cluster, "work") != 4 else 10,
                )
            wait_until(
                lambda: removal.failure(cluster, c), timeout=45, what=f"a clear failure without {case}"
            )
            assert c.proc.poll() is None, "the controller keeps running so a fixed grant takes effect"
    finally:
        cluster.kubectl("replace", "-f", "-", input=json.dumps(role))
        wait_until(lambda: can_i(cluster, removal.can_i), what="the grant restored")


# The names the docs use (release and namespace `promhpa`, the reader's HPA, namespace and
# metric) and what they stand for in this release; a placeholder not listed here fails the test.
DOC_NAMES = [
    ("helm rollback promhpa <REVISION>", "helm rollback {release} {revision}"),
    ("helm history promhpa", "helm history {release}"),
    ("-n promhpa", "-n {ns}"),
    ("deploy/promhpa-", "deploy/{release}-promhpa-"),
    (" NAME -n NS", " work -n {app_ns}"),
    ("/NS/METRIC?labelSelector=...", "/{app_ns}/chart_queue_depth?labelSelector=queue%3Djobs"),
    ("/NS/pods/*/METRIC?labelSelector=app%3Dweb", "/{app_ns}/pods/*/requests?labelSelector=app%3Dwork"),
]
KUBELET_BOUND = {"logs", "port-forward"}  # need a kubelet to reach a container; kwok runs none


def localize(command: str, revision: int) -> list[str]:
    for doc, here in DOC_NAMES:
        command = command.replace(doc, here.format(release=RELEASE, revision=revision, ns=NS, app_ns=APP_NS))
    argv = shlex.split(command.removesuffix("&").strip())
    assert not [a for a in argv if re.fullmatch(r"<[A-Z_]+>|NAME|NS|METRIC", a) or "/NS/" in a], (
        f"{command}: a placeholder this test cannot fill (add it to DOC_NAMES)"
    )
    return argv


def test_the_documented_cluster_commands_run_against_a_release(
    cluster: Cluster, release: Release, workloads: None, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    """Every `kubectl` and `helm history|rollback` command in the docs, with the docs' names
    mapped to this release's. A command that needs a kubelet (logs, port-forward) is checked
    for what can go stale: the object it names is one the chart renders at its defaults."""
    # (docs/install.md's run on the real node, as written: tests/e2e/test_release.py; docs/
    # cloud.md's need a cloud's managed Prometheus and its credentials, which the tests meet
    # through their protocol peers in tests/promclient instead)
    commands = [
        (p, c)
        for p, c in COMMANDS
        if re.match(r"kubectl |helm (history|rollback) ", c) and p not in ("docs/install.md", "docs/cloud.md")
    ]
    assert len(commands) >= 10
    rendered = {
        f"{d['kind'].lower()}/{d['metadata']['name']}"
        for d in render_chart("--set", "prometheus.url=http://prometheus:9090", namespace=NS, release=RELEASE)
        if d.get("kind") == "Deployment"
    }
    for name in running(cluster, "work"):  # the pods the documented pods/* query selects
        exporter.set(f'chart_requests{{namespace="{APP_NS}",pod="{name}"}}', 3)
    wait_until(lambda: len(prometheus.query("chart_requests")) > 1, what="the pods' series scraped")
    # the walkthrough's manifests (docs/rules.md), applied as the reader would
    example = re.search(r"```yaml\n(.*?)```", (ROOT / "docs" / "rules.md").read_text(), re.S)
    assert example is not None
    (release.work / "orders.yaml").write_text(example.group(1))
    cluster.kubectl("create", "namespace", "shop", check=False)
    for page, command in commands:
        argv = localize(command, deployed_revision(cluster))
        argv = [str(release.work / a) if a == "orders.yaml" else a for a in argv]
        if argv[:2] == ["kubectl", "delete"]:
            argv.append("--dry-run=server")  # the names must exist; nothing is deleted
        if argv[:2] == ["kubectl", "promhpa"]:
            _plugin_finds_the_charts_leader(page, command, argv)
            continue
        if argv[0] == "kubectl" and KUBELET_BOUND & set(argv):
            target = next(a for a in argv if a.startswith("deploy/")).replace("deploy/", "deployment/")
            assert target in rendered, f"{page}: `{command}` names {target}, which the chart does not render"
            continue
        out = (
            cluster.kubectl(*argv[1:], check=False)
            if argv[0] == "kubectl"
            else helm(*argv[1:], cluster=cluster, check=False)
        )
        assert out.returncode == 0, f"{page}: `{command}` ({shlex.join(argv)}) failed:\n{out.stderr}"
        assert out.stdout.strip(), f"{page}: `{command}` printed nothing"


def _plugin_finds_the_charts_leader(page: str, command: str, argv: list[str]) -> None:
    """`kubectl promhpa why` reaches a running leader through a kubelet's port-forward (kwok
    runs none here; tests/controller/live/test_why_live.py runs it end to end). What can go
    stale is checked: the plugin is installed, and its defaults -- the Lease
    promhpa/promhpa-controller, the pod's port named metrics -- are what the chart renders
    for a release named promhpa in namespace promhpa, as the docs install it."""
    plugin = Path(sys.executable).parent / "kubectl-promhpa"
    out = subprocess.run([str(plugin), *argv[2:3], "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{page}: `{command}`: the plugin does not run:\n{out.stderr}"
    docs = render_chart(
        "--set", "prometheus.url=http://prometheus:9090", namespace="promhpa", release="promhpa"
    )
    (deploy,) = [
        d for d in docs if d.get("kind") == "Deployment" and d["metadata"]["name"] == "promhpa-controller"
    ]
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert "--leader-elect-resource-name=promhpa-controller" in container["args"], page
    assert "--leader-elect-resource-namespace=promhpa" in container["args"], page
    assert any(p["name"] == "metrics" for p in container["ports"]), page
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in container[
        "env"
    ], page


def test_uninstall_leaves_nothing_behind(cluster: Cluster, release: Release) -> None:
    helm("uninstall", RELEASE, "-n", NS, "--wait", cluster=cluster)
    selector = f"app.kubernetes.io/instance={RELEASE}"
    kinds = "all,configmaps,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets,leases"
    left = cluster.kubectl("-n", NS, "get", kinds, "-l", selector, "-o", "name").stdout.split()
    left += cluster.kubectl(
        "-n", "kube-system", "get", "rolebindings", "-l", selector, "-o", "name"
    ).stdout.split()
    left += cluster.kubectl(
        "get", "apiservices,clusterroles,clusterrolebindings", "-l", selector, "-o", "name"
    ).stdout.split()
    assert left == []
    assert apiservices(cluster) == []
    # nothing unlabelled either: the namespace holds only what Kubernetes puts in every one
    names = cluster.kubectl(
        "-n", NS, "get", "all,configmaps,secrets,serviceaccounts,leases", "-o", "name"
    ).stdout.split()
    assert sorted(names) == ["configmap/kube-root-ca.crt", "serviceaccount/default"]
