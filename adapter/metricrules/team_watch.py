"""MetricRules and ClusterMetricRules from the cluster: watched, assigned, verdicts written.

The I/O edge of ``adapter.metricrules.team_rules``: two informers keep the objects; any change wakes
one reconcile on the event loop (and a resync every ``resync`` seconds, so a name the rule
file gives up or takes is noticed), which assigns the names afresh -- a served
``Assignment`` replaced whole, so a request never sees half an update -- and writes each
object's ``Accepted`` condition where it changed. A write that races an edit (409) or a
deletion (404) is left to the reconcile the edit itself wakes. Every replica of the
adapter writes the same verdict, so whichever writes first, the others find nothing to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from aiohttp import web

from promclient.backends import Backends
from promclient.promapi import PrometheusUnavailable
from rules.config import GroupResource
from rules.series import index_series
from shared.kube.client import Kube
from shared.kube.errors import Conflict, Forbidden, KubeError, NotFound
from shared.kube.informer import Informer

from .judging import RuleJudge
from .team_assignment import Assignment, Name, collect, condition, give_out
from .team_rules import CLUSTER, GROUP, NAMESPACED, PATHS, VERSION, Key, Limits, TeamRule, Verdict, key_of
from .tenants import tenant_refused

log = structlog.get_logger("adapter.metricrules.team_rules")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_path(kind: str, namespace: str, name: str) -> str:
    if kind == NAMESPACED:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/metricrules/{name}/status"
    return f"/apis/{GROUP}/{VERSION}/clustermetricrules/{name}/status"


class TeamRuleWatch:
    def __init__(
        self,
        kube: Kube,
        limits: Limits,
        file_metrics: Callable[[], Iterable[str]],
        file_custom: Callable[[], Iterable[tuple[GroupResource, str]]],
        backends: Backends,
        max_age: timedelta,
        resync: float = 30.0,
        watch_idle_timeout: float = 90.0,
        judge: RuleJudge | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube, self.limits, self.file_metrics, self.resync = kube, limits, file_metrics, resync
        self.judge = judge or RuleJudge(limits)
        self.clock = clock
        # each object's judgment, by the version judged: a reconcile judges only what changed
        self._judged: dict[Key, tuple[tuple[str, str], TeamRule | Verdict]] = {}
        # the request-time limits each served rule last hit (None: its last answer was within them)
        self.limited: dict[Key, str | None] = {}
        self.backends, self.max_age, self.file_custom = backends, max_age, file_custom
        self.assignment = Assignment()
        self._good: dict[Key, TeamRule] = {}
        # the file form's discovery: rule -> (the version it was made for, metric -> series)
        self._discovered: dict[Key, tuple[TeamRule, dict[Name, str]]] = {}
        self._wake = asyncio.Event()
        # set once both informers have listed and that list has been assigned: until then a
        # MetricRule's metric would answer 404, so the adapter is not ready (``not_ready``)
        self.assigned = asyncio.Event()
        self._denied = False
        self.informers = {
            kind: Informer(kube, PATHS[kind], on_change=self._changed, watch_idle_timeout=watch_idle_timeout)
            for kind in (NAMESPACED, CLUSTER)
        }

    def _changed(self, _event: str, _obj: dict[str, Any]) -> None:
        """An informer saw a change: wake the reconcile."""
        self._wake.set()

    async def context(self, _: web.Application) -> AsyncIterator[None]:
        """Start watching; stop with the app (aiohttp cleanup context)."""
        await asyncio.to_thread(self.judge.start)
        for informer in self.informers.values():
            informer.start()
        task = asyncio.create_task(self._run(), name="team-rules")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for informer in self.informers.values():
                await informer.aclose()
            await asyncio.to_thread(self.judge.close)

    def note_limit(self, key: Key, problem: str | None) -> None:
        """A served rule's request hit a per-namespace limit (``problem``), or answered within
        them (None): said on its status at the next reconcile when it changed."""
        if self.limited.get(key) != problem and (problem is not None or key in self.limited):
            self.limited[key] = problem
            self._wake.set()

    async def _judge_all(self, objects: list[tuple[str, dict[str, Any]]]) -> dict[Key, TeamRule | Verdict]:
        """Each object's judgment: from the last reconcile when its version is the same, else
        from the judging workers, all at once."""
        now = self.clock()
        out: dict[Key, TeamRule | Verdict] = {}
        pending: dict[Key, tuple[tuple[str, str], asyncio.Task[TeamRule | Verdict]]] = {}
        for kind, obj in objects:
            key = key_of(kind, obj)
            meta = obj.get("metadata") or {}
            version = (str(meta.get("uid") or ""), str(meta.get("generation") or meta.get("resourceVersion")))
            known = self._judged.get(key)
            if known is not None and known[0] == version:
                out[key] = known[1]
            else:
                pending[key] = (version, asyncio.create_task(self.judge.judge(kind, obj, now)))
        for key, (version, task) in pending.items():
            out[key] = await task
            self._judged[key] = (version, out[key])
        for key in set(self._judged) - set(out):
            del self._judged[key]
            self.limited.pop(key, None)
        return out

    def not_ready(self) -> str | None:
        """A readiness check: why MetricRules cannot be answered yet, or None. A new replica
        that served before its first assignment would 404 the metrics its older peers serve."""
        if self.assigned.is_set():
            return None
        waiting = [i for i in self.informers.values() if not i.synced.is_set()]
        if not waiting:
            return "the MetricRules are listed but not yet assigned"
        errors = "; ".join(f"{i.path}: {i.error}" for i in waiting if i.error)
        return "the MetricRules have not been listed yet" + (f" ({errors})" if errors else "")

    async def _run(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))
        self._wake.clear()  # the lists' ADDED events: this reconcile reads them
        try:
            await self.reconcile()
        except Exception:  # a bug must not hold readiness or end the watch: logged
            log.exception("team rules: reconcile failed")
        self.assigned.set()
        while True:
            resync = False
            try:
                async with asyncio.timeout(self.resync):
                    await self._wake.wait()
            except TimeoutError:
                resync = True  # the file form's series are looked for again
            self._wake.clear()
            try:
                await self.reconcile(rediscover=resync)
            except Exception:  # a bug must not end the watch: logged, retried at the next wake
                log.exception("team rules: reconcile failed")

    async def _discover(self, rules: Iterable[TeamRule], again: bool) -> dict[Key, dict[Name, str]]:
        """Each file-form rule's metrics: found when the rule (or its version) is new, and
        again at every resync; a backend that cannot answer keeps the last ones."""
        found: dict[Key, dict[Name, str]] = {}
        for rule in rules:
            if rule.rule is None:
                continue
            known = self._discovered.get(rule.key)
            if known is not None and known[0] == rule and not again:
                found[rule.key] = known[1]
                continue
            if tenant_refused(self.backends.tenancy(rule.backend), rule, self.limits.tenants) is not None:
                found[rule.key] = {}  # nothing of a tenant it may not read, not even metric names
                continue
            try:
                series = await self.backends.get(rule.backend).series(
                    rule.selector, self.max_age, rule.namespace or None
                )
            except PrometheusUnavailable as e:
                log.warning("team rules: discovery failed", rule=rule.describe(), error=str(e))
                if known is not None:
                    found[rule.key] = known[1]
                continue
            custom, external = index_series(rule.rule, series)
            names: dict[Name, str] = {(gr, metric): name for gr, metric, name in custom}
            names.update(external)
            found[rule.key] = names
            self._discovered[rule.key] = (rule, found[rule.key])
        for key in set(self._discovered) - set(found):
            del self._discovered[key]
        return found

    async def reconcile(self, rediscover: bool = False) -> None:
        objects = [
            (kind, obj)
            for kind, informer in self.informers.items()
            if informer.synced.is_set()
            for obj in informer.items()
        ]
        judged = collect(objects, await self._judge_all(objects), self._good)
        discovered = await self._discover(judged.candidates.values(), rediscover)
        assignment = give_out(judged, self.file_metrics(), self.limits, discovered, self.file_custom())
        if set(assignment.served) != set(self.assignment.served):
            log.info("team rules served", metrics=sorted(f"{ns or '*'}/{m}" for ns, m in assignment.served))
        self.assignment, self._good = assignment, judged.candidates
        for kind, obj in objects:
            await self._write(kind, obj, assignment)

    async def _write(self, kind: str, obj: dict[str, Any], assignment: Assignment) -> None:
        meta = obj.get("metadata") or {}
        key = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        verdict = assignment.verdicts.get(key)
        if verdict is None:
            return
        status = dict(obj.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        generation = int(meta.get("generation") or 0)
        wanted = {"Accepted": verdict}
        if key in self.limited:  # a served rule whose answers met a per-namespace limit
            problem = self.limited[key]
            wanted["WithinLimits"] = (
                Verdict("True", "WithinLimits", "the last answer was within the namespace's query limits")
                if problem is None
                else Verdict("False", "LimitExceeded", problem)
            )
        changed = False
        for kind_of, v in wanted.items():
            previous = next((c for c in conditions if c.get("type") == kind_of), None)
            new = condition(v, generation, _now(), previous, kind_of)
            if previous is None or any(
                previous.get(k) != new[k] for k in ("status", "reason", "message", "observedGeneration")
            ):
                conditions = [c for c in conditions if c.get("type") != kind_of] + [new]
                changed = True
        spec = obj.get("spec") or {}
        metric = spec.get("metric") if isinstance(spec.get("metric"), str) else None
        if not changed and status.get("observedGeneration") == generation and status.get("metric") == metric:
            return
        status["conditions"] = conditions
        status["observedGeneration"] = generation
        if metric is not None:
            status["metric"] = metric
        body = {**obj, "status": status}
        try:
            await self.kube.put(status_path(*key), body)
        except (Conflict, NotFound):
            pass  # an edit or a deletion raced us: its own event reconciles again
        except Forbidden as e:
            if not self._denied:
                log.warning("team rules: cannot write a rule's status (RBAC)", error=str(e))
                self._denied = True
        except KubeError as e:
            log.warning("team rules: status write failed", rule="/".join(key), error=str(e))
