"""``python -m controller decide``: output format, malformed input, --explain, --chain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controller.engine.builders import pod_metrics
from tests.controller.engine.builders import snapshot
from tests.support import ROOT
from tests.support import python_m


def decide(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return python_m("controller", "decide", *args, input=stdin)


def write(tmp_path: Path, name: str, data: Any) -> str:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data) if name.endswith(".yaml") else json.dumps(data))
    return str(p)


def hot_snapshot(**kw: Any) -> dict[str, Any]:
    return snapshot(pod_metrics_=[pod_metrics(f"web-{i}", "1") for i in range(3)], **kw)


def test_decide_prints_one_json_line_per_snapshot_in_order(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", hot_snapshot())
    b = write(tmp_path, "b.json", snapshot(current=12, max_replicas=10))
    proc = decide(a, b)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["desiredReplicas"] for d in lines] == [6, 10]
    assert set(lines[0]) == {"desiredReplicas", "rescale", "status", "events", "history"}


def test_decide_reads_stdin() -> None:
    proc = decide("-", stdin=json.dumps(hot_snapshot()))
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["desiredReplicas"] == 6


def test_malformed_quantity_names_file_and_field(tmp_path: Path) -> None:
    bad = hot_snapshot()
    bad["pods"][1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "5 cores"
    path = write(tmp_path, "bad.yaml", bad)
    proc = decide(path)
    assert proc.returncode == 2
    assert f"{path}: pods[1].spec.containers[0].resources.requests.cpu: invalid quantity" in proc.stderr


def _without(key: str) -> Any:
    return lambda snap: snap.pop(key)


MALFORMED = {  # what is wrong -> (how to break a good snapshot, what the error names)
    "missing now": (_without("now"), "now: is required"),
    "missing scale and scaleError": (_without("scale"), "scale: is required"),
    "a list where an object belongs": (
        lambda snap: snap["hpa"].__setitem__("spec", []),
        "hpa.spec: must be an object, got a list",
    ),
    "an unreadable time": (
        lambda snap: snap.__setitem__(
            "history", {"recommendations": [{"replicas": 2, "timestamp": "yesterday"}]}
        ),
        "history.recommendations[0].timestamp: invalid time",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_snapshot_is_refused_naming_the_field(tmp_path: Path, case: str) -> None:
    breaks, message = MALFORMED[case]
    bad = hot_snapshot()
    breaks(bad)
    proc = decide(write(tmp_path, "bad.yaml", bad))
    assert proc.returncode == 2
    assert message in proc.stderr


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.yaml"
    p.write_text("now: x\nhpa: [unclosed\n")
    proc = decide(str(p))
    assert proc.returncode == 2
    assert "line" in proc.stderr
    assert "broken.yaml" in proc.stderr


def test_malformed_snapshot_does_not_stop_the_others(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", hot_snapshot())
    proc = decide(str(tmp_path / "missing.yaml"), good)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 2
    assert len(lines) == 2
    assert "error" in json.loads(lines[0])
    assert json.loads(lines[1])["desiredReplicas"] == 6


def test_explain_tells_the_story_of_a_decision(tmp_path: Path) -> None:
    proc = decide("--explain", write(tmp_path, "a.yaml", hot_snapshot()))
    assert proc.returncode == 0
    text = proc.stdout
    assert "pods: 3 ready, 0 unready, 0 missing, 0 ignored" in text
    assert "ceil(2 x 3 ready pods) = 6" in text
    assert "Result: rescale 3 -> 6" in text


def test_chain_feeds_history_to_the_next_snapshot(tmp_path: Path) -> None:
    first = hot_snapshot(history={})
    second = snapshot(
        pod_metrics_=[pod_metrics(f"web-{i}", "100m") for i in range(3)], now="2026-01-01T12:01:00Z"
    )
    del second["history"]
    a, b = write(tmp_path, "a.yaml", first), write(tmp_path, "b.yaml", second)
    chained = [json.loads(x) for x in decide("--chain", a, b).stdout.splitlines()]
    # the 6 recommended a minute earlier is inside the 5m window, so the drop to 1 is held
    assert chained[1]["desiredReplicas"] == 6
    assert chained[1]["status"]["conditions"][0]["reason"] == "SucceededRescale"
    assert [r["replicas"] for r in chained[1]["history"]["recommendations"]] == [3, 6, 1]
    unchained = [json.loads(x) for x in decide(a, b).stdout.splitlines()]
    assert unchained[1]["history"]["recommendations"] == [
        {"replicas": 3, "timestamp": "2026-01-01T12:01:00Z"},
        {"replicas": 1, "timestamp": "2026-01-01T12:01:00Z"},
    ]


def test_run_refuses_to_turn_off_a_locked_gate() -> None:
    proc = run_flags("--emulated-version=1.37", "--feature-gates=HPAConfigurableTolerance=false")
    assert proc.returncode == 2
    assert (
        "cannot set feature gate HPAConfigurableTolerance to false, feature is locked to true" in proc.stderr
    )


def test_version_is_the_installed_distributions() -> None:
    for module, name in (("controller", "promhpa-controller"), ("adapter", "promhpa-adapter")):
        proc = python_m(module, "--version")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"{name} "), proc.stdout


def test_run_without_usable_credentials_is_one_clean_line(tmp_path: Path) -> None:
    proc = run_flags(f"--kubeconfig={tmp_path / 'missing'}")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert (
        proc.stderr
        == f"error: kubeconfig {tmp_path / 'missing'}: cannot read it: No such file or directory\n"
    )


def run_flags(*flags: str) -> subprocess.CompletedProcess[str]:
    return python_m("controller", "run", *flags)


def test_run_refuses_a_gate_the_emulated_release_does_not_have() -> None:
    proc = run_flags("--emulated-version=1.35", "--feature-gates=HPAGeneration=true")
    assert proc.returncode == 2
    assert "unrecognized feature gate: HPAGeneration (Kubernetes 1.35 does not have it)" in proc.stderr


def test_run_refuses_an_emulated_version_that_is_not_one_as_a_usage_error() -> None:
    proc = run_flags("--emulated-version=banana")
    assert proc.returncode == 2
    assert "'banana' is not a Kubernetes version" in proc.stderr


def test_run_warns_and_decides_as_the_nearest_release_outside_the_range() -> None:
    proc = run_flags("--emulated-version=1.29", "--kubeconfig=/nonexistent")
    assert (
        "warning: Kubernetes 1.29 is older than the oldest release promhpa decides as (1.33)" in proc.stderr
    )


def controller_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return python_m("controller", *args)


def test_usage_names_the_installed_program() -> None:
    assert controller_cli("--help").stdout.startswith("usage: promhpa-controller ")


def test_an_unknown_log_level_is_a_one_line_usage_error() -> None:
    proc = controller_cli("run", "--log-level=loud")
    assert proc.returncode == 2
    assert "argument --log-level: invalid choice: 'loud'" in proc.stderr
    assert "Traceback" not in proc.stderr


REPLAY = ("replay", "missing.yaml", "--prometheus-url=http://127.0.0.1:1", "--config=missing-rules.yaml")


def test_replay_takes_a_relative_time_as_the_next_argument() -> None:
    proc = controller_cli(*REPLAY, "--from", "-7d")
    assert "expected one argument" not in proc.stderr
    assert "missing.yaml: no such file" in proc.stderr  # it went on to the next check


def test_replay_names_every_relative_form_for_a_bad_time() -> None:
    proc = controller_cli(*REPLAY, "--from=-7x")
    assert proc.returncode == 2
    assert "relative time (-90s, -90m, -12h, -7d, -2w)" in proc.stderr


def test_replay_refuses_a_misspelt_set_path_before_anything_is_read() -> None:
    proc = controller_cli(*REPLAY, "--set", "behaviour.scaleDown.stabilizationWindowSeconds=60")
    assert proc.returncode == 2
    assert "spec has no field 'behaviour' (did you mean 'behavior'?)" in proc.stderr


def test_replay_refuses_a_set_value_of_the_wrong_type() -> None:
    proc = controller_cli(*REPLAY, "--set", "behavior.scaleDown.stabilizationWindowSeconds=soon")
    assert proc.returncode == 2
    assert "stabilizationWindowSeconds is a whole number, not 'soon'" in proc.stderr


def test_a_closed_pipe_ends_decide_quietly() -> None:
    example = sorted((ROOT / "docs" / "examples").glob("*.yaml"))[0]
    proc = subprocess.Popen(
        ["promhpa-controller", "decide", *[str(example)] * 400],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )
    assert proc.stdout is not None
    proc.stdout.read(300)
    proc.stdout.close()  # the reader goes away, as `| head -c 300` does
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141
    assert err == b""


def test_every_subcommand_has_a_description_and_every_flag_a_help() -> None:
    import argparse

    from adapter.commandline.flags import check_parser
    from adapter.commandline.flags import serve_parser
    from controller.cli import build_parser

    missing: list[str] = []

    def walk(p: argparse.ArgumentParser, name: str) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sub in a.choices.items():
                    if not sub.description:
                        missing.append(f"{name} {n}: no description")
                    walk(sub, f"{name} {n}")
            elif a.option_strings and a.help is None:
                missing.append(f"{name} {a.option_strings[0]}: no help")

    walk(build_parser(), "promhpa-controller")
    walk(serve_parser(), "promhpa-adapter")
    walk(check_parser(), "promhpa-adapter check-config")
    assert missing == []


def test_every_command_with_output_takes_o_text_json_yaml() -> None:
    from controller.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["decide", "-o", "yaml", "x.yaml"]).output == "yaml"
    assert parser.parse_args(["decide", "--explain", "x.yaml"]).output == "text"
    assert parser.parse_args(["compare", "--controller-url=https://x", "-o", "yaml"]).output == "yaml"
    assert parser.parse_args(["compare", "--controller-url=https://x", "-o", "table"]).output == "text"
    assert parser.parse_args(["snapshot", "ns/x", "-o", "json"]).output == "json"
    args = parser.parse_args(["replay", "h.yaml", "--prometheus-url=http://x", "--config=c", "-o", "yaml"])
    assert args.output == "yaml"


def test_decide_prints_yaml_documents_and_text_as_explain_does() -> None:
    example = str(sorted((ROOT / "docs" / "examples").glob("*.yaml"))[0])
    as_yaml = controller_cli("decide", "-o", "yaml", example)
    assert as_yaml.returncode == 0
    as_json = controller_cli("decide", example)
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    assert (
        controller_cli("decide", "-o", "text", example).stdout
        == controller_cli("decide", "--explain", example).stdout
    )


def test_replay_checks_an_indexed_set_path_without_the_spec_it_indexes() -> None:
    proc = controller_cli(*REPLAY, "--set", "metrics[0].pods.target.averageValue=20")
    assert "no element" not in proc.stderr
    assert "missing.yaml: no such file" in proc.stderr  # the --set check passed; the HPA is read next


def test_a_misspelled_key_is_refused_with_the_key_it_meant(tmp_path: Path) -> None:
    """``histroy`` would otherwise be ignored, and the decision made without the history."""
    bad = hot_snapshot()
    bad["histroy"] = {}
    bad.setdefault("controller", {})["tolerence"] = 0.5
    path = write(tmp_path, "typo.yaml", bad)
    proc = decide(path)
    assert proc.returncode == 2
    assert "histroy: unknown key (did you mean 'history'?)" in proc.stderr
    assert "controller.tolerence: unknown key (did you mean 'tolerance'?)" in proc.stderr


def test_an_unsupported_kubernetes_version_is_decided_as_the_nearest_with_a_warning(tmp_path: Path) -> None:
    old = hot_snapshot()
    old.setdefault("controller", {})["kubernetesVersion"] = "1.20"
    proc = decide(write(tmp_path, "old.yaml", old))
    assert proc.returncode == 0, proc.stderr
    assert "kubernetesVersion: Kubernetes 1.20 is older than the oldest release" in proc.stderr
    assert "deciding as 1.33" in proc.stderr
    assert json.loads(proc.stdout)["desiredReplicas"] == 6


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return python_m("controller", *args)


def test_kubectls_namespace_flag_names_the_hpas_namespace() -> None:
    """-n shop with NAME reads shop/NAME, so the error names that HPA's Lease path."""
    out = run_cli("why", "web", "-n", "shop", "--controller-url=http://127.0.0.1:1")
    assert out.returncode == 1
    assert "/debug/why/shop/web" in out.stderr


def test_a_namespace_given_twice_differently_is_a_usage_error() -> None:
    out = run_cli("why", "other/web", "-n", "shop")
    assert out.returncode == 2
    assert "names namespace 'other', but -n says 'shop'" in out.stderr


def test_kubectls_context_flag_picks_the_kubeconfigs_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: here, context: {cluster: c, user: u}}]\ncurrent-context: here\n"
    )
    out = run_cli("snapshot", "shop/web", f"--kubeconfig={kubeconfig}", "--context=elsewhere")
    assert out.returncode == 2
    assert "elsewhere" in out.stderr
