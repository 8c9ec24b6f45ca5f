"""``adopt`` and ``release``: move an HPA between the built-in kind and promhpa's own.

``kubectl promhpa adopt NS/NAME`` turns a built-in autoscaling/v2 HPA into one of promhpa's
kind (autoscaling.promhpa.io/v2): the same spec, and the status it had, ``lastScaleTime``
included; ``release`` does the reverse (``spec.controller``, which the built-in kind has
not, is dropped and named). The order keeps exactly one autoscaler acting at every moment:

1. the new object is created while the old one still acts -- the new one selects the same
   target, so promhpa decides it ``AmbiguousSelector`` and writes no scale;
2. the old status is copied onto it, so ``kubectl get`` shows no gap;
3. the old object is deleted (preconditioned on its uid: never one recreated meanwhile);
   from then on the new one's owner acts, within its sync period, starting from the
   replica count the old one left (a first reconcile records it, so nothing scales down at
   once).

A failure before step 3 deletes what step 1 created, and the old object, untouched, goes on
acting; the message says which autoscaler acts.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from shared import exitcodes
from shared.cliflags import add_kubectl_flags
from shared.kube.resources import HPA, OWN_HPA, Resource

if TYPE_CHECKING:
    from shared.kube.client import Kube

# what a new object keeps of the old one's metadata (the rest is the server's)
_ANNOTATION_DROPPED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Move:
    verb: str  # adopt | release
    done: str  # adopted | released
    source: Resource
    target: Resource


ADOPT = Move("adopt", "adopted", HPA, OWN_HPA)
RELEASE = Move("release", "released", OWN_HPA, HPA)


def add_parser(sub: Any) -> None:
    for move, help_text in (
        (ADOPT, "turn a built-in HPA into one of promhpa's own kind, acted on by promhpa"),
        (RELEASE, "turn an HPA of promhpa's own kind back into a built-in one"),
    ):
        p = sub.add_parser(move.verb, help=help_text, description=__doc__.split("\n\n")[0])
        p.add_argument("hpa", metavar="NAMESPACE/NAME", nargs="?", help="the HPA (or NAME with -n)")
        p.add_argument("--all", action="store_true", help="every HPA of the source kind in -n NAMESPACE")
        p.add_argument("--dry-run", action="store_true", help="print the objects; write nothing")
        p.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then ~/.kube/config)")
        add_kubectl_flags(p)
        p.set_defaults(func=cmd_move, move=move)


def moved(obj: dict[str, Any], move: Move) -> tuple[dict[str, Any], list[str]]:
    """The new object for ``obj`` (without status), and the fields the target kind has not."""
    meta = obj.get("metadata") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _ANNOTATION_DROPPED}
    spec = dict(obj.get("spec") or {})
    dropped = []
    if move.target is HPA and "controller" in spec:
        dropped = [f"spec.controller.{k}" for k in spec.pop("controller") or {}] or ["spec.controller"]
    new_meta: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"]}
    if meta.get("labels"):
        new_meta["labels"] = meta["labels"]
    if annotations:
        new_meta["annotations"] = annotations
    doc = {
        "apiVersion": move.target.api_version,
        "kind": move.target.kind,
        "metadata": new_meta,
        "spec": spec,
    }
    return doc, dropped


def carried_status(status: dict[str, Any]) -> dict[str, Any]:
    """The old status for the new object: as it was, but observedGeneration (the old
    object's generation; the new one's owner sets its own on its first write)."""
    out = {k: v for k, v in status.items() if k != "observedGeneration"}
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "observedGeneration"} for c in status.get("conditions") or []
    ]
    if not out["conditions"]:
        out.pop("conditions")
    return out


class MoveError(Exception):
    """A move that stopped; the message says which autoscaler acts now."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


async def move_one(kube: Kube, move: Move, namespace: str, name: str, dry_run: bool) -> str:
    """One HPA moved (or, ``dry_run``, the objects printed); what happened, in a line."""
    from controller.live.writer import update_status
    from shared.kube.errors import KubeError, NotFound

    src = f"{move.source.kind}.{move.source.group} {namespace}/{name}"
    try:
        old = await kube.get(move.source.path(namespace, name))
    except NotFound:
        raise MoveError(f"there is no {src}", 1) from None
    try:
        await kube.get(move.target.path(namespace, name))
        raise MoveError(f"{move.target.kind}.{move.target.group} {namespace}/{name} exists already; {src} "
                        "is unchanged and still acts")  # fmt: skip
    except NotFound:
        pass
    new, dropped = moved(old, move)
    status = carried_status(dict(old.get("status") or {}))
    if dry_run:
        return yaml.safe_dump_all(
            [{**new, "status": status}, {"# deleted": f"{move.source.api_version} {namespace}/{name}"}],
            sort_keys=False,
        )
    ours = OWN_HPA.path(namespace, name)
    was_paused = bool(((old.get("spec") or {}).get("controller") or {}).get("paused"))
    if move is RELEASE and not was_paused:  # ours stops acting before the built-in one starts
        await _set_paused(kube, ours, True)
        await _until_paused(kube, ours)
    elif move is ADOPT:  # ours starts paused: the built-in one acts until it is deleted
        new["spec"] = {**new["spec"], "controller": {**(new["spec"].get("controller") or {}), "paused": True}}
    try:
        created = await kube.post(move.target.path(namespace), new)
    except KubeError as e:
        await _undo(kube, move, namespace, name, was_paused, created=False)
        raise MoveError(
            f"could not create the new object: {e.message}; {src} is unchanged and still acts"
        ) from e
    try:
        if status:
            # as the controller writes a status: its field manager (which its second-writer guard
            # does not count), a conflict -- promhpa reconciling the added object -- read again
            await update_status(kube, created, status, kind=move.target)
        uid = (old.get("metadata") or {}).get("uid")
        await kube.delete(move.source.path(namespace, name), {"preconditions": {"uid": uid}})
    except KubeError as e:
        undone = await _undo(kube, move, namespace, name, was_paused, created=True)
        raise MoveError(f"{e.message}; {undone}") from e
    if move is ADOPT:  # the built-in one is gone: ours acts from its next reconcile
        await _set_paused(kube, ours, None)
    await _event(kube, move, created, dropped)
    note = f" (dropped: {', '.join(dropped)})" if dropped else ""
    return f"{move.done} {namespace}/{name}: now {move.target.kind}.{move.target.group}{note}\n"


