"""``run``: the live controller (its lifecycle is ``controller.live.runner``'s)."""

from __future__ import annotations

import argparse
import ipaddress
import sys
from datetime import timedelta
from typing import Any

import structlog

from controller import kcm_flags
from shared import eventloop, exitcodes
from shared.cliflags import (
    add_log_flags,
    add_runtime_flags,
    add_tls_flags,
    duration,
    non_negative,
    port_or_zero,
)
from shared.kube.errors import KubeError

from .common import DecisionFlags, _live_flags, _paths


def add_parser(sub: Any) -> None:
    """The ``run`` command's flags: kube-controller-manager's that concern the HPA controller,
    and the endpoints'."""
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
        help="HPAs reconciled at once (default %(default)s)",
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
        help="namespace of the leader-election Lease (default %(default)s)",
    )
    r.add_argument(
        "--leader-elect-resource-name",
        default="promhpa-controller",
        help="name of the leader-election Lease (default %(default)s)",
    )
    r.add_argument(
        "--leader-elect-lease-duration",
        type=duration,
        default=timedelta(seconds=15),
        help="how long a standby waits after the leader's last renewal before taking over "
        "(default %(default)s)",
    )
    r.add_argument(
        "--leader-elect-renew-deadline",
        type=duration,
        default=timedelta(seconds=10),
        help="the leader stops writing once its last successful renewal is this old (default %(default)s)",
    )
    r.add_argument(
        "--leader-elect-retry-period",
        type=duration,
        default=timedelta(seconds=2),
        help="how often the Lease is renewed or tried (default %(default)s)",
    )
    r.add_argument(
        "--metrics-timeout",
        type=duration,
        default=timedelta(seconds=15),
        help="timeout of each read from the metrics APIs (default %(default)s, above the adapter's 10s "
        "Prometheus deadline): an overloaded adapter slows a reconcile, never stalls it",
    )
    r.add_argument(
        "--second-writer-quiet-period",
        type=duration,
        default=timedelta(minutes=5),
        help="when another controller writes an HPA's scale or status, promhpa stops writing that "
        "HPA and resumes only after the other has been quiet this long while the HPA needed a "
        "write (default %(default)s; 0 turns the guard off; a dry run never writes anyway)",
    )
    r.add_argument(
        "--own-kind",
        choices=("active", "off"),
        default="active",
        help="promhpa's own HPA kind (autoscaling.promhpa.io/v2, the chart's CRD; docs/own-kind.md): "
        "`active` (the default) reconciles its objects wherever the CRD is installed, also in a dry "
        "run -- the built-in controller never acts on them; `off` leaves them alone",
    )
    r.add_argument(
        "--admission-webhook-port",
        type=port_or_zero,
        default=0,
        help="serve the admission webhook of promhpa's own HPA kind (POST "
        "/validate/horizontalpodautoscalers: the API server's refusals, in its words) on this HTTPS "
        "port, which asks no client certificate (docs/own-kind.md); 0 (the default): not served",
    )
    r.add_argument(
        "--scale-reads",
        choices=("watch", "get"),
        default="watch",
        help="where each reconcile reads its target's replicas and selector: `watch` (the default) "
        "works the Scale out from a watch of the target's resource, as the API server does, and "
        "GETs the scale subresource wherever the watch could answer otherwise (target not cached, "
        "no list/watch or scale permission, a CRD without a scale subresource, right after a "
        "write); `get` GETs it every sync, as kube-controller-manager does",
    )
    r.add_argument(
        "--why-history",
        type=non_negative,
        default=5,
        metavar="N",
        help="distinct decisions kept per HPA for `why` (default %(default)s; each costs about 1 KB; "
        "0 keeps none)",
    )
    r.add_argument(
        "--kube-api-qps",
        type=float,
        default=20.0,
        help="requests a second each client sends to the API server after a burst, as in "
        "kube-controller-manager: the informers', and the HPA, scale and each metrics API's "
        "client (default %(default)s; 0: no limit; the Lease's is never limited)",
    )
    r.add_argument(
        "--kube-api-burst",
        type=int,
        default=30,
        help="requests a client may send at once before --kube-api-qps paces it (default %(default)s)",
    )
    add_runtime_flags(r, "the reconciles under way may take to finish before they are cancelled")
    r.add_argument(
        "--bind-address",
        default="0.0.0.0",
        help="address of the HTTPS endpoints: /metrics, /debug/*, /healthz, /readyz (default %(default)s)",
    )
    r.add_argument(
        "--secure-port",
        "--port",
        dest="port",
        type=port_or_zero,
        default=10258,
        help="HTTPS port of the endpoints (default %(default)s); --port is the same flag's older name",
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


def cmd_run(args: argparse.Namespace) -> int:
    from controller.live.leader import LeaderElection
    from controller.live.runner import Options, run
    from shared.logging import configure

    overrides, warnings, errors = kcm_flags.translate(args, getattr(args, "argv", []))
    args = argparse.Namespace(**{**vars(args), **overrides})  # kcm's spellings, read as ours
    if errors:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        return 2
    configure(json=args.log_format == "json", level=args.log_level)
    for warning in warnings:
        structlog.get_logger("controller").warning("flag_ignored", detail=warning)
    decision = DecisionFlags.of(args)
    if decision.emulated_version:
        # the release is known: a gate it refuses is a usage error before connecting, and the
        # settings (and any out-of-range warning) are made once
        known = decision.settings()
    try:
        leader = (
            LeaderElection(
                namespace=args.leader_elect_resource_namespace,
                name=args.leader_elect_resource_name,
                lease_duration=max(1, round(args.leader_elect_lease_duration.total_seconds())),
                renew_deadline=args.leader_elect_renew_deadline.total_seconds(),
                retry_period=args.leader_elect_retry_period.total_seconds(),
            )
            if args.leader_elect
            else None
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    opts = Options(
        kubeconfig=args.kubeconfig,
        settings=(lambda _: known) if decision.emulated_version else decision.settings,
        sync_period=args.horizontal_pod_autoscaler_sync_period.total_seconds(),
        workers=args.concurrent_horizontal_pod_autoscaler_syncs,
        hpa_selector=args.hpa_selector,
        dry_run=args.dry_run,
        leader=leader,
        bind_address=args.bind_address,
        port=args.port,
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
        scale_reads=args.scale_reads,
        own_kind=args.own_kind == "active",
        admission_webhook_port=args.admission_webhook_port,
    )
    if opts.insecure_skip_auth and not ipaddress.ip_address(opts.bind_address).is_loopback:
        print("error: --insecure-skip-auth only binds to loopback", file=sys.stderr)
        return 2
    if opts.kube_api_qps > 0 and opts.kube_api_burst < 1:
        print("error: --kube-api-burst must be at least 1 when --kube-api-qps is above 0", file=sys.stderr)
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
