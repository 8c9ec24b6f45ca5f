"""``compare``: a shadow-mode controller's decisions beside the owner's, per HPA."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from controller.commands.why import ControllerAccess
from controller.endpoint_client import EndpointError
from shared import exitcodes
from shared.cliflags import add_kubectl_flags
from shared.kube.errors import KubeError

from .common import OUTPUTS, _controller_source, _endpoint_flags, _output, controller_get


def add_parser(sub: Any) -> None:
    """The ``compare`` command's flags."""
    c = sub.add_parser(
        "compare",
        help="a dry-run controller's decisions beside the owner's, per HPA (exit 1 if any differ)",
        description="Read a shadow-mode (--dry-run) controller's /debug/shadow and show, per HPA, its "
        "decision beside the owner's; exit 1 when any differ.",
    )
    _controller_source(c, "its /debug/shadow is read (get on /debug/* as a non-resource URL)", required=True)
    c.add_argument(
        "--kubeconfig", help="whose credentials to send (default: in-cluster, then ~/.kube/config)"
    )
    _endpoint_flags(c)
    add_kubectl_flags(c)
    c.add_argument("hpa", nargs="?", metavar="NAMESPACE/NAME", help="one HPA (default: all)")
    c.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        type=_output,
        default="text",
        help="text (a table, the default), json or yaml",
    )
    c.add_argument("--all", action="store_true", help="list agreeing HPAs too (default: differences only)")
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """Where the dry-run controller's decision and the HPA owner's differ, and since when.

    Reads the controller's /debug/shadow. A difference seen at fewer than three reconciles
    running is shown as "settling" (the two controllers sync at different moments while the
    metrics move); one still there at the third is a difference and makes the exit code 1.
    """
    path = "/debug/shadow"
    if args.hpa:
        namespace, _, name = args.hpa.partition("/")
        if not name:
            print("error: give the HPA as NAMESPACE/NAME", file=sys.stderr)
            return 2
        path += f"/{namespace}/{name}"
    try:
        data = controller_get(ControllerAccess.of(args), path)
    except (EndpointError, KubeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    items = data.get("items", [])
    differing = [i for i in items if i.get("differs")]
    if args.output in ("json", "yaml"):
        print(
            json.dumps(data, indent=2) if args.output == "json" else yaml.safe_dump(data, sort_keys=False),
            end="\n" if args.output == "json" else "",
        )
        return 1 if differing else 0
    rows = [["HPA", "PROMHPA", "OWNER", "STATE", "SINCE", "DIFFERENCES"]]
    for i in items:
        state = "differs" if i.get("differs") else "settling" if i.get("differences") else "agrees"
        if not i.get("ownerStatus", {}).get("conditions"):
            state = "no owner status"
        if state == "agrees" and not args.all:
            continue
        rows.append(
            [
                f"{i['namespace']}/{i['name']}",
                str(i.get("desiredReplicas")),
                str(i.get("ownerDesiredReplicas")),
                state,
                i.get("differingSince") or "-",
                "; ".join(i.get("differences") or []) or "-",
            ]
        )
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1])
    agree = sum(1 for i in items if not i.get("differences"))
    print(
        f"{len(items)} HPAs compared: {agree} agree, {len(differing)} differ, "
        f"{len(items) - agree - len(differing)} settling; "
        f"{data.get('differencesTotal', 0)} differences since the controller started"
    )
    return 1 if differing else 0
