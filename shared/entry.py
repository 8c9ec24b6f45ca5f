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
import signal
import sys
from typing import Any, NoReturn


def _exit(*_: Any) -> NoReturn:
    raise SystemExit(0)


def run(target: str) -> NoReturn:
    """``module:function``, its result the exit code, after the early SIGTERM handler."""
    signal.signal(signal.SIGTERM, _exit)
    module, _, function = target.partition(":")
    sys.exit(getattr(importlib.import_module(module), function)())


def adapter() -> NoReturn:
    run("adapter.__main__:main")


def controller() -> NoReturn:
    run("controller.cli:main")
