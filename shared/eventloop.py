"""The event loop the adapter and the controller serve on: uvloop where it is installed (a
dependency on Linux and macOS), else asyncio's own.

Chosen by measurement: on the adapter's external-metrics path (benchmarks/side_by_side.py,
three rounds each, the same run) uvloop took the CPU per request from 0.23 to 0.21 ms and
the rate from 3,474-3,524 to 3,640-4,298 requests/s; the controller's reconcile loop spent
about 4 % less CPU. Once the adapter's Prometheus calls stopped going through aiohttp's
client, the loop itself (selectors, callbacks, TLS records) was a third of a request.

``PROMHPA_EVENT_LOOP=asyncio`` picks asyncio's loop instead: for asyncio's debug mode, or to
rule the loop out when chasing a problem.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
CHOICES = ("uvloop", "asyncio")


class EventLoopError(ValueError):
    """PROMHPA_EVENT_LOOP names no loop we know."""


def chosen() -> str:
    """The loop ``run`` will use: the environment's choice, uvloop only if importable."""
    choice = os.environ.get("PROMHPA_EVENT_LOOP", "").strip().lower() or "uvloop"
    if choice not in CHOICES:
        raise EventLoopError(
            f"PROMHPA_EVENT_LOOP={choice!r} is not an event loop: use one of {', '.join(CHOICES)}"
        )
    if choice == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"  # e.g. Windows, where uvloop is not installed
    return choice


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen loop, with its unexpected errors logged once."""
    try:
        loop = chosen()
    except EventLoopError:
        main.close()  # never awaited: no "coroutine was never awaited" warning on top
        raise
    if loop == "uvloop":
        import uvloop

        return uvloop.run(_logging_errors(main))
    return asyncio.run(_logging_errors(main))


async def _logging_errors(main: Coroutine[Any, Any, T]) -> T:
    asyncio.get_running_loop().set_exception_handler(_unexpected)
    return await main


def _unexpected(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An error no one awaited (a background task that failed, a callback that raised):
    one structured error with its traceback and the task's name, instead of asyncio's
    "Task exception was never retrieved" printed in pieces."""
    import structlog

    task = context.get("task") or context.get("future")
    name = task.get_name() if isinstance(task, asyncio.Task) else None
    structlog.get_logger("promhpa").error(
        "unexpected error in a background task" if name else str(context.get("message", "unexpected error")),
        task=name,
        exc_info=context.get("exception"),
    )
