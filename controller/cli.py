"""``python -m controller`` / ``promhpa-controller``: the controller's command line.

``decide`` runs the decision engine offline over snapshots; ``run`` (the live controller)
and ``snapshot`` arrive with the live reconciler.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import structlog
import yaml

from controller import kcm_flags
from controller.endpoint_client import EndpointError
from controller.engine import Decision, SnapshotError, decide, parse_snapshot
from controller.engine.explain import explain
from controller.engine.gates import GateError, parse_gates, resolve
from controller.engine.model import History, Settings
from controller.engine.parse import review_snapshot
from controller.engine.versions import Release, VersionError, parse_minor, release
from controller.snapshot_files import SnapshotFileError, load_documents
from shared import exitcodes
from shared.cliflags import (
    add_kubectl_flags,
    add_log_flags,
    add_runtime_flags,
    add_tls_flags,
    apply_kubectl_flags,
    duration,
    http_url,
    non_negative,
    port_or_zero,
)
from shared.kube.errors import KubeError
from shared.version import promhpa_version

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


def _paths(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _gates(text: str) -> dict[str, bool]:
    """The decision gates a --feature-gates value sets; whether the release has them and
    allows the value is checked once the release is known (``_settings``)."""
    try:
        wanted, others = parse_gates(text)
    except GateError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if others:
        print(
            f"note: --feature-gates: {', '.join(others)} do not change HPA decisions; ignored",
            file=sys.stderr,
        )
    return wanted


def _emulated(text: str) -> str:
    try:
        parse_minor(text)
    except VersionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _settings(a: argparse.Namespace, server_version: str | None = None) -> Settings:
    """The flags' settings, deciding as --emulated-version, else as the API server's
    release (``server_version``), else as the newest supported one. Raises GateError
    for a --feature-gates value that release's kube-controller-manager would refuse."""
    text = a.emulated_version or server_version
    rel, warning = release(text) if text else (Release(), None)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    return Settings(
        tolerance=a.horizontal_pod_autoscaler_tolerance,
        cpu_initialization_period=a.horizontal_pod_autoscaler_cpu_initialization_period,
        initial_readiness_delay=a.horizontal_pod_autoscaler_initial_readiness_delay,
        downscale_stabilization_window=a.horizontal_pod_autoscaler_downscale_stabilization,
        feature_gates=resolve(rel, a.feature_gates),
        release=rel,
    )


