"""Series discovery for as long as the adapter serves: the first relist, then one every
interval, each reported (metrics, logs, /readyz) so a backend that is down is visible.

The first relist is usually already under way when this starts: the adapter sends it
before the Kubernetes client is loaded, so Prometheus answers it meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog

from adapter.api.wire import CUSTOM, EXTERNAL
from promclient.backends import label as backend_label
from promclient.promapi import PrometheusUnavailable

from .app import AdapterMetrics
from .health import Health
from .registry import Registry

log = structlog.get_logger("adapter")


@dataclass
class Relister:
    registry: Registry
    health: Health
    metrics: AdapterMetrics
    interval: float
    first: asyncio.Task[None] | None = None  # a relist started earlier, awaited first

    def report_backends(self) -> None:
        """Per backend: a metric, a log line when one is down, and a line on /readyz."""
        registry, m = self.registry, self.metrics
        lines = []
        for name in registry.backends.names():
            if name and not any(
                r.backend == name for r in registry.config.rules + registry.config.external_rules
            ):
                continue  # a backend only resourceRules use is not discovered
            error = registry.backend_errors.get(name)
            m.backend_up.labels(backend_label(name)).set(0 if error else 1)
            if error:
                log.warning("backend down; its metrics answer 503", backend=backend_label(name), error=error)
            if len(registry.backends.names()) > 1:
                lines.append(f"[{'-' if error else '+'}]backend {backend_label(name)} {error or 'ok'}")
        self.health.set_detail("backends", "\n".join(lines))

    async def once(self) -> None:
        """One relist (the one under way, if any) and its report."""
        registry, m = self.registry, self.metrics
        if self.first is not None:
            first, self.first = self.first, None
            await first
        else:
            await registry.relist()
        self.health.ready_reason = None
        self.report_backends()
        m.discovery_runs.labels("success").inc()
        m.discovery_seconds.set(registry.relist_seconds or 0)
        m.series.set(registry.index.series_count)
        m.metrics.labels(CUSTOM).set(len(registry.index.custom))
        m.metrics.labels(EXTERNAL).set(len(registry.index.external))
        log.debug(  # --v=4 and up (prometheus-adapter's verbosity): what each relist covered
            "discovery covered",
            backends=[backend_label(n) for n in registry.backends.names()],
            custom=sorted(str(m) for m in list(registry.index.custom)[:20]),
            external=sorted(str(m) for m in list(registry.index.external)[:20]),
        )
        log.info(
            "discovery",
            series=registry.index.series_count,
            custom_metrics=len(registry.index.custom),
            external_metrics=len(registry.index.external),
            seconds=round(registry.relist_seconds or 0, 3),
        )

    async def forever(self) -> None:
        while True:
            try:
                await self.once()
                await asyncio.sleep(self.interval)
            except PrometheusUnavailable as e:
                self.metrics.discovery_runs.labels("error").inc()
                self.report_backends()
                log.warning("discovery failed; retrying", error=str(e))
                await asyncio.sleep(min(self.interval, 5.0))

    async def context(self, _: object) -> AsyncIterator[None]:
        """cleanup_ctx: relist while the application serves."""
        task = asyncio.create_task(self.forever())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self.first is not None:  # stopped before the first relist was awaited
            self.first.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.first
