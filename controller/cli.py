"""``python -m controller`` / ``promhpa-controller``: the controller's command line.

``decide`` runs the decision engine offline over snapshots; ``run`` (the live controller)
and ``snapshot`` arrive with the live reconciler.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from controller.engine import Decision, SnapshotError, decide, parse_snapshot
from controller.engine.explain import explain
from controller.engine.model import History
from controller.snapshot_files import SnapshotFileError, load_documents

EXIT_MALFORMED = 2


def _hpa_key(data: object) -> tuple[str, str] | None:
    if isinstance(data, dict) and isinstance(data.get("hpa"), dict):
        meta = data["hpa"].get("metadata") or {}
        if isinstance(meta, dict):
            return (str(meta.get("namespace", "")), str(meta.get("name", "")))
    return None


def cmd_decide(args: argparse.Namespace) -> int:
    """Decide each snapshot; one JSON line (or one explanation) per snapshot, in order."""
    failed = False
    last: dict[tuple[str, str], History] = {}
    for path in args.snapshots:
        try:
            docs = list(load_documents(path))
        except SnapshotFileError as e:
            failed = True
            _report(path, str(e), args.explain)
            continue
        for i, data in enumerate(docs):
            name = path if len(docs) == 1 else f"{path} (document {i + 1})"
            try:
                snap = parse_snapshot(data)
            except SnapshotError as e:
                failed = True
                _report(name, str(e), args.explain)
                continue
            key = _hpa_key(data)
            if args.chain and key in last and not (isinstance(data, dict) and "history" in data):
                from dataclasses import replace

                snap = replace(snap, history=last[key])
            decision: Decision = decide(snap)
            if key is not None:
                last[key] = decision.history
            if args.explain:
                print(explain(snap, decision))
                print()
            else:
                print(json.dumps(decision.to_wire(), separators=(",", ":")))
    return EXIT_MALFORMED if failed else 0


def _report(name: str, message: str, explaining: bool) -> None:
    print(f"error: {name}: {message}", file=sys.stderr)
    if not explaining:  # keep one stdout line per snapshot, so outputs stay aligned with inputs
        print(json.dumps({"error": f"{name}: {message}"}))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m controller", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "decide",
        help="decide HPA snapshots offline (one JSON line per snapshot)",
        description="Run one reconcile per snapshot, offline, exactly as the live controller would.",
    )
    d.add_argument(
        "snapshots", nargs="+", metavar="SNAPSHOT", help="YAML or JSON snapshot files, - for stdin"
    )
    d.add_argument(
        "--explain",
        action="store_true",
        help="print a human-readable account of each decision instead of JSON",
    )
    d.add_argument(
        "--chain",
        action="store_true",
        help="feed each decision's history into the next snapshot of the same HPA that has none",
    )
    d.set_defaults(func=cmd_decide)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
