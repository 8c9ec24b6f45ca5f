"""``python -m controller`` / ``promhpa-controller`` (and ``kubectl promhpa``): the controller's
command line. It only dispatches: each command is a module of ``controller.commands`` with
its flags (``add_parser``) and what it does."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controller.commands import adopt, compare, decide, replay, run, snapshot, why
from controller.commands.common import _endpoint_flags, _live_flags
from controller.engine.gates import GateError
from shared.cliflags import Parser, apply_input_size, apply_kubectl_flags
from shared.inputfiles import InputError
from shared.version import promhpa_version


def build_parser(prog: str = "promhpa-controller") -> argparse.ArgumentParser:
    p = Parser(prog=prog, description="promhpa's HPA controller and its tools.")
    p.add_argument("--version", action="version", version=f"{prog} {promhpa_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    decide.add_parser(sub)
    run.add_parser(sub)
    snapshot.add_parser(sub)
    compare.add_parser(sub)
    why.add_parser(sub, _endpoint_flags)
    replay.add_parser(sub, _live_flags)
    adopt.add_parser(sub)
    return p


def _relative_times(argv: list[str]) -> list[str]:
    """``--from -7d`` as ``--from=-7d``: argparse would read ``-7d`` as an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--from", "--to") and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: Sequence[str] | None = None, prog: str = "promhpa-controller") -> int:
    argv = _relative_times(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    args.argv = argv
    apply_input_size(args)
    hpa, problem = apply_kubectl_flags(args)
    if problem is not None:
        parser.error(problem)
    if hpa is not None:
        args.hpa = hpa
    try:
        return int(args.func(args))
    except GateError as e:  # a gate the release decided as does not have, or locks
        print(f"error: --feature-gates: {e}", file=sys.stderr)
        return 2
    except InputError as e:  # a file a command was given (a CA bundle, ...) cannot be used
        print(f"error: {e}", file=sys.stderr)
        return 2


def kubectl_plugin() -> int:
    """``kubectl promhpa ...``: kubectl runs ``kubectl-promhpa`` from PATH with the rest of
    the command line; the same commands, named as the user typed them."""
    return main(prog="kubectl promhpa")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
