"""MetricRules on the real control plane: a team's rule served in its namespace, confined to
its series, its verdict on its status; the CRDs' schema, columns and validation as the
kube-apiserver serves them; an HPA scaled on a team's metric by promhpa's controller."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.live import running_controller
from tests.live import scale_replicas
from tests.netproxy import Proxy
from tests.support import AdapterProcess
from tests.support import PrometheusProcess
from tests.support import answer
from tests.support import external_rules
from tests.support import install_metric_rule_crds
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
A, B = "team-a", "team-b"
OURS, THEIRS = 7.0, 7_777_777.0


def rule(name: str, metric: str, query: str, ns: str = A) -> dict[str, Any]:
    return {
        "apiVersion": "promhpa.io/v1alpha1",
        "kind": "MetricRule",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"metric": metric, "query": query},
    }


def external(cluster: Cluster, ns: str, metric: str) -> tuple[int, dict[str, Any]]:
    out = cluster.kubectl(
        "get", "--raw", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}", check=False
    )
    if out.returncode != 0:
        return (404 if "NotFound" in out.stderr or "not found" in out.stderr else 500), {"error": out.stderr}
    return 200, json.loads(out.stdout)


def values(cluster: Cluster, ns: str, metric: str) -> list[float] | None:
    code, body = external(cluster, ns, metric)
    if code != 200:
        return None
    return [_number(i["value"]) for i in body["items"]]


def _number(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def accepted(cluster: Cluster, name: str, ns: str = A) -> dict[str, Any]:
    obj = json.loads(cluster.kubectl("-n", ns, "get", "metricrule", name, "-o", "json").stdout)
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Accepted"), {})


@pytest.fixture(scope="module")
def adapter(live: Live) -> Iterator[AdapterProcess]:
    cluster = live.cluster
    install_metric_rule_crds(cluster)
    samples = {'file_queue{namespace="team-a",queue="q"}': 1.0}
    for ns in (A, B):
        cluster.kubectl("create", "namespace", ns, check=False)
        samples[f'jobs_waiting{{namespace="{ns}",queue="q"}}'] = OURS if ns == A else THEIRS
        samples[f'team_load{{namespace="{ns}",pod="p1"}}'] = 3 if ns == A else THEIRS
    live.publish(samples, "jobs_waiting", count=2)
    live.publish({}, "team_load", count=2)
    a = live.adapter(external_rules("file_queue", by=""), "--team-rules", "--query-cache-ttl=0s")
    wait_until(lambda: external(cluster, A, "file_queue")[0] == 200, timeout=60,
               what="the adapter behind the aggregator")  # fmt: skip
    yield a
    cluster.kubectl("delete", "metricrules", "--all", "-A", check=False)


def test_a_new_rule_is_served_within_five_seconds_and_says_so_on_its_status(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([rule("jobs", "jobs_waiting", "sum by (queue) (jobs_waiting)")])
    t0 = time.monotonic()
    wait_until(lambda: values(cluster, A, "jobs_waiting") is not None, timeout=5, what="served")
    print(f"served {time.monotonic() - t0:.2f}s after create")
    assert values(cluster, A, "jobs_waiting") == [OURS]
    wait_until(lambda: accepted(cluster, "jobs").get("status") == "True", timeout=10, what="Accepted")
    assert accepted(cluster, "jobs")["reason"] == "Served"


def test_a_new_replica_is_ready_only_once_it_serves_the_rules_its_peers_serve(
    live: Live, cluster: Cluster, adapter: AdapterProcess
) -> None:
    """A replica that reported ready before it had read the MetricRules answered 404 for a
    metric its peers served: two reads lost during a rolling upgrade."""
    cluster.apply([rule("peer", "peer_jobs", "sum by (queue) (jobs_waiting)")])
    wait_until(lambda: values(cluster, A, "peer_jobs") is not None, timeout=10, what="served by the first")
    second = live.local_adapter(external_rules("file_queue", by=""), "--team-rules", "--query-cache-ttl=0s")
    code, body = answer(second, f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{A}/peer_jobs")
    assert code == 200, body  # its very first answer, the moment /readyz said ok


def test_a_teams_rule_is_not_served_in_another_namespace(cluster: Cluster, adapter: AdapterProcess) -> None:
    cluster.apply([rule("jobs", "jobs_waiting", "sum by (queue) (jobs_waiting)")])
    wait_until(lambda: values(cluster, A, "jobs_waiting") is not None, timeout=10, what="served in team-a")
    assert external(cluster, B, "jobs_waiting")[0] == 404


def test_a_query_reaching_for_another_namespace_reads_only_its_own(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([rule("grab", "grab", 'max({__name__=~"jobs_.*", namespace=~".*"}) or on() vector(0)')])
    wait_until(lambda: values(cluster, A, "grab") is not None, timeout=10, what="served")
    assert values(cluster, A, "grab") == [OURS]


def test_the_file_form_discovers_its_metrics_and_serves_them_confined(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([{
        "apiVersion": "promhpa.io/v1alpha1", "kind": "MetricRule",
        "metadata": {"name": "discovered", "namespace": A},
        "spec": {
            "kind": "External",
            "seriesQuery": '{__name__=~"^jobs_.*"}',
            "name": {"matches": "^jobs_(.*)$", "as": "${1}_jobs"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)",
        },
    }])  # fmt: skip
    wait_until(
        lambda: values(cluster, A, "waiting_jobs") is not None, timeout=10, what="discovered and served"
    )
    assert values(cluster, A, "waiting_jobs") == [OURS]
    assert external(cluster, B, "waiting_jobs")[0] == 404
    wait_until(lambda: accepted(cluster, "discovered").get("status") == "True", timeout=10, what="Accepted")
    assert accepted(cluster, "discovered")["message"] == "serving 1 external metric(s): waiting_jobs"


def test_the_custom_form_serves_its_namespaces_pods_only(cluster: Cluster, adapter: AdapterProcess) -> None:
    cluster.apply([{
        "apiVersion": "promhpa.io/v1alpha1", "kind": "MetricRule",
        "metadata": {"name": "pods-load", "namespace": A},
        "spec": {
            "seriesQuery": '{__name__="team_load",pod!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": "^team_(.*)$", "as": "${1}"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
        },
    }])  # fmt: skip

    def custom(ns: str) -> tuple[int, str]:
        path = f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/p1/load"
        out = cluster.kubectl("get", "--raw", path, check=False)
        return out.returncode, out.stdout

    wait_until(lambda: custom(A)[0] == 0, timeout=10, what="the pod metric served")
    item = json.loads(custom(A)[1])["items"][0]
    assert (item["describedObject"]["name"], item["value"]) == ("p1", "3")
    assert custom(B)[0] != 0
    wait_until(lambda: accepted(cluster, "pods-load").get("status") == "True", timeout=10, what="Accepted")
    assert accepted(cluster, "pods-load")["message"] == "serving 1 custom metric(s): pods/load"


def test_a_valid_edit_takes_effect_at_once(cluster: Cluster, adapter: AdapterProcess) -> None:
    cluster.apply([rule("twice", "doubled", "sum(jobs_waiting)")])
    wait_until(lambda: values(cluster, A, "doubled") == [OURS], timeout=10, what="served")
    cluster.apply([rule("twice", "doubled", "sum(jobs_waiting) * 2")])
    t0 = time.monotonic()
    wait_until(lambda: values(cluster, A, "doubled") == [2 * OURS], timeout=5, what="the edit served")
    print(f"edit served {time.monotonic() - t0:.2f}s after apply")


def test_an_edit_to_invalid_keeps_the_last_good_version_serving(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([rule("edit", "edited", "sum(jobs_waiting)")])
    wait_until(lambda: values(cluster, A, "edited") == [OURS], timeout=10, what="served")
    cluster.apply([rule("edit", "edited", "sum(jobs_waiting")])
    wait_until(lambda: accepted(cluster, "edit").get("reason") == "Invalid", timeout=10, what="Invalid")
    verdict = accepted(cluster, "edit")
    assert verdict["status"] == "False"
    assert verdict["message"].startswith("spec.query: not valid PromQL")
    assert "still serving generation 1" in verdict["message"]
    assert values(cluster, A, "edited") == [OURS]


def test_deleting_a_rule_removes_its_metric(cluster: Cluster, adapter: AdapterProcess) -> None:
    cluster.apply([rule("gone", "going", "sum(jobs_waiting)")])
    wait_until(lambda: values(cluster, A, "going") is not None, timeout=10, what="served")
    cluster.kubectl("-n", A, "delete", "metricrule", "gone")
    wait_until(lambda: external(cluster, A, "going")[0] == 404, timeout=5, what="gone")


def test_a_name_the_rule_file_serves_is_a_conflict_on_the_rule_never_a_silent_winner(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    cluster.apply([rule("clash", "file_queue", "sum(jobs_waiting)")])
    wait_until(lambda: accepted(cluster, "clash").get("reason") == "Conflict", timeout=10, what="Conflict")
    assert "rule file" in accepted(cluster, "clash")["message"]
    assert values(cluster, A, "file_queue") == [1.0]  # the file's rule still answers


def test_the_api_server_refuses_a_rule_with_both_forms(cluster: Cluster, adapter: AdapterProcess) -> None:
    bad = rule("both", "m", "sum(x)")
    bad["spec"]["seriesQuery"] = "x"
    out = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert out.returncode != 0
    assert "give either query (the direct form) or seriesQuery" in out.stderr


def test_kubectl_explains_the_spec_and_shows_the_columns(cluster: Cluster, adapter: AdapterProcess) -> None:
    explained = cluster.kubectl("explain", "metricrule.spec").stdout
    assert "confined to the rule's namespace" in " ".join(explained.split())
    cluster.apply([rule("jobs", "jobs_waiting", "sum by (queue) (jobs_waiting)")])
    wait_until(lambda: accepted(cluster, "jobs").get("status") == "True", timeout=10, what="Accepted")
    table = cluster.kubectl("-n", A, "get", "metricrules").stdout.splitlines()
    assert table[0].split() == ["NAME", "METRIC", "KIND", "ACCEPTED", "AGE"]
    assert any(ln.split()[:2] == ["jobs", "jobs_waiting"] and ln.split()[2] == "True" for ln in table[1:])


def file_form_rule(name: str, metric: str) -> dict[str, Any]:
    """The rule file's form as a team writes it: one series, renamed to ``metric``."""
    return {
        "apiVersion": "promhpa.io/v1alpha1", "kind": "MetricRule",
        "metadata": {"name": name, "namespace": A},
        "spec": {
            "kind": "External",
            "seriesQuery": 'jobs_waiting{queue!=""}',
            "name": {"matches": "^jobs_waiting$", "as": metric},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)",
        },
    }  # fmt: skip


