"""Two teams' HPAs on one Mimir, on the real control plane: the adapter (behind the aggregator)
names each namespace's tenant in ``X-Scope-OrgID`` (``tenantHeader``), and the two tenants
hold different values of the same series. Each namespace's HPA reads its own tenant's value,
and scales by it, never by the other's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from localcluster import Cluster
from tests.live import Live
from tests.live import hpa
from tests.live import scale_replicas
from tests.mimir_peer import Mimir
from tests.support import external_metric_app
from tests.support import wait_until

pytestmark = pytest.mark.cluster
METRIC = "team_backlog"
TEAMS = {"tenancy-a": ("tenant-a", 15.0), "tenancy-b": ("tenant-b", 22.0)}  # namespace: (tenant, value)


def _objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ns in TEAMS:
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # averageValue 10 over one replica: 15 asks for 2 replicas, 22 for 3
        out += external_metric_app(ns, "worker", METRIC, labels={"tenancy": "true"}, replicas=1,
                                   max_replicas=6, average_value="10")  # fmt: skip
    return out


@pytest.fixture(scope="module")
def scaled(cluster: Cluster, live: Live, mimir: Mimir) -> Iterator[None]:
    for tenant, value in TEAMS.values():
        mimir.push(tenant, [({"__name__": METRIC, "queue": "jobs"}, value)])
    mimir.push("platform", [({"__name__": METRIC, "queue": "jobs"}, 99.0)])
    mapping = ", ".join(f"{ns}: {tenant}" for ns, (tenant, _) in TEAMS.items())
    rules = f"""
backends:
- name: mimir
  url: {mimir.prometheus_url}
  tenantHeader: {{default: platform, namespaces: {{{mapping}}}}}
externalRules:
- seriesQuery: '{{__name__="{METRIC}"}}'
  resources: {{namespaced: false}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
  backend: mimir
"""
    live.adapter(rules)
    cluster.apply(_objects())
    live.controller("--hpa-selector=tenancy", "--horizontal-pod-autoscaler-sync-period=2s")
    yield
    for ns in TEAMS:
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _read(cluster: Cluster, ns: str) -> str | None:
    for m in hpa(cluster, ns, "worker").get("status", {}).get("currentMetrics") or []:
        return str(m["external"]["current"]["averageValue"])
    return None


def test_each_namespaces_hpa_reads_and_scales_by_its_own_tenant(cluster: Cluster, scaled: None) -> None:
    wait_until(
        lambda: [scale_replicas(cluster, ns, "worker") for ns in TEAMS] == [2, 3],
        timeout=60,
        what="tenancy-a at 2 replicas (15 of tenant-a) and tenancy-b at 3 (22 of tenant-b)",
    )
    # what each HPA last read: its tenant's value over its replicas, never the other's or 99
    wait_until(
        lambda: [_read(cluster, ns) for ns in TEAMS] == ["7500m", "7334m"],
        timeout=30,
        what="each HPA's current average from its own tenant",
    )