def _live_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then ~/.kube/config)")
    p.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        type=duration,
        default=timedelta(seconds=15),
        help="how often each HPA is reconciled (default 15s)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=0.1,
        help="the ratio band around 1.0 in which no scaling happens (default 0.1)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=duration,
        default=timedelta(minutes=5),
        help="how far back the largest recommendation holds a scale-down (default 5m)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        type=duration,
        default=timedelta(minutes=5),
        help="after a pod starts, how long its CPU samples may be skipped (default 5m)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        type=duration,
        default=timedelta(seconds=30),
        help="after a pod starts, how long a readiness change counts as initial (default 30s)",
    )
    p.add_argument(
        "--feature-gates",
        type=_gates,
        default={},
        metavar="NAME=BOOL,...",
        help="kube-controller-manager's gates that change HPA decisions, at the defaults of the "
        "release decided as (docs/versions.md): HPAConfigurableTolerance, HPAScaleToZero, "
        "HPAGeneration, HPAOptimizedSelectorStore, PodLevelResources; other gates are accepted and "
        "ignored",
    )
    p.add_argument(
        "--emulated-version",
        type=_emulated,
        metavar="1.MINOR",
        help="decide as this Kubernetes release's controller, 1.33 to 1.37 (kcm's spelling kube=1.35 "
        "too); default: the API server's release (outside the range: the nearest, with a warning)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from controller.live.runner import Options, run
    from shared import eventloop
    from shared.logging import configure

    warnings, errors = kcm_flags.apply(args, getattr(args, "argv", []))
    if errors:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        return 2
    configure(json=args.log_format == "json", level=args.log_level)
    for warning in warnings:
        structlog.get_logger("controller").warning("flag_ignored", detail=warning)
    if args.emulated_version:
        # the release is known: a gate it refuses is a usage error before connecting, and the
        # settings (and any out-of-range warning) are made once
        known = _settings(args)
    opts = Options(
        kubeconfig=args.kubeconfig,
        settings=(lambda _: known) if args.emulated_version else (lambda v: _settings(args, v)),
        sync_period=args.horizontal_pod_autoscaler_sync_period.total_seconds(),
        workers=args.concurrent_horizontal_pod_autoscaler_syncs,
        hpa_selector=args.hpa_selector,
        dry_run=args.dry_run,
        leader_elect=args.leader_elect,
        lease_namespace=args.leader_elect_resource_namespace,
        lease_name=args.leader_elect_resource_name,
        bind_address=args.bind_address,
        port=args.port,
        lease_duration=max(1, round(args.leader_elect_lease_duration.total_seconds())),
        renew_deadline=args.leader_elect_renew_deadline.total_seconds(),
        retry_period=args.leader_elect_retry_period.total_seconds(),
        metrics_timeout=args.metrics_timeout.total_seconds(),
        kube_api_qps=args.kube_api_qps,
        kube_api_burst=args.kube_api_burst,
        shutdown_grace=args.shutdown_grace_period.total_seconds(),
        informer_stale_after=args.informer_stale_after.total_seconds(),
        informer_watch_idle_timeout=args.informer_watch_idle_timeout.total_seconds(),
        insecure_skip_auth=args.insecure_skip_auth,
        always_allow_paths=args.authorization_always_allow_paths,
        tls_cert_file=args.tls_cert_file,
        tls_key_file=args.tls_private_key_file,
        cert_dir=args.cert_dir,
        cert_dns_names=args.cert_dns_name,
        second_writer_quiet=args.second_writer_quiet_period.total_seconds(),
        why_history=args.why_history,
    )
    if opts.insecure_skip_auth and not ipaddress.ip_address(opts.bind_address).is_loopback:
        print("error: --insecure-skip-auth only binds to loopback", file=sys.stderr)
        return 2
    if opts.kube_api_qps > 0 and opts.kube_api_burst < 1:
        print("error: --kube-api-burst must be at least 1 when --kube-api-qps is above 0", file=sys.stderr)
        return 2
    if opts.leader_elect and not opts.lease_duration > opts.renew_deadline > opts.retry_period > 0:
        print(
            "error: leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline "
            "> --leader-elect-retry-period > 0 (the gap between the first two absorbs clock skew)",
            file=sys.stderr,
        )
        return 2
    try:
        return eventloop.run(run(opts))
    except eventloop.EventLoopError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KubeError as e:  # startup: no usable credentials or API server, said in one line
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    except OSError as e:  # e.g. the metrics port is in use
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    """Write the live snapshot of one HPA, to decide or explain offline.

    It goes through the live reconcile's own path (``controller.live.observe``): informers
    for the HPA's namespace, listed and indexed as the controller's are, then the same
    scale, pod and metrics reads.
    """
    import asyncio

    import yaml

    from controller.live.hpa_fields import hpa_essentials
    from controller.live.observe import Observer
    from controller.live.pod_fields import pod_essentials
    from shared.kube.client import Kube, load
    from shared.kube.discovery import RESTMapper
    from shared.kube.errors import KubeError
    from shared.kube.informer import Informer
    from shared.kube.resources import HPA, POD

    namespace, _, name = args.hpa.partition("/")
    if not name:
        print("error: give the HPA as NAMESPACE/NAME", file=sys.stderr)
        return 2
    try:
        kube = Kube(load(args.kubeconfig))
        server = kube.get_sync("/version").get("gitVersion")  # the cluster answers, or one line now
        pods = Informer(kube, POD.path(namespace), transform=pod_essentials).start()
        hpas = Informer(kube, HPA.path(namespace), transform=hpa_essentials).start()
        try:
            for informer in (pods, hpas):
                if not informer.synced.wait(30):
                    raise KubeError(0, f"could not list {informer.path} within 30s: {informer.error}")
            observer = Observer(kube, RESTMapper(kube), hpas, pods, _settings(args, server))
            wanted = args.controller_url or args.from_leader
            history = _live_history(args, namespace, name) if wanted else None
            snap = asyncio.run(observer.observe(namespace, name, history)).snapshot
        finally:
            pods.stop()
            hpas.stop()
    except (KubeError, EndpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return exitcodes.for_error(e)
    if args.output == "json":
        print(json.dumps(snap, indent=2))
    else:
        print(yaml.safe_dump(snap, sort_keys=False), end="")
    return 0


def _live_history(args: argparse.Namespace, namespace: str, name: str) -> History | None:
    """The running controller's memory of the HPA (its /debug/history endpoint)."""
    from controller.engine.parse import parse_history_wire

    try:
        return parse_history_wire(controller_get(args, f"/debug/history/{namespace}/{name}"))
    except EndpointError as e:
        if e.status == 404:
            where = args.controller_url or "the leader"
            print(f"note: {where} has not reconciled {namespace}/{name}: no history", file=sys.stderr)
            return None
        raise


def _controller_source(p: argparse.ArgumentParser, what: str, *, required: bool) -> None:
    """Where a command reads the running controller: its leader, found through the Lease and
    reached through the API server (as ``why`` does), or a URL the user already reaches."""
    from controller.why_command import add_leader_flags

    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument(
        "--from-leader",
        action="store_true",
        help=f"find the leader through its Lease and reach it through the API server's port-forward: {what}",
    )
    g.add_argument(
        "--controller-url",
        type=http_url,
        help="a controller's endpoints you reach yourself (e.g. https://127.0.0.1:10258 after kubectl "
        "port-forward), read with the kubeconfig's credentials",
    )
    add_leader_flags(p)


def controller_get(args: argparse.Namespace, path: str) -> Any:
    """GET ``path`` of the running controller's endpoints, with the kubeconfig's credentials."""
    from controller.why_command import ask_controller

    return ask_controller(args, path)[0]


def _endpoint_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--controller-ca-file",
        help="CA that signed the controller's serving certificate (the chart's: the controller TLS "
        "Secret's ca.crt)",
    )
    p.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the controller's certificate (its self-signed one, on a trusted network)",
    )


