"""Health under load: probes in a process of their own, and a bound on requests in flight.

A kubelet probe must not wait behind the work it is probing: with hundreds of clients on
the serving port the main event loop's queue is long, and a ``/healthz`` answered there
took seconds -- long enough for a liveness probe to restart a healthy adapter under the
very load it was coping with. A thread of its own is not enough either: it must win the
interpreter lock from a busy loop several times per probe. So ``/healthz``, ``/livez`` and
``/readyz`` are also served on a port of their own (``--health-port``) by a small child
process, which the kernel schedules on its own; the two share a heartbeat and the
readiness reason through shared memory. Liveness is not blind: the main loop beats every
second, and a loop that has not beaten for ``stall_seconds`` is reported dead. The shared
memory has no lock: a probe must never wait on the process it judges (one stopped while
holding a lock would hang every probe instead of failing it), and the serving loop is the
only writer. The child exits when its parent does.

``inflight_limiter`` caps the API requests being handled at once (the kube-apiserver's
``--max-requests-inflight``): past the cap a request gets ``429 TooManyRequests`` with
``Retry-After`` at once instead of queueing, so latency stays bounded and memory flat.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import structlog
from aiohttp import web

from adapter.api.wire import status
from shared.kube.secureport import PROBE_PATHS, Handler, add_probe_routes

log = structlog.get_logger("adapter.serving.health")
_MP = multiprocessing.get_context("spawn")  # never fork a process that runs threads and a loop


class Health:
    """What the probes report; written by the serving loop, read by the probe process."""

    def __init__(self, stall_seconds: float = 30.0) -> None:
        self.stall_seconds = stall_seconds
        self._beat = _MP.RawValue(ctypes.c_double, time.monotonic())
        self._reason = _MP.RawArray(ctypes.c_char, 512)
        self._detail = _MP.RawArray(ctypes.c_char, 2048)
        self._checked = _MP.RawArray(ctypes.c_char, 512)
        self._parts: dict[str, str] = {}
        self.ready_reason = "the first series discovery has not completed"
        # more readiness checks, run by the heartbeat each second on the serving loop (None:
        # ready); e.g. the object informers' staleness (``adapter.serving.objects``)
        self.checks: list[Callable[[], str | None]] = []

    def __getstate__(self) -> dict[str, object]:
        """For the probe process: the shared memory, not the serving side's checks (they
        hold the Kubernetes client, and run only where they were added)."""
        return {k: v for k, v in self.__dict__.items() if k != "checks"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.checks = []

    @property
    def ready_reason(self) -> str | None:
        text = self._reason.value.decode(errors="replace")
        return text or None

    @ready_reason.setter
    def ready_reason(self, reason: str | None) -> None:
        self._reason.value = (reason or "").encode()[:511]

    @property
    def detail(self) -> str:
        """Lines after the verdict on /readyz, e.g. which backends are down."""
        return self._detail.value.decode(errors="replace")

    @detail.setter
    def detail(self, text: str) -> None:
        self._detail.value = text.encode()[:2047]

    def set_detail(self, part: str, text: str) -> None:
        """One part of ``detail`` (the backends', the upstreams'), the parts in a fixed order."""
        self._parts[part] = text
        self.detail = "\n".join(t for _, t in sorted(self._parts.items()) if t)

    def beat(self) -> None:
        self._beat.value = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process

    def alive(self) -> str | None:
        """None when alive, else why not."""
        stalled = time.monotonic() - self._beat.value
        if stalled > self.stall_seconds:
            return f"the serving event loop has not run for {stalled:.0f}s"
        return None

    def ready(self) -> str | None:
        return self.alive() or self.ready_reason or (self._checked.value.decode(errors="replace") or None)

    def run_checks(self) -> None:
        """Evaluate ``checks`` and publish the first failure for the probes to read."""
        reason = next((r for check in self.checks if (r := check())), None)
        self._checked.value = (reason or "").encode()[:511]

    async def heartbeat(self, _: web.Application) -> AsyncIterator[None]:
        """cleanup_ctx for the main app: beat once a second while it serves."""

        async def beat() -> None:
            while True:
                self.beat()
                self.run_checks()
                await asyncio.sleep(1)

        task = asyncio.create_task(beat())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def probe_routes(app: web.Application, health: Health) -> None:
    # e.g. one backend down: still ready, the others serve (``detail`` says which)
    add_probe_routes(app, alive=health.alive, ready=health.ready, detail=lambda: health.detail)


def _serve_probes(health: Health, host: str, port: int, parent: int) -> None:
    """The probe process: serve until the parent is gone."""

    async def main() -> None:
        app = web.Application()
        probe_routes(app, health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        while os.getppid() == parent:
            await asyncio.sleep(1)
        await runner.cleanup()

    asyncio.run(main())


class ProbeServer:
    """The probe endpoints on ``host:port`` (plain HTTP), served by a child process."""

    def __init__(self, health: Health, host: str, port: int) -> None:
        self.health, self.host, self.port = health, host, port
        self._proc = _MP.Process(
            target=_serve_probes, args=(health, host, port, os.getpid()), name="promhpa-probes", daemon=True
        )

    def start(self, timeout: float = 30.0) -> None:
        """Start the child and wait until it accepts connections (or say why it did not)."""
        self._proc.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._proc.is_alive():
                raise OSError(f"the probe server on {self.host}:{self.port} exited (is the port in use?)")
            try:
                target = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
                with socket.create_connection((target, self.port), 1):
                    return
            except OSError:
                time.sleep(0.05)
        raise OSError(f"the probe server on {self.host}:{self.port} did not start within {timeout:g}s")

    def stop(self) -> None:
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(10)


def inflight_limiter(
    limit: int, on_reject: Callable[[], None] | None = None
) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Middleware: at most ``limit`` API requests handled at once; the rest get 429 now."""
    inflight = 0

    @web.middleware
    async def limit_inflight(request: web.Request, handler: Handler) -> web.StreamResponse:
        nonlocal inflight
        if request.path in PROBE_PATHS or limit <= 0:
            return await handler(request)
        if inflight >= limit:
            if on_reject is not None:
                on_reject()
            body = status(
                429,
                "TooManyRequests",
                f"too many requests in flight ({limit}, --max-requests-inflight); try again later",
                {"retryAfterSeconds": 1},
            )
            return web.json_response(body, status=429, headers={"Retry-After": "1"})
        inflight += 1
        try:
            return await handler(request)
        finally:
            inflight -= 1

    return limit_inflight
