"""One live reconcile: read the world, decide, write.

The decision is ``controller.engine.decide`` on what was read (``observe``), typed as a
saved snapshot is -- the very function ``python -m controller decide`` runs offline -- so a
snapshot saved from these reads replays the same decision anywhere. A failed scale write
is decided again with the write's error set (``scale_update_error``), which yields
upstream's FailedRescale condition and event on the same code path.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from cachetools import TTLCache

from controller.engine import Decision, decide
from controller.engine.knobs import parse_knobs
from controller.engine.model import Settings, Snapshot
from controller.engine.reader import SnapshotError
from controller.engine.versions import Release
from shared.durations import format_duration
from shared.kube.client import Kube
from shared.kube.discovery import RESTMapper
from shared.kube.errors import Conflict, KubeError
from shared.kube.informer import Informer
from shared.kube.resources import HPA, Resource

from .consistency import RESOURCE, ReadYourWrites, StaleReadError
from .hpa_records import HpaRecords
from .hpa_selectors import SelectorRegistry
from .monitor import ControllerMetrics, Key
from .observe import Observer
from .pod_parses import PodParses
from .scale_reads import ScaleReads
from .second_writer import Writers, after_our_scale_write, notice, settle, status_writes
from .shadow import Shadow
from .why import Owner, WhyLog
from .write_policy import ACTIVE, PASSIVE, SHADOW, WritePolicy
from .writer import AS_US, EventRecorder, update_status

log = structlog.get_logger("controller")


@dataclass
class Reconciler:
    kube: Kube
    mapper: RESTMapper
    hpas: Informer
    pods: Informer
    settings: Settings
    recorder: EventRecorder
    metrics: ControllerMetrics
    dry_run: bool = False
    metrics_timeout: float = 15.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    records: HpaRecords = field(default_factory=HpaRecords)
    selectors: SelectorRegistry = field(default_factory=SelectorRegistry)
    shadow: Shadow = field(default_factory=Shadow)
    # the second-writer guard's quiet period (None: off, as in a dry run)
    second_writer_quiet: timedelta | None = None
    why: WhyLog = field(default_factory=WhyLog)
    scales: ScaleReads | None = None  # where scales are read from (None: a GET each)
    # our last status write per HPA, until the HPA informer has delivered it (``consistency``)
    own_writes: ReadYourWrites = field(default_factory=ReadYourWrites)
    kind: Resource = HPA  # the built-in HPAs, or promhpa's own kind (``OWN_HPA``)
    other_selectors: SelectorRegistry | None = None  # own kind: the built-in HPAs' (``Observer``)

    def __post_init__(self) -> None:
        self._warned: TTLCache[str, bool] = TTLCache(maxsize=10_000, ttl=300)
        self.observer = Observer(
            self.kube,
            self.mapper,
            self.hpas,
            self.pods,
            self.settings,
            self.metrics_timeout,
            self.clock,
            self.selectors,
            self.scales,
            self.kind,
            self.other_selectors,
        )
        # the informer's pods, each parsed once, not every reconcile
        self.parses = PodParses()

    async def reconcile(self, namespace: str, name: str) -> Decision | None:
        """One sync. Raises ``StaleReadError`` (counted; retried after the sync period) while the
        HPA cache has not yet shown our last status write, as 1.37 and later do."""
        key = (namespace, name)
        self._ensure_read_own_writes(key)
        if self.hpas.get(namespace, name) is None:
            self.forget(key)
            return None
        start = time.monotonic()
        seen = await self.observer.observe(namespace, name, self.records.history(key))
        hpa, scale_path = seen.hpa, seen.scale_path
        parsed = seen.view(self.parses)
        policy = await self._policy(key, hpa, seen.scale, parsed.now)
        if not policy.writes:  # the owner's rescales, not ours, count against its rate limits
            history = self.shadow.follow_owner(key, parsed.history, parsed.behavior, parsed.now)
            parsed = replace(parsed, history=history)
        decision = decide(parsed)
        if decision.rescale and policy.writes and scale_path is not None and seen.scale is not None:
            scale = {
                **seen.scale,
                "spec": {**seen.scale.get("spec", {}), "replicas": decision.desired_replicas},
            }
            try:
                await self._write_scale(scale_path, scale, decision.desired_replicas, parsed.settings.release)
                record = self.records.of(key)
                record.writers = after_our_scale_write(record.writers or Writers(), decision.desired_replicas)
            except KubeError as e:
                parsed = replace(parsed, scale_update_error=e.message)
                decision = decide(parsed)
        if policy is PASSIVE:
            await self._settle(key, hpa, decision, parsed.now)
        self.records.of(key).history = policy.kept(decision.history, parsed.history)
        owner = None if policy.writes else self._compare(key, decision, hpa, parsed)
        self.why.record(key, parsed, decision, mode=policy.mode, owner=owner)
        for event in decision.events:
            reason, message = policy.event(event.reason, event.message)
            try:
                await self.recorder.record(hpa, event.type, reason, message)
            except KubeError as e:
                log.warning(
                    "event not recorded", hpa=f"{namespace}/{name}", reason=event.reason, error=str(e)
                )
        if policy.writes:
            try:
                written = await update_status(self.kube, hpa, decision.status, kind=self.kind)
                if written is not None and self._reads_own_writes():
                    meta = written.get("metadata") or {}
                    self.own_writes.wrote_at(
                        key, str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))
                    )
            except KubeError as e:
                log.error("status not written", hpa=f"{namespace}/{name}", error=str(e))
                with contextlib.suppress(KubeError):
                    await self.recorder.record(hpa, "Warning", "FailedUpdateStatus", e.message)
        self._observe(namespace, name, decision, time.monotonic() - start)
        return decision

    def sync_period_of(self, key: Key) -> float | None:
        """An object of promhpa's kind may set its own sync period (``spec.controller``);
        None: the controller's. A bad value (which the CRD refuses) is the controller's."""
        hpa = self.hpas.get(*key)
        if hpa is None or not (hpa.get("spec") or {}).get("controller"):
            return None
        try:
            period = parse_knobs(hpa.get("spec"), self.settings)[1].sync_period
        except SnapshotError:
            return None
        return period.total_seconds() if period is not None else None

    def forget(self, key: Key) -> None:
        """A deleted HPA: everything kept of it goes, as upstream drops its recommendations
        and scale events -- its record, selector, explanations, shadow comparison and
        series."""
        record = self.records.pop(key)
        self.own_writes.clear(key)
        self.observer.forget(*key)
        self.why.forget(key)
        self.shadow.comparisons.pop(key, None)
        self.metrics.forget(key, record.series if record else set())

    def _reads_own_writes(self) -> bool:
        s = self.settings
        return s.release.reads_own_writes and s.feature_gates.stale_controller_consistency_hpa

    def _ensure_read_own_writes(self, key: Key) -> None:
        if not self._reads_own_writes():
            return
        try:
            self.own_writes.ensure_ready(key, self.hpas.last_sync_rv)
        except StaleReadError:
            self.metrics.stale_sync_skips.labels(self.kind.group, RESOURCE).inc()
            raise

    async def _write_scale(self, path: str, scale: dict[str, Any], replicas: int, release: Release) -> None:
        """PUT the scale. From 1.34 upstream retries a conflict as client-go's
        RetryOnConflict(DefaultRetry) does -- five attempts 10 ms apart, each after a fresh
        GET of the scale; before, a conflict is a failed rescale at once."""
        attempts = 5 if release.retries_scale_conflict else 1
        for attempt in range(attempts):
            try:
                answer = await self.kube.put(path, scale, AS_US)
                if self.scales is not None:
                    self.scales.wrote(path, answer)
                return
            except Conflict:
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(0.01 * (1 + 0.1 * random.random()))
                with contextlib.suppress(KubeError):  # upstream keeps the old object then
                    fresh = await self.kube.get(path)
                    scale = {**fresh, "spec": {**fresh.get("spec", {}), "replicas": replicas}}

    async def _policy(
        self, key: tuple[str, str], hpa: dict[str, Any], scale: dict[str, Any] | None, now: datetime
    ) -> WritePolicy:
        """Shadow for a dry run; passive while another writer writes this HPA
        (``second_writer.notice``); else active."""
        if self.dry_run:
            return SHADOW
        return PASSIVE if await self._another_writer(key, hpa, scale, now) else ACTIVE

    async def _another_writer(
        self, key: tuple[str, str], hpa: dict[str, Any], scale: dict[str, Any] | None, now: datetime
    ) -> bool:
        """Whether another writer makes this HPA passive now."""
        if self.second_writer_quiet is None:
            return False
        replicas = (scale or {}).get("spec", {}).get("replicas")
        record = self.records.of(key)
        if ((hpa.get("spec") or {}).get("controller") or {}).get("paused") is True:
            # promhpa's own kind, paused: others may act meanwhile (``adopt`` hands an HPA
            # over this way), so the guard starts afresh from what it sees now
            seen = status_writes(hpa)
            record.writers = Writers(seen=seen, replicas=replicas if isinstance(replicas, int) else None)
            return False
        v = notice(
            record.writers or Writers(),
            hpa=hpa,
            replicas=replicas if isinstance(replicas, int) else None,
            now=now,
            quiet=self.second_writer_quiet,
        )
        record.writers = v.writers
        if v.change == "passive":
            self.metrics.second_writer.labels(*key).set(1)
            log.warning(
                "another controller writes this HPA; promhpa stops writing it",
                hpa=f"{key[0]}/{key[1]}",
                evidence=v.writers.evidence,
                quiet=self.second_writer_quiet.total_seconds(),
            )
            quiet = format_duration(self.second_writer_quiet)
            message = (
                f"another controller writes this HPA ({v.writers.evidence}); promhpa writes neither its "
                f"scale nor its status until that writer has been quiet for {quiet}"
            )
            with contextlib.suppress(KubeError):
                await self.recorder.record(hpa, "Warning", "SecondWriterDetected", message)
        return v.writers.passive

    async def _settle(
        self, key: tuple[str, str], hpa: dict[str, Any], decision: Decision, now: datetime
    ) -> None:
        """A passive HPA resumes once nobody else maintains it (``second_writer.settle``)."""
        record = self.records.get(key)
        if self.second_writer_quiet is None or record is None or record.writers is None:
            return
        wants = dict(hpa.get("status") or {}) != decision.status
        v = settle(record.writers, wants_status=wants, now=now, quiet=self.second_writer_quiet)
        record.writers = v.writers
        if v.change == "active":
            quiet = format_duration(self.second_writer_quiet)
            self.metrics.second_writer.remove(*key)
            log.info(
                "the other writer has been quiet; promhpa writes this HPA again", hpa=f"{key[0]}/{key[1]}"
            )
            with contextlib.suppress(KubeError):
                await self.recorder.record(
                    hpa,
                    "Normal",
                    "SecondWriterQuiet",
                    f"no other controller has written this HPA for {quiet} while it needed a write: "
                    "promhpa writes it again",
                )

    def _compare(
        self, key: tuple[str, str], decision: Decision, hpa: dict[str, Any], parsed: Snapshot
    ) -> Owner:
        """Compare with the owner (``shadow``); what ``why`` shows of the owner's decision."""
        before = dict(self.shadow.paired)
        c = self.shadow.compare(key, decision.status, dict(hpa.get("status") or {}), parsed.now, parsed)
        for result, n in self.shadow.paired.items():
            if n > before[result]:
                self.metrics.shadow_comparisons.labels(result).inc(n - before[result])
        written = c.owner_status.get("conditions") or []
        conditions = {str(x.get("type")): str(x.get("reason")) for x in written}
        owner = Owner(c.owner_status.get("desiredReplicas"), conditions, None, [])
        if not c.owner_status.get("conditions"):
            return owner  # the owner has not decided yet: nothing to compare with
        owner.agrees, owner.differences = not c.persistent, list(c.differences) if c.persistent else []
        self.metrics.shadow_differs.labels(*key).set(1 if c.persistent else 0)
        since = c.differing_since.timestamp() if c.persistent and c.differing_since else 0
        self.metrics.shadow_differs_since.labels(*key).set(since)
        if c.persistent:
            log.warning("dry run differs from the owner", hpa=f"{key[0]}/{key[1]}", differences=c.differences)
        return owner

    def _warn_failures(self, namespace: str, name: str, d: Decision) -> None:
        """A reconcile that ends in a failure condition is a warning naming the HPA, the
        reason and the message -- once per HPA and reason every 5 minutes, not every sync."""
        for cond in d.status.get("conditions") or []:
            reason = str(cond.get("reason", ""))
            failing = cond.get("status") == "False" and (
                reason.startswith("Failed")
                or reason in ("InvalidSelector", "AmbiguousSelector", "InvalidMetricSourceType")
            )
            key = f"{namespace}/{name}|{reason}"
            if failing and key not in self._warned:
                self._warned[key] = True
                log.warning(
                    "HPA cannot scale",
                    hpa=f"{namespace}/{name}",
                    condition=cond.get("type"),
                    reason=reason,
                    message=cond.get("message"),
                )

    def _observe(self, namespace: str, name: str, d: Decision, seconds: float) -> None:
        record = self.records.of((namespace, name))
        record.series = self.metrics.observe_reconcile((namespace, name), d, seconds, record.series)
        self._warn_failures(namespace, name, d)
        log.info(
            "reconciled",
            hpa=f"{namespace}/{name}",
            current=d.current_replicas,
            desired=d.desired_replicas,
            rescale=d.rescale,
            dry_run=self.dry_run,
            reason=d.rescale_reason or None,
            seconds=round(seconds, 4),
        )
