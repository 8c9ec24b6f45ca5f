"""MetricRules judged in worker processes, each judgment with a deadline.

Why not on the event loop: judging parses and rewrites PromQL that any namespace editor
wrote. The size limits (``adapter.metricrules.query_size``) keep the parser within its safe range, and
confining is linear. Still, the parser is native code, and a defect in it must cost one
rule, not the adapter every HPA reads. So each judgment runs in a worker process (pebble's
``ProcessPool``), where:

* a judgment past ``timeout`` has its worker killed and replaced;
* a worker that dies (a segmentation fault, the memory limit) is replaced;
* either way the rule is ``Invalid`` with what happened. One log line names the rule and
  its input's size, never its text, and ``promhpa_adapter_rule_judge_failures_total``
  counts it.

Workers are spawned, not forked: the adapter runs threads (informers), and a fork copies
their locks in whatever state they are. Each worker runs at a lower CPU priority than the
serving loop. They have no address-space limit of their own: under one, the parser's crash
turned from an immediate segmentation fault into minutes of failed allocations (measured);
an object the API server accepted is at most a few MiB, and the deadline bounds the rest.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import structlog
from pebble import ProcessExpired, ProcessPool
from prometheus_client import CollectorRegistry, Counter

from .team_rules import Limits, TeamRule, Verdict, judge, key_of

log = structlog.get_logger("adapter.metricrules.team_rules")

WORKER_NICE = 10


def default_workers() -> int:
    """One worker per core beyond the serving loop's, at least one and at most two."""
    return max(1, min(2, (os.cpu_count() or 2) - 1))


def _worker_start() -> None:
    os.nice(WORKER_NICE)


def _judge(kind: str, obj: Mapping[str, Any], limits: Limits, now: float | None) -> TeamRule | Verdict:
    return judge(kind, obj, limits, now)


def _size(obj: Mapping[str, Any]) -> int:
    spec = obj.get("spec") or {}
    return sum(len(v) for v in spec.values() if isinstance(v, str)) if isinstance(spec, dict) else 0


class RuleJudge:
    """The adapter's judging pool: ``await judge(kind, obj, now)``."""

    def __init__(
        self,
        limits: Limits,
        workers: int | None = None,
        timeout: float = 2.0,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.limits, self.timeout = limits, timeout
        self.workers = workers or default_workers()
        self.failures = Counter(
            "promhpa_adapter_rule_judge_failures_total",
            "MetricRule judgments whose worker timed out or died (the rule is marked Invalid)",
            ["reason"],
            registry=registry or CollectorRegistry(),
        )
        self._pool: ProcessPool | None = None
        # what a worker runs: a module-level function, so a spawned worker can import it
        self.work: Callable[[str, Mapping[str, Any], Limits, float | None], TeamRule | Verdict] = _judge

    def start(self) -> None:
        self._pool = ProcessPool(
            max_workers=self.workers,
            initializer=_worker_start,
            context=multiprocessing.get_context("spawn"),
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()  # type: ignore[no-untyped-call]
            self._pool.join(timeout=5)
            self._pool = None

    async def judge(
        self, kind: str, obj: Mapping[str, Any], now: float | None = None, timeout: float | None = None
    ) -> TeamRule | Verdict:
        """``obj`` judged in a worker within ``timeout`` (the pool's by default), or the
        Verdict saying why it could not be."""
        if self._pool is None:
            self.start()
        assert self._pool is not None
        limit = self.timeout if timeout is None else timeout
        future = self._pool.schedule(self.work, args=(kind, dict(obj), self.limits, now), timeout=limit)
        try:
            return await asyncio.wrap_future(future)
        except (FutureTimeout, TimeoutError):
            return self._failed(kind, obj, "timeout", f"judging it took longer than {limit:g}s")
        except ProcessExpired as e:
            return self._failed(kind, obj, "crashed", f"judging it ended its worker (exit code {e.exitcode})")
        except asyncio.CancelledError:
            future.cancel()  # type: ignore[no-untyped-call]
            raise

    def _failed(self, kind: str, obj: Mapping[str, Any], reason: str, what: str) -> Verdict:
        _, ns, name = key_of(kind, obj)
        self.failures.labels(reason).inc()
        log.warning(
            "team rules: a rule's judgment failed; its worker was replaced",
            rule=f"{kind} {ns + '/' if ns else ''}{name}",
            reason=reason,
            spec_characters=_size(obj),
        )
        return Verdict(
            "False",
            "Invalid",
            f"{what}; the query is too complex for the adapter to check: simplify it, or move "
            "the logic into a Prometheus recording rule",
        )
