"""MetricRules on a backend with one tenant per namespace (Grafana Mimir, ``tests.mimir_peer``),
against a real kube-apiserver: a team's rule reads its own namespace's tenant, never the
default (the platform's) one, and the platform can name the tenants MetricRules may read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.mimir_peer import Mimir
from tests.support import AdapterProcess
from tests.support import install_metric_rule_crds
from tests.support import wait_until

pytestmark = pytest.mark.cluster
METRIC = "tenant_jobs"
OWN, UNMAPPED = "tenants-a", "tenants-x"  # a namespace the map names, and one it does not


def rule(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "promhpa.io/v1alpha1",
        "kind": "MetricRule",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"metric": name.replace("-", "_"), "query": f"sum({METRIC})", "backend": "mimir"},
    }


def path(metric: str, ns: str) -> str:
    return f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}"


def condition(cluster: Cluster, name: str, ns: str, kind: str) -> dict[str, Any]:
    out = cluster.kubectl("-n", ns, "get", "metricrule", name, "-o", "json", check=False)
    if out.returncode != 0:
        return {}
    conditions = json.loads(out.stdout).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), {})


def _adapter(live: Live, mimir: Mimir, *flags: str) -> AdapterProcess:
    # a MetricRule's query is confined to its namespace's series; the platform's tenant holds
    # the same series with other values, so a value says which tenant answered
    mimir.push("tenant-a", [({"__name__": METRIC, "namespace": OWN}, 7.0)])
    mimir.push(
        "platform",
        [
            ({"__name__": METRIC, "namespace": OWN}, 700.0),
            ({"__name__": METRIC, "namespace": UNMAPPED}, 70.0),
        ],
    )
    install_metric_rule_crds(live.cluster, OWN, UNMAPPED)
    rules = f"""
backends:
- name: mimir
  url: {mimir.prometheus_url}
  tenantHeader: {{default: platform, namespaces: {{{OWN}: tenant-a}}}}
"""
    return live.local_adapter(rules, "--team-rules", "--team-rule-backends=default,mimir", *flags)


@pytest.fixture(scope="module")
def adapter(live: Live, mimir: Mimir) -> Iterator[AdapterProcess]:
    a = _adapter(live, mimir)
    yield a
    for ns in (OWN, UNMAPPED):
        live.cluster.kubectl("-n", ns, "delete", "metricrules", "--all", check=False)


def test_a_metricrule_reads_its_namespaces_tenant(cluster: Cluster, adapter: AdapterProcess) -> None:
    cluster.apply([rule("own-jobs", OWN)])
    wait_until(lambda: adapter.get(path("own_jobs", OWN))[0] == 200, timeout=20, what="own_jobs served")
    code, body = adapter.get(path("own_jobs", OWN))
    assert code == 200, body
    assert [i["value"] for i in body["items"]] == ["7"], body  # tenant-a's, not the platform's 700


def test_a_namespace_without_a_tenant_never_reads_the_default_one(
    cluster: Cluster, adapter: AdapterProcess
) -> None:
    """The map does not name the namespace: its tenant would be the platform's default, so
    the rule is refused (403, said on its status), and the platform's value is never read."""
    cluster.apply([rule("x-jobs", UNMAPPED)])
    wait_until(lambda: adapter.get(path("x_jobs", UNMAPPED))[0] != 404, timeout=20, what="x_jobs judged")
    code, body = adapter.get(path("x_jobs", UNMAPPED))
    assert (code, body["reason"]) == (403, "Forbidden"), body
    assert f"has no tenant for namespace '{UNMAPPED}'" in body["message"]
    assert "70" not in json.dumps(body)
    wait_until(
        lambda: "has no tenant" in condition(cluster, "x-jobs", UNMAPPED, "WithinLimits").get("message", ""),
        timeout=10,
        what="the refusal on the rule's status",
    )


def test_the_platform_can_allow_a_tenant_to_metricrules(live: Live, mimir: Mimir) -> None:
    """``--team-rule-tenants=platform``: only that tenant, so the unmapped namespace may read it
    and the mapped one (tenant-a, not named) may not."""
    a = _adapter(live, mimir, "--team-rule-tenants=platform")
    live.cluster.apply([rule("own-jobs", OWN), rule("x-jobs", UNMAPPED)])
    wait_until(lambda: a.get(path("x_jobs", UNMAPPED))[0] == 200, timeout=20, what="x_jobs served")
    assert [i["value"] for i in a.get(path("x_jobs", UNMAPPED))[1]["items"]] == ["70"]
    code, body = a.get(path("own_jobs", OWN))
    assert (code, body["reason"]) == (403, "Forbidden"), body
    assert "would read tenant 'tenant-a'" in body["message"]
    assert "--team-rule-tenants" in body["message"]
