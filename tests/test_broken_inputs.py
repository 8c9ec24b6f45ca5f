"""Every command, fed broken input, answers with one line naming the input and an exit
code from docs/cli.md's table -- never a traceback.

The matrix: kubeconfigs that are missing, empty, not YAML, binary, UTF-16, or point at a
cluster that refuses (a closed port on loopback); no credentials at all; rule files,
snapshots and HPA files that are missing, empty, binary, UTF-16 or not YAML; a Prometheus
that refuses; URLs that are not URLs. Each is a real file or a real closed port: nothing
here is stubbed, and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.shared.test_entry import HPA
from tests.shared.test_entry import RULES
from tests.support import python_m

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
REFUSING = "http://127.0.0.1:1"  # a closed port: connections are refused at once
EXIT_CODES = {1, 2}  # a failed check or runtime error; a usage or input error
# an empty rule file is valid (prometheus-adapter serves nothing from it): a warning, exit 0


def kubeconfig(server: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "{server}", insecure-skip-tls-verify: true}}}}]\n'
        "users: [{name: u, user: {token: abc}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("broken")
    files = {
        "missing": d / "missing.yaml",
        "empty": d / "empty.yaml",
        "malformed": d / "malformed.yaml",
        "binary": d / "binary.yaml",
        "utf16": d / "utf16.yaml",
        "refusing": d / "refusing.kubeconfig",
        "rules": d / "rules.yaml",
        "hpa": d / "hpa.yaml",
        "home": d / "home",
    }
    files["empty"].write_text("")
    files["malformed"].write_text("apiVersion: v1\nkind: [\n  - {a: \n")
    files["binary"].write_bytes(bytes(range(256)) * 4)
    files["utf16"].write_bytes("apiVersion: v1\nkind: Config\n".encode("utf-16"))
    files["refusing"].write_text(kubeconfig("https://127.0.0.1:1"))
    files["rules"].write_text(RULES)
    files["hpa"].write_text(HPA)
    files["home"].mkdir()
    return files


BROKEN_FILES = ("missing", "empty", "malformed", "binary", "utf16")
BROKEN_KUBECONFIGS = (*BROKEN_FILES, "refusing")


def cases(f: dict[str, Path]) -> list[tuple[str, list[str], dict[str, str]]]:
    """(what, argv after python -m, extra environment)."""
    out: list[tuple[str, list[str], dict[str, str]]] = []
    for k in BROKEN_KUBECONFIGS:
        kc = f"--kubeconfig={f[k]}"
        out += [
            (f"controller why, {k} kubeconfig", ["controller", "why", "a/b", kc], {}),
            (f"kubectl promhpa why, {k} kubeconfig", ["controller", "why", "a/b", kc], {"PROG": "kubectl"}),
            (f"controller snapshot, {k} kubeconfig", ["controller", "snapshot", "a/b", kc], {}),
            (f"controller compare, {k} kubeconfig", ["controller", "compare", "--from-leader", kc], {}),
            (f"controller run, {k} kubeconfig", ["controller", "run", kc], {}),
            (f"adapter check-config, {k} kubeconfig", ["adapter", "check-config", str(f["rules"]), kc], {}),
            (
                f"adapter serving, {k} kubeconfig",
                [
                    "adapter",
                    f"--prometheus-url={REFUSING}",
                    "--bind-address=127.0.0.1",
                    "--secure-port=0",
                    kc,
                ],
                {},
            ),
            (
                f"controller replay of a live HPA, {k} kubeconfig",
                ["controller", "replay", "a/b", f"--prometheus-url={REFUSING}", f"--config={f['rules']}", kc],
                {},
            ),
        ]
    no_credentials = {"HOME": str(f["home"]), "KUBECONFIG": ""}
    out += [
        ("controller why, no credentials", ["controller", "why", "a/b"], no_credentials),
        ("controller snapshot, no credentials", ["controller", "snapshot", "a/b"], no_credentials),
        ("controller run, no credentials", ["controller", "run"], no_credentials),
        (
            "adapter serving, no credentials",
            ["adapter", f"--prometheus-url={REFUSING}", "--bind-address=127.0.0.1", "--secure-port=0"],
            no_credentials,
        ),
    ]
    for k in BROKEN_FILES:
        out += [
            (f"adapter check-config, {k} rule file", ["adapter", "check-config", str(f[k])], {}),
            (f"controller decide, {k} snapshot", ["controller", "decide", str(f[k])], {}),
            (
                f"controller replay, {k} HPA file",
                ["controller", "replay", str(f[k]), f"--prometheus-url={REFUSING}", f"--config={f['rules']}"],
                {},
            ),
            (
                f"controller replay, {k} rule file",
                ["controller", "replay", str(f["hpa"]), f"--prometheus-url={REFUSING}", f"--config={f[k]}"],
                {},
            ),
        ]
    out += [
        (
            "adapter check-config, refusing Prometheus",
            ["adapter", "check-config", str(f["rules"]), f"--prometheus-url={REFUSING}"],
            {},
        ),
        (
            "adapter check-config, a Prometheus URL that is not one",
            ["adapter", "check-config", str(f["rules"]), "--prometheus-url=not-a-url"],
            {},
        ),
        (
            "controller replay, refusing Prometheus",
            ["controller", "replay", str(f["hpa"]), f"--prometheus-url={REFUSING}", f"--config={f['rules']}"],
            {},
        ),
        (
            "controller why, a controller URL that is not one",
            ["controller", "why", "a/b", "--controller-url=x"],
            {},
        ),
        (
            "controller why, a refusing controller",
            ["controller", "why", "a/b", f"--controller-url={REFUSING}"],
            {},
        ),
        (
            "controller compare, a controller URL that is not one",
            ["controller", "compare", "--controller-url=x"],
            {},
        ),
    ]
    return out


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **{k: v for k, v in env.items() if k != "PROG"}}
    return python_m(*argv, timeout=120, env=full)


def test_no_command_answers_broken_input_with_a_traceback(inputs: dict[str, Path]) -> None:
    matrix = cases(inputs)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: run(c[1], c[2]), matrix))
    bad = []
    for (what, _, _), out in zip(matrix, results, strict=True):
        text = out.stdout + out.stderr
        allowed = {0, *EXIT_CODES} if what == "adapter check-config, empty rule file" else EXIT_CODES
        if "Traceback" in text or "never retrieved" in text or out.returncode not in allowed:
            bad.append(f"{what}: exit {out.returncode}\n{text[-1500:]}")
        elif not any(word in text for word in ("error", "Error", "usage:", "warning")):
            bad.append(f"{what}: exit {out.returncode} without an error line\n{text[-500:]}")
    assert not bad, f"{len(bad)} of {len(matrix)}:\n\n" + "\n\n".join(bad)
    print(f"{len(matrix)} broken inputs, each answered in one error and exit 1 or 2")
