"""``decide``: the decision engine offline, one decision per snapshot, as the live controller would decide."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from controller.engine import Decision, SnapshotError, decide, parse_snapshot
from controller.engine.explain import explain
from controller.engine.model import History
from controller.engine.parse import review_snapshot
from controller.snapshot_files import SnapshotFileError, load_documents
from shared.cliflags import add_input_size_flag

from .common import EXIT_MALFORMED, OUTPUTS, _output


def add_parser(sub: Any) -> None:
    """The ``decide`` command's flags."""
    d = sub.add_parser(
        "decide",
        help="decide HPA snapshots offline (one JSON line per snapshot)",
        description="Run one reconcile per snapshot, offline, exactly as the live controller would.",
    )
    d.add_argument(
        "snapshots", nargs="+", metavar="SNAPSHOT", help="YAML or JSON snapshot files, - for stdin"
    )
    d.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        type=_output,
        default="json",
        help="json (one line per snapshot, the default), text (each decision explained) or yaml",
    )
    d.add_argument(
        "--explain",
        dest="output",
        action="store_const",
        const="text",
        help="the same as -o text",
    )
    d.add_argument(
        "--chain",
        action="store_true",
        help="feed each decision's history into the next snapshot of the same HPA that has none",
    )
    add_input_size_flag(d)
    d.set_defaults(func=cmd_decide)


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
            _report(path, str(e), args.output)
            continue
        for i, data in enumerate(docs):
            name = path if len(docs) == 1 else f"{path} (document {i + 1})"
            unknown, warnings = review_snapshot(data)
            for warning in warnings:
                print(f"warning: {name}: {warning}", file=sys.stderr)
            if unknown:
                failed = True
                _report(name, "; ".join(unknown), args.output)
                continue
            try:
                snap = parse_snapshot(data)
            except SnapshotError as e:
                failed = True
                _report(name, str(e), args.output)
                continue
            key = _hpa_key(data)
            if args.chain and key in last and not (isinstance(data, dict) and "history" in data):
                from dataclasses import replace

                snap = replace(snap, history=last[key])
            decision: Decision = decide(snap)
            if key is not None:
                last[key] = decision.history
            if args.output == "text":
                print(explain(snap, decision))
                print()
            elif args.output == "yaml":
                print("---")
                print(yaml.safe_dump(decision.to_wire(), sort_keys=False), end="")
            else:
                print(json.dumps(decision.to_wire(), separators=(",", ":")))
    return EXIT_MALFORMED if failed else 0


def _report(name: str, message: str, output: str) -> None:
    print(f"error: {name}: {message}", file=sys.stderr)
    if output == "json":  # keep one stdout line per snapshot, so outputs stay aligned with inputs
        print(json.dumps({"error": f"{name}: {message}"}))
