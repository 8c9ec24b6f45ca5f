"""How a MetricRule's query is sent: confined to what its rule may reach, as its namespace's
tenant, under its namespace's limits (``team_gate``: concurrency, rate, series, cost) and
the team rules' query time limit. A limit hit is said on the rule's status too, and cleared
by the next query that passes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Protocol

from promclient.backends import Backends
from promclient.promapi import Gate, PrometheusTimeout, Sample

from .query_cost import over_cost
from .team_assignment import Assignment
from .team_gate import TeamGate, TeamLimitError
from .team_rules import NAMESPACED, Key, TeamRule
from .tenants import tenant_refused


class TeamRules(Protocol):
    """What serving needs of ``team_watch.TeamRuleWatch``: the current assignment, and where
    to say that a rule's request met a per-namespace limit (or no longer does)."""

    assignment: Assignment

    def note_limit(self, key: Key, problem: str | None) -> None: ...


class TeamQueries:
    """The MetricRules being served (``rules``) and how their queries go out."""

    def __init__(
        self,
        rules: TeamRules,
        backends: Backends,
        timeout: float,
        gate: TeamGate,
        tenants: frozenset[str] = frozenset(),
    ) -> None:
        self.rules, self.backends, self.timeout, self.gate = rules, backends, timeout, gate
        self.tenants = tenants  # what MetricRules may read beyond their own tenant

    @property
    def assignment(self) -> Assignment:
        return self.rules.assignment

    async def query(self, rule: TeamRule, query: str, namespace: str | None) -> list[Sample]:
        """A team rule's query, as ``namespace``'s tenant, under its limits: a MetricRule's
        within its namespace's and tenant, every one within the query time limit."""
        if rule.kind != NAMESPACED:
            return await self._timed(rule, query, namespace)
        gate, held = self.gate, []

        @contextlib.asynccontextmanager
        async def slot() -> AsyncIterator[None]:
            async with gate.slot(rule.namespace):
                held.append(True)
                yield

        try:
            problem = over_cost(rule.reach, gate.limits, time.time())  # an @ pin reaches further each day
            if problem is not None:
                raise TeamLimitError(422, "Invalid", f"{rule.describe()}: {problem}")
            refused = tenant_refused(self.backends.tenancy(rule.backend), rule, self.tenants)
            if refused is not None:
                raise TeamLimitError(403, "Forbidden", f"{rule.describe()}: {refused}")
            try:
                samples = await self._timed(rule, query, rule.namespace, slot)
            except PrometheusTimeout:
                if held:
                    raise
                raise gate.busy(rule.namespace, self.timeout) from None
            gate.check_series(rule.describe(), len(samples))
        except TeamLimitError as e:
            self.rules.note_limit(rule.key, str(e))
            raise
        self.rules.note_limit(rule.key, None)
        return samples

    async def _timed(
        self, rule: TeamRule, query: str, namespace: str | None, gate: Gate | None = None
    ) -> list[Sample]:
        try:
            async with asyncio.timeout(self.timeout):
                return await self.backends.get(rule.backend).query(query, gate, namespace)
        except TimeoutError:
            raise PrometheusTimeout(
                f"{rule.describe()}: no answer within the team rules' query time limit "
                f"({self.timeout:g}s, --team-rule-query-timeout)"
            ) from None
