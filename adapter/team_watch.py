"""MetricRules and ClusterMetricRules from the cluster: watched, assigned, verdicts written.

The I/O edge of ``adapter.team_rules``: two informers keep the objects; any change wakes
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
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from aiohttp import web

from shared.kube.client import Kube
from shared.kube.errors import Conflict, Forbidden, KubeError, NotFound
from shared.kube.informer import Informer

from .backends import Backends
from .config import GroupResource
from .promapi import PrometheusUnavailable
from .registry import index_series
from .team_rules import (
    CLUSTER,
    GROUP,
    NAMESPACED,
    PATHS,
    VERSION,
    Assignment,
    Key,
    Limits,
    Name,
    TeamRule,
    condition,
    give_out,
    judge_all,
)

log = structlog.get_logger("adapter.team_rules")


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
    ) -> None:
        self.kube, self.limits, self.file_metrics, self.resync = kube, limits, file_metrics, resync
        self.backends, self.max_age, self.file_custom = backends, max_age, file_custom
        self.assignment = Assignment()
        self._good: dict[Key, TeamRule] = {}
        # the file form's discovery: rule -> (the version it was made for, metric -> series)
        self._discovered: dict[Key, tuple[TeamRule, dict[Name, str]]] = {}
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._denied = False
        self.informers = {
            kind: Informer(kube, PATHS[kind], on_change=self._changed, watch_idle_timeout=watch_idle_timeout)
            for kind in (NAMESPACED, CLUSTER)
        }

    def _changed(self, _event: str, _obj: dict[str, Any]) -> None:
        """From an informer's thread: wake the loop's reconcile."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)

    async def context(self, _: web.Application) -> AsyncIterator[None]:
        """Start watching; stop with the app (aiohttp cleanup context)."""
        self._loop = asyncio.get_running_loop()
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
                informer.stop()

    async def _run(self) -> None:
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
            try:
                series = await self.backends.get(rule.backend).series(rule.selector, self.max_age)
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
        judged = judge_all(objects, self._good, self.limits)
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
        previous = next((c for c in conditions if c.get("type") == "Accepted"), None)
        generation = int(meta.get("generation") or 0)
        wanted = condition(verdict, generation, _now(), previous)
        spec = obj.get("spec") or {}
        metric = spec.get("metric") if isinstance(spec.get("metric"), str) else None
        same = previous is not None and all(
            previous.get(k) == wanted[k] for k in ("status", "reason", "message", "observedGeneration")
        )
        if same and status.get("observedGeneration") == generation and status.get("metric") == metric:
            return
        status["conditions"] = [c for c in conditions if c.get("type") != "Accepted"] + [wanted]
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
