"""One Mimir, many tenants (``tests.mimir_peer``): a backend's ``tenantHeader`` names the asking
namespace's tenant in ``X-Scope-OrgID``. Two tenants hold different values of the same series;
each namespace reads its own tenant's value and never another's, and requests without a
namespace read the default tenant."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster.promhpa import AdapterProcess
from tests.mimir_peer import Mimir
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

METRIC = "tenant_queue_depth"
SERIES = {"__name__": METRIC, "queue": "orders"}  # the same labels in every tenant
VALUES = {"tenant-a": 11.0, "tenant-b": 22.0, "platform": 99.0}


@pytest.fixture
def written(mimir: Mimir) -> Mimir:
    """Each tenant holds the series with its own value (written again per test: fresh)."""
    for tenant, value in VALUES.items():
        mimir.push(tenant, [(SERIES, value)])
    wait_until(
        lambda: all(mimir.query(t, METRIC) for t in VALUES),
        timeout=30,
        what="every tenant's sample queryable",
    )
    return mimir


def _rules(mimir: Mimir, tenant_header: str) -> str:
    return f"""
backends:
- name: mimir
  url: {mimir.prometheus_url}
  tenantHeader: {tenant_header}
externalRules:
- seriesQuery: '{{__name__="{METRIC}"}}'
  resources: {{namespaced: false}}  # the tenant, not a label, says whose the series is
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}})'
  backend: mimir
"""


def _value(adapter: AdapterProcess, namespace: str) -> str | int:
    """The external metric's value as ``namespace`` reads it, or the status if it cannot."""
    code, body = adapter.get(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{METRIC}")
    if code != 200:
        return code
    return str(body["items"][0]["value"]) if body["items"] else "no value"


def _adapter(tmp_path: Path, mimir: Mimir, tenant_header: str) -> AdapterProcess:
    # --prometheus-url is the platform's own Prometheus; here Mimir's default tenant stands in
    return start_adapter(
        tmp_path, mimir.prometheus_url, _rules(mimir, tenant_header), "--query-cache-ttl=5s",
        "--prometheus-header=X-Scope-OrgID: platform",
    )  # fmt: skip


def _discovered(adapter: AdapterProcess) -> bool:
    code, body = adapter.get("/apis/external.metrics.k8s.io/v1beta1")
    return code == 200 and any(r["name"] == METRIC for r in body["resources"])


def test_each_namespace_reads_its_own_tenants_value(written: Mimir, tmp_path: Path) -> None:
    tenants = "{default: platform, namespaces: {team-a: tenant-a, team-b: tenant-b}}"
    adapter = _adapter(tmp_path, written, tenants)
    try:
        wait_until(lambda: _discovered(adapter), timeout=60, what="the metric discovered")
        # the cache holds one answer per tenant: asked in turn, each namespace gets its own
        seen = [(ns, _value(adapter, ns)) for ns in ("team-a", "team-b", "team-a", "team-b", "elsewhere")]
    finally:
        stop_adapter(adapter)
    assert seen == [
        ("team-a", "11"), ("team-b", "22"), ("team-a", "11"), ("team-b", "22"),
        ("elsewhere", "99"),  # a namespace the map does not name: the default tenant
    ]  # fmt: skip


def test_from_namespace_makes_each_namespace_its_tenant(written: Mimir, tmp_path: Path) -> None:
    """Tenants named as the namespaces; a namespace with no tenant data reads nothing, not the
    default tenant's value (discovery found the series there)."""
    for namespace, value in (("team-c", 33.0), ("team-d", 44.0)):
        written.push(namespace, [(SERIES, value)])
    wait_until(lambda: written.query("team-d", METRIC) != [], timeout=30, what="team-d's sample")
    adapter = _adapter(tmp_path, written, "{from: namespace, default: platform}")
    try:
        wait_until(lambda: _discovered(adapter), timeout=60, what="the metric discovered")
        seen = {ns: _value(adapter, ns) for ns in ("team-c", "team-d", "team-e")}
    finally:
        stop_adapter(adapter)
    assert seen == {"team-c": "33", "team-d": "44", "team-e": "no value"}


def test_discovery_finds_a_series_only_a_mapped_tenant_holds(mimir: Mimir, tmp_path: Path) -> None:
    """Discovery asks the default tenant and every tenant the map names: a series the platform
    tenant lacks is still served to the namespace whose tenant holds it."""
    only = {"__name__": f"{METRIC}_only_b", "queue": "orders"}
    mimir.push("tenant-b", [(only, 5.0)])
    wait_until(lambda: mimir.query("tenant-b", only["__name__"]) != [], timeout=30, what="tenant-b's sample")
    rules = _rules(mimir, "{default: platform, namespaces: {team-b: tenant-b}}").replace(
        f'{{__name__="{METRIC}"}}', f'{{__name__="{only["__name__"]}"}}'
    )
    adapter = start_adapter(
        tmp_path, mimir.prometheus_url, rules, "--prometheus-header=X-Scope-OrgID: platform"
    )
    try:
        path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/team-b/{only['__name__']}"
        wait_until(lambda: adapter.get(path)[0] == 200, timeout=60, what="the tenant-b-only metric served")
        code, body = adapter.get(path)
    finally:
        stop_adapter(adapter)
    assert code == 200, body
    assert [i["value"] for i in body["items"]] == ["5"]
