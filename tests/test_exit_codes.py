"""docs/cli.md's exit-code table, row by row, and its output flags, command by command.

The table is read from the page itself: a row added there without a case here fails, and
every example a row gives is run as a user runs it (real files, closed ports on 127.0.0.1,
real signals). The ``-o`` list is checked against each command's own parser.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shared.test_entry import HPA
from tests.shared.test_entry import RULES
from tests.support import python_m
from tests.test_broken_inputs import kubeconfig

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
CLI = (ROOT / "docs" / "cli.md").read_text()
REFUSING = "http://127.0.0.1:1"
EXAMPLE = str(ROOT / "docs" / "examples" / "01-cpu-scale-up-with-warming-pod.yaml")


def table_codes() -> set[int]:
    section = CLI.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m) for m in re.findall(r"^\|\s*(\d+)\s*\|", section, re.M)}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    d = tmp_path_factory.mktemp("codes")
    made = {
        "rules": RULES,
        "bad-rules": RULES + "  metricsQueryy: x\n",
        "unknown-key": Path(EXAMPLE)
        .read_text()
        .replace("maxReplicas: 10", "maxReplicas: 10\n    maxReplica: 3"),
        "refusing": kubeconfig("https://127.0.0.1:1"),
        "hpa": HPA,
        "refused-hpa": HPA.replace("maxReplicas: 10", "maxReplicas: 0"),
    }
    for name, text in made.items():
        (d / f"{name}.yaml").write_text(text)
    hung = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    yield {k: str(d / f"{k}.yaml") for k in made} | {
        "missing": str(d / "missing.yaml"),
        "hung": f"http://127.0.0.1:{hung.getsockname()[1]}",
    }
    hung.close()


def _run(argv: list[str]) -> int:
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, timeout=120, check=False
    ).returncode


def _popen(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )


def _signalled(argv: list[str], sig: signal.Signals) -> int:
    with _popen(argv) as p:
        time.sleep(3)
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        p.communicate(timeout=20)
    return p.returncode


def _reader_gone(argv: list[str]) -> int:
    """The command's output read for one line, then the pipe closed (``... | head -1``)."""
    with _popen(argv) as p:
        assert p.stdout is not None
        p.stdout.readline()
        p.stdout.close()
        p.wait(timeout=120)
    return p.returncode


# code -> the examples of its row, each a way to run it given the module's files
Case = Callable[[dict[str, str]], int]
ROWS: dict[int, dict[str, Case]] = {
    0: {
        "check-config found nothing wrong": lambda f: _run(["adapter", "check-config", f["rules"]]),
        "decide decided": lambda f: _run(["controller", "decide", EXAMPLE]),
    },
    1: {
        "check-config: Prometheus could not be reached": lambda f: _run(
            ["adapter", "check-config", f["rules"], f"--prometheus-url={REFUSING}"]
        ),
        "why: the cluster did not answer": lambda f: _run(
            ["controller", "why", "a/b", f"--kubeconfig={f['refusing']}"]
        ),
        "replay of a live HPA: the cluster did not answer": lambda f: _run(
            [
                "controller",
                "replay",
                "a/b",
                f"--kubeconfig={f['refusing']}",
                f"--prometheus-url={REFUSING}",
                f"--config={f['rules']}",
            ]
        ),
    },
    2: {
        "an unknown flag": lambda f: _run(["controller", "decide", EXAMPLE, "--no-such-flag"]),
        "a rule file with a mistake": lambda f: _run(["adapter", "check-config", f["bad-rules"]]),
        "a snapshot with an unknown key": lambda f: _run(["controller", "decide", f["unknown-key"]]),
        "a kubeconfig that is missing": lambda f: _run(
            ["controller", "why", "a/b", f"--kubeconfig={f['missing']}"]
        ),
        "an HPA the API server would refuse, given to replay": lambda f: _run(
            [
                "controller",
                "replay",
                f["refused-hpa"],
                f"--prometheus-url={REFUSING}",
                f"--config={f['rules']}",
            ]
        ),
    },
    130: {
        "check-config interrupted": lambda f: _signalled(
            ["adapter", "check-config", f["rules"], f"--prometheus-url={f['hung']}"], signal.SIGINT
        ),
    },
    141: {
        "decide ... | head": lambda f: _reader_gone(["controller", "decide", *[EXAMPLE] * 400]),
    },
    143: {
        "check-config killed by CI's timeout": lambda f: _signalled(
            ["adapter", "check-config", f["rules"], f"--prometheus-url={f['hung']}"], signal.SIGTERM
        ),
        "replay --check killed": lambda f: _signalled(
            [
                "controller",
                "replay",
                f["hpa"],
                f"--prometheus-url={f['hung']}",
                f"--config={f['rules']}",
                "--set",
                "minReplicas=2",
                "--check",
            ],
            signal.SIGTERM,
        ),
    },
}


def test_every_row_of_the_exit_code_table_has_cases() -> None:
    assert table_codes() == set(ROWS), "docs/cli.md's exit-code table and this test's rows differ"


@pytest.mark.parametrize(("code", "what"), [(c, w) for c, row in ROWS.items() for w in row])
def test_each_example_of_the_exit_code_table_exits_with_its_code(
    code: int, what: str, files: dict[str, str]
) -> None:
    assert ROWS[code][what](files) == code


# command -> (its parser's -o choices, its default), as docs/cli.md's -o bullet lists them
OUTPUTS = {
    "decide": ({"text", "json", "yaml"}, "json"),
    "check-config": ({"text", "json", "yaml"}, "text"),
    "why": ({"text", "json", "yaml"}, "text"),
    "compare": ({"text", "json", "yaml"}, "text"),
    "replay": ({"text", "json", "yaml", "csv"}, "text"),
    "snapshot": ({"yaml", "json"}, "yaml"),
}


def _output_action(command: str) -> tuple[set[str], str]:
    if command == "check-config":
        from adapter.commandline.flags import check_parser

        parser = check_parser()
    else:
        from controller.cli import build_parser

        sub = next(a for a in build_parser()._actions if a.dest == "command")
        parser = sub.choices[command]  # type: ignore[index]
    action = next(a for a in parser._actions if "-o" in a.option_strings)
    return set(action.choices or ()), str(action.default)


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_every_command_that_prints_a_result_takes_the_documented_output_flag(command: str) -> None:
    assert _output_action(command) == OUTPUTS[command]
    bullet = CLI.split("**`-o`/`--output`**", 1)[1].split("\n- ", 1)[0]
    assert f"`{command}`" in bullet, f"docs/cli.md's -o bullet does not name {command}"


def test_check_config_prints_its_verdict_as_json(files: dict[str, str]) -> None:
    import json

    out = python_m("adapter", "check-config", files["bad-rules"], "-o", "json")  # fmt: skip
    doc = json.loads(out.stdout)
    assert out.returncode == doc["exitCode"] == 2
    assert doc["valid"] is False
    assert any("metricsQueryy: unknown key" in e for e in doc["errors"])
