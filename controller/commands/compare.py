"""``compare``: a shadow-mode controller's decisions beside the owner's, per HPA."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from controller.commands.why import ControllerAccess, add_kind_flag
from controller.endpoint_client import EndpointError
from controller.engine.reader import SnapshotError
from shared import exitcodes
from shared.cliflags import add_kubectl_flags
from shared.kube.errors import KubeError

from .common import (
    OUTPUTS,
    DecisionFlags,
    _controller_source,
    _endpoint_flags,
    _live_flags,
    _output,
    controller_get,
)


def add_parser(sub: Any) -> None:
    """The ``compare`` command's flags."""
    c = sub.add_parser(
        "compare",
        help="a dry-run controller's decisions beside the owner's, per HPA (exit 1 if any differ)",
        description="Read a shadow-mode (--dry-run) controller's /debug/shadow and show, per HPA, its "
        "decision beside the owner's; exit 1 when any differ. With --kind phpa: one object of promhpa's own "
        "kind, decided with its spec.controller knobs beside the decision the built-in HPA controller "
        "would make for the same spec and reads (the kube-controller-manager flags given here).",
    )
    _controller_source(c, "its /debug/shadow is read (get on /debug/* as a non-resource URL)", required=True)
    add_kind_flag(c)
    _endpoint_flags(c)
    _live_flags(c)  # --kind phpa: the flags the built-in controller would decide with
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
    if args.kind == "phpa":
        return _compare_own_kind(args)
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
        _print_data(data, args.output)
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
    _print_table(rows)
    agree = sum(1 for i in items if not i.get("differences"))
    print(
        f"{len(items)} HPAs compared: {agree} agree, {len(differing)} differ, "
        f"{len(items) - agree - len(differing)} settling; "
        f"{data.get('differencesTotal', 0)} differences since the controller started"
    )
    return 1 if differing else 0


def _compare_own_kind(args: argparse.Namespace) -> int:
    """An object of promhpa's kind has no other owner to compare with: promhpa acts on it. What
    a user moving an HPA over wants to know is what its knobs change, so it is decided from
    one live snapshot (as ``snapshot --kind phpa`` takes it, the leader's memory included)
    twice: as promhpa decides it, and as the built-in controller would decide the same spec
    without ``spec.controller``."""
    import asyncio

    from controller.commands.snapshot import _live_history, _observe
    from shared.kube.client import Kube, load

    namespace, _, name = (args.hpa or "").partition("/")
    if not name:
        print("error: --kind phpa compares one object: give it as NAMESPACE/NAME", file=sys.stderr)
        return 2
    flags = DecisionFlags.of(args)
    try:
        history = _live_history(ControllerAccess.of(args), namespace, name, "phpa")
        doc = asyncio.run(_observe(Kube(load(args.kubeconfig)), flags, namespace, name, history, "phpa"))
    except (EndpointError, KubeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    try:
        item = own_kind_comparison(doc, flags)
    except SnapshotError as e:
        print(f"error: {namespace}/{name}: {e}", file=sys.stderr)
        return 2
    differs = bool(item["differences"])
    if args.output in ("json", "yaml"):
        _print_data({"items": [item]}, args.output)
        return 1 if differs else 0
    rows = [
        ["HPA", "PROMHPA", "BUILT-IN", "KNOBS", "DIFFERENCES"],
        [
            f"{namespace}/{name}",
            str(item["desiredReplicas"]),
            str(item["builtInDesiredReplicas"]),
            ",".join(item["knobs"]) or "-",
            "; ".join(item["differences"]) or "-",
        ],
    ]
    _print_table(rows)
    return 1 if differs else 0


def _print_data(data: dict[str, Any], output: str) -> None:
    if output == "json":
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False), end="")


def _print_table(rows: list[list[str]]) -> None:
    """Columns padded to their widest cell; the last one (the differences) runs on."""
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1])


def own_kind_comparison(doc: dict[str, Any], flags: DecisionFlags) -> dict[str, Any]:
    """One snapshot of promhpa's kind decided as promhpa decides it and as its built-in twin:
    the same spec, reads and memory as an ``autoscaling/v2`` HPA without ``spec.controller``,
    under the cluster's own gates (the kind honours ``minReplicas: 0`` whatever they say)."""
    import copy

    from controller.engine import decide, parse_snapshot
    from controller.live.shadow_diff import differences

    twin = copy.deepcopy(doc)
    hpa = twin["hpa"]
    hpa["apiVersion"] = "autoscaling/v2"
    knobs = sorted((hpa.get("spec") or {}).pop("controller", None) or {})
    controller = twin.setdefault("controller", {})
    gates = controller.setdefault("featureGates", {})
    if "HPAScaleToZero" in gates:
        version = controller.get("kubernetesVersion")
        gates["HPAScaleToZero"] = flags.settings(
            str(version) if version else None
        ).feature_gates.hpa_scale_to_zero
    ours, built_in = decide(parse_snapshot(doc)), decide(parse_snapshot(twin))
    return {
        "namespace": hpa.get("metadata", {}).get("namespace"),
        "name": hpa.get("metadata", {}).get("name"),
        "knobs": knobs,
        "desiredReplicas": ours.desired_replicas,
        "builtInDesiredReplicas": built_in.desired_replicas,
        "differences": differences(ours.status, built_in.status, "built-in"),
        "status": ours.status,
        "builtInStatus": built_in.status,
    }
