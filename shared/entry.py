"""The programs' entry points: SIGTERM handled before anything heavy is imported.

A container's process 1 ignores a signal it installed no handler for, and importing the
libraries takes a second or more on a busy node: a SIGTERM in that second was lost, and the
kubelet waited out the grace period for its SIGKILL. So each program's first act is a
SIGTERM handler. ``python -m adapter`` and ``python -m controller`` come here first too.

What it does depends on what runs:

* a server (the adapter serving, ``promhpa-controller run``) exits at once with 0 --
  nothing has started that needs draining -- until its event loop installs the real
  handlers, which drain and exit 0 (``shared.lifecycle``);
* a tool (``check-config``, ``decide``, ``replay``, ``why``, ...) killed by SIGTERM or
  SIGINT exits 143 or 130, as a shell reports a killed command: a killed check must never
  read as a pass, and Ctrl-C prints no traceback. It exits at once (``os._exit``, after
  flushing what was printed): a tool waiting on a hung Prometheus in a thread would
  otherwise wait for that thread.

Nothing here imports the adapter or the controller until the handler is in place; the
module names are strings so the import contracts still hold.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
from typing import Any, NoReturn


def _exit(*_: Any) -> NoReturn:
    raise SystemExit(0)


def _killed(signum: int, _frame: Any) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(128 + signum)


def run(target: str, server: bool = False) -> NoReturn:
    """``module:function``, its result the exit code, after the early signal handlers (the
    module docstring). A reader that closed the pipe (``decide ... | head``) ends the
    program quietly, as a SIGPIPE ends a C program: exit 141, no traceback."""
    if server:
        signal.signal(signal.SIGTERM, _exit)
    else:
        signal.signal(signal.SIGTERM, _killed)
        signal.signal(signal.SIGINT, _killed)
    module, _, function = target.partition(":")
    try:
        code = getattr(importlib.import_module(module), function)()
        sys.stdout.flush()
    except BrokenPipeError:
        # stdout's buffer cannot be flushed any more: point it at /dev/null so the
        # interpreter's own flush at exit does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(128 + signal.SIGPIPE)
    sys.exit(code)


def _first_word() -> str:
    return next((a for a in sys.argv[1:] if not a.startswith("-")), "")


def adapter() -> NoReturn:
    run("adapter.__main__:main", server=_first_word() != "check-config")


def controller() -> NoReturn:
    run("controller.cli:main", server=_first_word() == "run")


def kubectl_plugin() -> NoReturn:
    run("controller.cli:kubectl_plugin")