@pytest.mark.parametrize("form", ["direct", "file"])
def test_an_hpa_scales_on_a_teams_metric_within_one_sync_period(
    cluster: Cluster, adapter: AdapterProcess, tmp_path: Path, form: str
) -> None:
    metric = f"{form}_jobs"
    made = (
        rule(f"{form}-jobs", metric, "sum by (queue) (jobs_waiting)")
        if form == "direct"
        else file_form_rule(f"{form}-jobs", metric)
    )
    cluster.apply([made])
    wait_until(lambda: values(cluster, A, metric) == [OURS], timeout=10, what="served")
    worker = f"worker-{form}"
    cluster.kubectl(
        "-n", A, "create", "deployment", worker, "--image=example.invalid/w", "--replicas=1", check=False
    )
    cluster.apply([{
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": worker, "namespace": A},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": worker},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "External", "external": {
                "metric": {"name": metric},
                "target": {"type": "AverageValue", "averageValue": "2"},
            }}],
        },
    }])  # fmt: skip
    with running_controller(
        cluster.kubeconfig, tmp_path / "controller.log", "--horizontal-pod-autoscaler-sync-period=2s"
    ):
        # the first reconcile and one period
        wait_until(
            lambda: scale_replicas(cluster, A, worker) == 4, timeout=30, what="ceil(7 / 2) = 4 replicas"
        )


