"""What several commands share: the decision settings from kube-controller-manager's flags,
the flags that read the cluster or the running controller, and the output convention."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from controller.engine.gates import GateError, parse_gates, resolve
from controller.engine.model import Settings
from controller.engine.versions import Release, VersionError, parse_minor, release
from shared.cliflags import duration, from_flags, http_url

if TYPE_CHECKING:
    from controller.commands.why import ControllerAccess

EXIT_MALFORMED = 2


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


@dataclass(frozen=True)
class DecisionFlags:
    """kube-controller-manager's HPA flags as ``_live_flags`` parsed them: the knobs every
    decision takes, read once at a command's entry."""

    horizontal_pod_autoscaler_sync_period: timedelta
    horizontal_pod_autoscaler_tolerance: float
    horizontal_pod_autoscaler_downscale_stabilization: timedelta
    horizontal_pod_autoscaler_cpu_initialization_period: timedelta
    horizontal_pod_autoscaler_initial_readiness_delay: timedelta
    feature_gates: dict[str, bool]
    emulated_version: str | None

    @classmethod
    def of(cls, a: argparse.Namespace) -> DecisionFlags:
        return from_flags(cls, a)

    def settings(self, server_version: str | None = None) -> Settings:
        """Deciding as --emulated-version, else as the API server's release
        (``server_version``), else as the newest supported one. Raises GateError for a
        --feature-gates value that release's kube-controller-manager would refuse."""
        text = self.emulated_version or server_version
        rel, warning = release(text) if text else (Release(), None)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
        return Settings(
            tolerance=self.horizontal_pod_autoscaler_tolerance,
            cpu_initialization_period=self.horizontal_pod_autoscaler_cpu_initialization_period,
            initial_readiness_delay=self.horizontal_pod_autoscaler_initial_readiness_delay,
            downscale_stabilization_window=self.horizontal_pod_autoscaler_downscale_stabilization,
            feature_gates=resolve(rel, self.feature_gates),
            release=rel,
        )


def _live_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then ~/.kube/config)")
    p.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        type=duration,
        default=timedelta(seconds=15),
        help="how often each HPA is reconciled (default %(default)s)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=0.1,
        help="the ratio band around 1.0 in which no scaling happens (default %(default)s)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=duration,
        default=timedelta(minutes=5),
        help="how far back the largest recommendation holds a scale-down (default %(default)s)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        type=duration,
        default=timedelta(minutes=5),
        help="after a pod starts, how long its CPU samples may be skipped (default %(default)s)",
    )
    p.add_argument(
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        type=duration,
        default=timedelta(seconds=30),
        help="after a pod starts, how long a readiness change counts as initial (default %(default)s)",
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
        help="decide as this Kubernetes release's controller, 1.33 to 1.38 (kcm's spelling kube=1.35 "
        "too); default: the API server's release (outside the range: the nearest, with a warning)",
    )


def _controller_source(p: argparse.ArgumentParser, what: str, *, required: bool) -> None:
    """Where a command reads the running controller: its leader, found through the Lease and
    reached through the API server (as ``why`` does), or a URL the user already reaches."""
    from controller.commands.why import add_leader_flags

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


def controller_get(access: ControllerAccess, path: str) -> Any:
    """GET ``path`` of the running controller's endpoints, with the kubeconfig's credentials."""
    from controller.commands.why import ask_controller

    return ask_controller(access, path)[0]


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


# one convention for every command's output: -o text|json|yaml ("table" reads as text)
OUTPUTS = ("text", "json", "yaml")


def _output(text: str) -> str:
    return "text" if text == "table" else text
