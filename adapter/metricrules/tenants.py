"""Which tenant a MetricRule may read, on a backend with one tenant per namespace
(``tenantHeader``): a team's rule asks as its namespace, so it reads that namespace's tenant
-- never the default one, which holds the platform's series (nodes, every namespace's pods)
and is what a namespace the map does not name falls back to. The platform may name the
tenants MetricRules may read instead (``--team-rule-tenants``); then only those.

Checked when a MetricRule's query is about to be sent, against the backend as it is defined
then (the rule file reloads), and said on the rule's status like a limit.
"""

from __future__ import annotations

from rules.backend import TenantHeader

from .team_rules import NAMESPACED, TeamRule


def tenant_refused(tenancy: TenantHeader | None, rule: TeamRule, allowed: frozenset[str]) -> str | None:
    """Why ``rule`` may not read the tenant its namespace maps to, or None if it may."""
    if tenancy is None or rule.kind != NAMESPACED:
        return None
    tenant = tenancy.tenant_for(rule.namespace)
    backend = f"backend {rule.backend!r}"
    if allowed:
        if tenant in allowed:
            return None
        return (
            f"{backend} would read tenant {tenant!r} for namespace {rule.namespace!r}, not one a "
            f"MetricRule may read (allowed: {', '.join(sorted(allowed))}; --team-rule-tenants)"
        )
    if tenancy.own_tenant(rule.namespace):
        return None
    return (
        f"{backend} has no tenant for namespace {rule.namespace!r}: its tenantHeader maps it to the "
        f"default tenant {tenant!r}, which MetricRules may not read (map the namespace to its "
        "tenant in the rule file, or name the tenants MetricRules may read with --team-rule-tenants)"
    )
