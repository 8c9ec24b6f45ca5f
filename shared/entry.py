"""The programs' entry points: SIGTERM handled before anything heavy is imported.

A container's process 1 ignores a signal it installed no handler for, and importing the
libraries takes a second or more on a busy node: a SIGTERM in that second was lost, and the
kubelet waited out the grace period for its SIGKILL. So each program's first act is a
SIGTERM handler that exits at once with 0 -- nothing has started that needs draining --
until its event loop installs the real ones (``shared.lifecycle``). ``python -m adapter``
and ``python -m controller`` come here first too.

Nothing here imports the adapter or the controller until the handler is in place; the
module names are strings so the import contracts still hold.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any, NoReturn


def _exit(*_: Any) -> NoReturn:
    raise SystemExit(0)


def run(target: str) -> NoReturn:
    """``module:function``, its result the exit code, after the early SIGTERM handler. A
    reader that closed the pipe (``decide ... | head``) ends the program quietly, as a
    SIGPIPE ends a C program: exit 141, no traceback."""
    signal.signal(signal.SIGTERM, _exit)
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


def adapter() -> NoReturn:
    run("adapter.__main__:main")


def controller() -> NoReturn:
    run("controller.cli:main")


def kubectl_plugin() -> NoReturn:
    run("controller.cli:kubectl_plugin")