async def _undo(kube: Kube, move: Move, namespace: str, name: str, was_paused: bool, *, created: bool) -> str:
    """Back to the start after a failed step: the new object deleted, ours as it was. What
    acts now, in words."""
    from shared.kube.errors import KubeError

    ours = OWN_HPA.path(namespace, name)
    src = f"{move.source.kind}.{move.source.group} {namespace}/{name}"
    try:
        if created:
            await kube.delete(move.target.path(namespace, name))
        if move is RELEASE and not was_paused:
            await _set_paused(kube, ours, None)
    except KubeError as e:
        return (f"undoing it failed as well ({e.message}): check both kinds with kubectl get hpa,phpa -n "
                f"{namespace} {name}; an object of promhpa's kind that is paused or sees another HPA on its "
                f"target writes nothing")  # fmt: skip
    return f"the move was undone: {src} is unchanged and still acts"


async def _set_paused(kube: Kube, path: str, paused: bool | None) -> None:
    """spec.controller.paused of our object set (None: removed), retrying a conflict."""
    from shared.kube.errors import Conflict

    for attempt in range(3):
        obj = await kube.get(path)
        spec = dict(obj.get("spec") or {})
        knobs = {k: v for k, v in (spec.get("controller") or {}).items() if k != "paused"}
        if paused is not None:
            knobs["paused"] = paused
        if knobs:
            spec["controller"] = knobs
        else:
            spec.pop("controller", None)
        try:
            await kube.put(path, {**obj, "spec": spec})
            return
        except Conflict:
            if attempt == 2:
                raise


async def _until_paused(kube: Kube, path: str, timeout: float = 30.0) -> None:
    """Until promhpa has decided our object paused (its ScalingPaused condition), so the two
    never both act; a controller that is not running acts on nothing, so after ``timeout``
    the move goes on, saying so."""
    from controller.engine.knobs import PAUSED_REASON

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        obj = await kube.get(path)
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("reason") == PAUSED_REASON for c in conditions):
            return
        await asyncio.sleep(0.2)
    print(f"warning: promhpa did not confirm the pause within {timeout:g}s (is its controller running?); "
          "going on", file=sys.stderr)  # fmt: skip


async def _event(kube: Kube, move: Move, created: dict[str, Any], dropped: list[str]) -> None:
    """The move, on the new object's events (reported by promhpa)."""
    from controller.live.writer import EventRecorder
    from shared.kube.errors import KubeError

    meta = created.get("metadata") or {}
    who = "promhpa acts on it now" if move.target is OWN_HPA else "the built-in HPA controller acts on it now"
    message = f"{move.done} from {move.source.api_version} {move.source.kind} {meta.get('namespace')}/" \
              f"{meta.get('name')}: {who}"  # fmt: skip
    if dropped:
        message += f" (dropped: {', '.join(dropped)})"
    reason = "Adopted" if move is ADOPT else "Released"
    try:
        await EventRecorder(kube, component="promhpa", kind=move.target).record(
            created, "Normal", reason, message
        )
    except KubeError as e:
        print(f"warning: the move's event was not recorded: {e.message}", file=sys.stderr)


def cmd_move(args: argparse.Namespace) -> int:
    from shared.kube.client import Kube, load
    from shared.kube.errors import KubeError

    move: Move = args.move
    if args.all == bool(args.hpa):
        print("error: give NAMESPACE/NAME, or --all with -n NAMESPACE", file=sys.stderr)
        return 2
    if args.all and not args.namespace:
        print("error: --all moves every HPA of one namespace: give it with -n", file=sys.stderr)
        return 2
    if args.hpa and "/" not in args.hpa:
        print("error: give the HPA as NAMESPACE/NAME (or NAME with -n)", file=sys.stderr)
        return 2

    async def run() -> int:
        kube = Kube(load(args.kubeconfig))
        failed = 0
        try:
            if args.all:
                found = await kube.get(move.source.path(args.namespace))
                names = sorted(i["metadata"]["name"] for i in found.get("items") or [])
            else:
                names = [args.hpa.partition("/")[2]]
            namespace = args.namespace or args.hpa.partition("/")[0]
            for name in names:
                try:
                    sys.stdout.write(await move_one(kube, move, namespace, name, args.dry_run))
                except MoveError as e:
                    print(f"error: {namespace}/{name}: {e}", file=sys.stderr)
                    failed = e.status
        finally:
            await kube.aclose()
        return failed

    try:
        return asyncio.run(run())
    except KubeError as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
