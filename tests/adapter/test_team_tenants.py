"""Which tenant a MetricRule may read (``adapter.metricrules.tenants``), on plain data."""

from __future__ import annotations

from adapter.metricrules.team_rules import CLUSTER
from adapter.metricrules.team_rules import NAMESPACED
from adapter.metricrules.team_rules import TeamRule
from adapter.metricrules.tenants import tenant_refused
from rules.backend import TenantHeader

MAPPED = TenantHeader(default="platform", namespaces=(("shop", "team-a"),))
EACH = TenantHeader(default="platform", from_namespace=True)


def _rule(namespace: str, kind: str = NAMESPACED) -> TeamRule:
    return TeamRule(kind, namespace, "r", "m", "sum(x)", "mimir", 1, "")


def test_a_backend_without_tenants_refuses_nothing() -> None:
    assert tenant_refused(None, _rule("shop"), frozenset()) is None


def test_a_mapped_namespace_reads_its_own_tenant() -> None:
    assert tenant_refused(MAPPED, _rule("shop"), frozenset()) is None


def test_an_unmapped_namespace_may_not_fall_back_to_the_default_tenant() -> None:
    why = tenant_refused(MAPPED, _rule("elsewhere"), frozenset())
    assert why is not None
    assert "has no tenant for namespace 'elsewhere'" in why
    assert "default tenant 'platform'" in why


def test_from_namespace_gives_every_namespace_its_own_tenant() -> None:
    assert tenant_refused(EACH, _rule("anything"), frozenset()) is None


def test_named_tenants_are_the_only_ones_metricrules_may_read() -> None:
    allowed = frozenset({"platform"})
    assert tenant_refused(MAPPED, _rule("elsewhere"), allowed) is None
    why = tenant_refused(MAPPED, _rule("shop"), allowed)
    assert why is not None
    assert "would read tenant 'team-a' for namespace 'shop'" in why
    assert "allowed: platform" in why


def test_a_clustermetricrule_is_the_platforms_and_reads_as_the_request() -> None:
    assert tenant_refused(MAPPED, _rule("", CLUSTER), frozenset()) is None


def test_the_tenant_header_names_each_namespaces_tenant() -> None:
    assert [MAPPED.tenant_for(n) for n in ("shop", "elsewhere", None, "")] == ["team-a", "platform"] + [
        "platform"
    ] * 2
    assert EACH.tenant_for("shop") == "shop"
    assert MAPPED.discovery_tenants() == ("platform", "team-a")
