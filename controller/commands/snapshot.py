"""``snapshot``: everything the controller would see for one reconcile of an HPA, as a
snapshot ``decide`` decides offline."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import yaml

from controller.commands.why import ControllerAccess, add_kind_flag
from controller.endpoint_client import EndpointError
from controller.engine.model import History
from shared import exitcodes
from shared.cliflags import add_kubectl_flags

from .common import DecisionFlags, _controller_source, _endpoint_flags, _live_flags, controller_get

if TYPE_CHECKING:
    from shared.kube.client import Kube


def add_parser(sub: Any) -> None:
    """The ``snapshot`` command's flags."""
    s = sub.add_parser(
        "snapshot",
        help="write the live snapshot of one HPA (YAML) to decide offline",
        description="Write everything the controller would see for one reconcile of NAMESPACE/NAME, as a "
        "snapshot (docs/snapshot.md) that `decide` decides offline.",
    )
    s.add_argument("hpa", metavar="NAMESPACE/NAME")
    add_kind_flag(s)
    _controller_source(
        s,
        "the running leader's memory of the HPA (recommendations, scale events) goes into the snapshot, "
        "so decide reproduces the live decision exactly",
        required=False,
    )
    s.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="yaml (the default) or json"
    )
    _endpoint_flags(s)
    _live_flags(s)
    add_kubectl_flags(s)
    s.set_defaults(func=cmd_snapshot)


def cmd_snapshot(args: argparse.Namespace) -> int:
    """Write the live snapshot of one HPA, to decide or explain offline.

    It goes through the live reconcile's own path (``controller.live.observe``): informers
    for the HPA's namespace, listed and indexed as the controller's are, then the same
    scale, pod and metrics reads.
    """

    from shared.kube.client import Kube, load
    from shared.kube.errors import KubeError

    namespace, _, name = args.hpa.partition("/")
    if not name:
        print("error: give the HPA as NAMESPACE/NAME", file=sys.stderr)
        return 2
    try:
        wanted = args.controller_url or args.from_leader
        history = _live_history(ControllerAccess.of(args), namespace, name, args.kind) if wanted else None
        snap = asyncio.run(
            _observe(Kube(load(args.kubeconfig)), DecisionFlags.of(args), namespace, name, history, args.kind)
        )
    except (KubeError, EndpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    if args.output == "json":
        print(json.dumps(snap, indent=2))
    else:
        print(yaml.safe_dump(snap, sort_keys=False), end="")
    return 0


async def _observe(
    kube: Kube, flags: DecisionFlags, namespace: str, name: str, history: History | None, kind: str = "hpa"
) -> dict[str, Any]:
    """One observation of the HPA (``kind`` phpa: of promhpa's own kind), as the running
    controller's reconcile makes it."""
    from controller.engine.knobs import own_kind_settings
    from controller.live.caches import hpa_informer, pod_informer
    from controller.live.observe import Observer
    from shared.kube.discovery import RESTMapper
    from shared.kube.errors import KubeError
    from shared.kube.resources import HPA, OWN_HPA

    resource = OWN_HPA if kind == "phpa" else HPA
    hpas, pods = hpa_informer(kube, namespace, kind=resource), pod_informer(kube, namespace)
    try:
        server = (await kube.get("/version")).get("gitVersion")  # the cluster answers, or one line now
        pods.start()
        hpas.start()
        for informer in (pods, hpas):
            if not await informer.wait_synced(30):
                raise KubeError(0, f"could not list {informer.path} within 30s: {informer.error}")
        settings = flags.settings(server)
        if kind == "phpa":
            settings = own_kind_settings(settings)
        observer = Observer(kube, RESTMapper(kube), hpas, pods, settings, kind=resource)
        return (await observer.observe(namespace, name, history)).document()
    finally:
        for informer in (pods, hpas):
            await informer.aclose()
        await kube.aclose()


def _live_history(access: ControllerAccess, namespace: str, name: str, kind: str = "hpa") -> History | None:
    """The running controller's memory of the HPA (its /debug/history endpoint)."""
    from controller.engine.parse import parse_history_wire

    try:
        return parse_history_wire(controller_get(access, f"/debug/history/{namespace}/{name}?kind={kind}"))
    except EndpointError as e:
        if e.status == 404:
            where = access.controller_url or "the leader"
            print(f"note: {where} has not reconciled {namespace}/{name}: no history", file=sys.stderr)
            return None
        raise