def build_parser(prog: str = "promhpa-controller") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"promhpa-controller {promhpa_version()}")
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
    d.set_defaults(func=cmd_decide)
    r = sub.add_parser(
        "run",
        help="reconcile the cluster's HPAs (the live controller)",
        description="Reconcile the cluster's autoscaling/v2 HPAs as the HPA controller of the cluster's "
        "own Kubernetes release does (docs/controller.md); with --dry-run, decide beside the HPAs' owner "
        "and compare.",
    )
    _live_flags(r)
    r.add_argument(
        "--concurrent-horizontal-pod-autoscaler-syncs",
        type=int,
        default=5,
        help="HPAs reconciled at once (default 5)",
    )
    r.add_argument("--hpa-selector", default="", help="label selector: only manage HPAs that match")
    r.add_argument(
        "--dry-run",
        action="store_true",
        help="decide and publish (events, metrics, logs) without writing scale or status",
    )
    r.add_argument(
        "--leader-elect",
        nargs="?",
        const=True,
        default=False,
        type=kcm_flags.go_bool,
        metavar="BOOL",
        help="run only while holding the Lease (kcm's --leader-elect=true|false too)",
    )
    kcm_flags.add_flags(r)
    r.add_argument(
        "--leader-elect-resource-namespace",
        default="kube-system",
        help="namespace of the leader-election Lease (default kube-system)",
    )
    r.add_argument(
        "--leader-elect-resource-name",
        default="promhpa-controller",
        help="name of the leader-election Lease (default promhpa-controller)",
    )
    r.add_argument(
        "--leader-elect-lease-duration",
        type=duration,
        default=timedelta(seconds=15),
        help="how long a standby waits after the leader's last renewal before taking over (default 15s)",
    )
    r.add_argument(
        "--leader-elect-renew-deadline",
        type=duration,
        default=timedelta(seconds=10),
        help="the leader stops writing once its last successful renewal is this old (default 10s)",
    )
    r.add_argument(
        "--leader-elect-retry-period",
        type=duration,
        default=timedelta(seconds=2),
        help="how often the Lease is renewed or tried (default 2s)",
    )
    r.add_argument(
        "--metrics-timeout",
        type=duration,
        default=timedelta(seconds=15),
        help="timeout of each read from the metrics APIs (default 15s, above the adapter's 10s "
        "Prometheus deadline): an overloaded adapter slows a reconcile, never stalls it",
    )
    r.add_argument(
        "--second-writer-quiet-period",
        type=duration,
        default=timedelta(minutes=5),
        help="when another controller writes an HPA's scale or status, promhpa stops writing that "
        "HPA and resumes only after the other has been quiet this long while the HPA needed a "
        "write (default 5m; 0 turns the guard off; a dry run never writes anyway)",
    )
    r.add_argument(
        "--why-history",
        type=non_negative,
        default=5,
        metavar="N",
        help="distinct decisions kept per HPA for `why` (default 5; each costs about 1 KB; 0 keeps none)",
    )
    r.add_argument(
        "--kube-api-qps",
        type=float,
        default=20.0,
        help="requests a second each client sends to the API server after a burst, as in "
        "kube-controller-manager: the informers', and the HPA, scale and each metrics API's "
        "client (default 20; 0: no limit; the Lease's is never limited)",
    )
    r.add_argument(
        "--kube-api-burst",
        type=int,
        default=30,
        help="requests a client may send at once before --kube-api-qps paces it (default 30)",
    )
    add_runtime_flags(r, "the reconciles under way may take to finish before they are cancelled")
    r.add_argument(
        "--bind-address",
        default="0.0.0.0",
        help="address of the HTTPS endpoints: /metrics, /debug/*, /healthz, /readyz (default 0.0.0.0)",
    )
    r.add_argument(
        "--secure-port",
        "--port",
        dest="port",
        type=port_or_zero,
        default=10258,
        help="HTTPS port of the endpoints (default 10258); --port is the same flag's older name",
    )
    r.add_argument(
        "--authorization-always-allow-paths",
        type=_paths,
        default=("/healthz", "/readyz", "/livez"),
        metavar="PATH,...",
        help="paths served without authentication or authorization (default /healthz,/readyz,/livez); "
        "every other path needs a token or client certificate the API server vouches for and "
        "permission to get it as a non-resource URL",
    )
    r.add_argument(
        "--insecure-skip-auth",
        action="store_true",
        help="serve the endpoints without authentication or authorization (local use; loopback only)",
    )
    add_tls_flags(r, "controller.local.config/certificates", "promhpa-controller.promhpa.svc")
    add_log_flags(r)
    r.set_defaults(func=cmd_run)
    s = sub.add_parser(
        "snapshot",
        help="write the live snapshot of one HPA (YAML) to decide offline",
        description="Write everything the controller would see for one reconcile of NAMESPACE/NAME, as a "
        "snapshot (docs/snapshot.md) that `decide` decides offline.",
    )
    s.add_argument("hpa", metavar="NAMESPACE/NAME")
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
    from controller.replay.command import add_parser as add_replay
    from controller.why_command import add_parser as add_why

    add_why(sub, _endpoint_flags)

    add_replay(sub, _live_flags, _settings)
    return p


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
        data = controller_get(args, path)
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


# one convention for every command's output: -o text|json|yaml ("table" reads as text)
OUTPUTS = ("text", "json", "yaml")


def _output(text: str) -> str:
    return "text" if text == "table" else text


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
    problem = apply_kubectl_flags(args)
    if problem is not None:
        parser.error(problem)
    try:
        return int(args.func(args))
    except GateError as e:  # a gate the release decided as does not have, or locks
        print(f"error: --feature-gates: {e}", file=sys.stderr)
        return 2


def kubectl_plugin() -> int:
    """``kubectl promhpa ...``: kubectl runs ``kubectl-promhpa`` from PATH with the rest of
    the command line; the same commands, named as the user typed them."""
    return main(prog="kubectl promhpa")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