def test_a_teams_query_past_its_time_limit_is_a_504_naming_the_limit(
    cluster: Cluster, prometheus: PrometheusProcess, adapter: AdapterProcess, tmp_path: Path
) -> None:
    """A team's slow query is cut at --team-rule-query-timeout, well inside the adapter's own
    Prometheus deadline: one team cannot hold the adapter's requests for long. The slowness is
    real: a proxy in front of the real Prometheus holds each answer 3 s."""
    proxy = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    slow = start_adapter(
        tmp_path, f"http://127.0.0.1:{proxy.port}", external_rules("file_queue", by=""),
        "--team-rules", f"--kubeconfig={cluster.kubeconfig}", "--query-cache-ttl=0s",
        "--team-rule-query-timeout=1s", "--prometheus-timeout=20s",
    )  # fmt: skip
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{A}/slow_jobs"
    try:
        cluster.apply([rule("slow", "slow_jobs", "sum(jobs_waiting)")])
        wait_until(lambda: slow.get(path)[0] == 200, timeout=10, what="served without delay")
        proxy.delay = 3.0
        t0 = time.monotonic()
        code, body = slow.get(path)
        elapsed = time.monotonic() - t0
        assert (code, body.get("reason")) == (504, "Timeout"), body
        assert "--team-rule-query-timeout" in body["message"]
        assert elapsed < 2.5, f"answered after {elapsed:.2f}s"
    finally:
        stop_adapter(slow)
        proxy.close()
        cluster.kubectl("-n", A, "delete", "metricrule", "slow", check=False)
