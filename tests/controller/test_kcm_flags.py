"""Every flag of the built kube-controller-manager v1.37.2 that concerns the HPA controller,
klog or leader election is accepted by ``promhpa-controller run``: ours already, mapped
onto ours, or ignored with a warning that names it -- so a kcm command line can be reused."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from controller import kcm_flags
from controller.cli import build_parser
from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from tests.support import missing

pytestmark = [pytest.mark.tools]
CONCERNING = re.compile(
    r"^--(horizontal-pod-autoscaler-|concurrent-horizontal-pod-autoscaler-syncs|leader-|enable-leader-"
    r"|v$|vmodule|log-|logging-format|kube-api-|feature-gates|emulated-version|kubeconfig|master$"
    r"|authentication-kubeconfig|authorization-kubeconfig)"
)
SAMPLES = {
    "duration": "15s",
    "int32": "5",
    "float": "0.1",
    "float32": "20",
    "Level": "4",
    "pattern=N,...": "x=2",
    "quantity": "0",
    "strings": "kube=1.35",
    "colonSeparatedMultimapStringString": "kube:HPAScaleToZero=true",
}
SPECIFIC = {
    "--leader-elect-resource-lock": "leases",
    "--logging-format": "json",
    "--kube-api-content-type": "application/json",
}
_FLAG = re.compile(r"^\s+(?:-(\w), )?(--[a-z0-9-]+)(?: (\S+))?")


def kcm_flags_concerning_the_hpa() -> list[tuple[str, str]]:
    binary = Path(Binaries(cache_bin()).controller_manager)
    if not binary.exists():
        missing(f"kube-controller-manager is not built at {binary}: run `make cluster-tools`")
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30, check=False)
    flags = []
    for line in out.stdout.splitlines():
        m = _FLAG.match(line)
        if m and CONCERNING.match(m.group(2)):
            flag, kind = m.group(2), m.group(3) or ""
            value = SPECIFIC.get(flag) or SAMPLES.get(kind) or ("/tmp/x" if kind == "string" else "true")
            flags.append((flag, value))
    return flags


def test_the_selection_holds_what_a_kcm_command_line_sets() -> None:
    names = {f for f, _ in kcm_flags_concerning_the_hpa()}
    assert {
        "--v",
        "--kube-api-qps",
        "--leader-elect-resource-lock",
        "--horizontal-pod-autoscaler-tolerance",
    } <= names
    assert len(names) >= 30


def test_every_kcm_flag_concerning_the_hpa_is_ours_mapped_or_warned_about() -> None:
    run = next(
        a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith(" run")
    )  # type: ignore[union-attr]
    own = {o for a in run._actions for o in a.option_strings}
    unaccepted = []
    for flag, value in kcm_flags_concerning_the_hpa():
        argv = ["run", f"{flag}={value}"]
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            unaccepted.append(f"{flag}={value}: refused")
            continue
        _, warnings, errors = kcm_flags.translate(args, argv)
        if errors:
            unaccepted.append(f"{flag}={value}: {errors}")
        elif flag in own and flag not in kcm_flags.FLAGS:
            continue  # ours
        elif not any(w.startswith(f"{flag}:") for w in warnings) and flag not in {
            f.flag for f in kcm_flags.MAPPED
        }:
            unaccepted.append(f"{flag}: accepted silently")
    assert unaccepted == []


def test_a_lock_other_than_leases_is_refused() -> None:
    argv = ["run", "--leader-elect-resource-lock=endpoints"]
    _, _, errors = kcm_flags.translate(build_parser().parse_args(argv), argv)
    assert errors == ["--leader-elect-resource-lock=endpoints: promhpa's leader election uses leases only"]


def test_klog_verbosity_and_format_map_onto_ours_unless_given() -> None:
    argv = ["run", "--v=4", "--logging-format=text"]
    overrides, _, _ = kcm_flags.translate(build_parser().parse_args(argv), argv)
    assert overrides == {"log_level": "debug", "log_format": "console"}
    argv = ["run", "--v=4", "--log-level=warning"]
    overrides, _, _ = kcm_flags.translate(build_parser().parse_args(argv), argv)
    assert "log_level" not in overrides  # ours, given, wins


def test_leader_elect_takes_kcms_boolean_forms() -> None:
    assert build_parser().parse_args(["run", "--leader-elect=false"]).leader_elect is False
    assert build_parser().parse_args(["run", "--leader-elect"]).leader_elect is True
