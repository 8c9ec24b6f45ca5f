"""Every promhpa, make and helm command shown in a fenced shell block of README.md,
charts/promhpa/README.md and docs/ is checked by the program it names, so a renamed flag,
subcommand, make target or chart value fails the build:

* ``promhpa-adapter`` / ``promhpa-controller`` (or ``python -m adapter|controller``): read by
  the program's own parser (and, for the adapter, its prometheus-adapter flag mapping); the
  offline ones -- ``decide``, and ``check-config`` without ``--prometheus-url`` or
  ``--kubeconfig`` -- also run, on the repository's example snapshot and rule file where the
  page names a file of the reader's own;
* ``make TARGET``: ``make -n`` knows the target;
* ``helm install|upgrade ... charts/promhpa``: rendered by the real helm with the same
  values (the schema refuses a renamed value).

Commands that act on a live cluster (``kubectl``, ``helm history|rollback``) run against a
release of the chart on the local control plane, in ``tests/charts/test_install.py``.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from adapter.commandline import compat
from adapter.commandline.flags import check_parser
from adapter.commandline.flags import serve_parser
from controller.cli import build_parser
from tests.support import ROOT
from tests.support import python_m

PAGES = [ROOT / "README.md", ROOT / "charts" / "promhpa" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE_SNAPSHOT = sorted((ROOT / "docs" / "examples").glob("*.yaml"))[0]
EXAMPLE_RULES = ROOT / "tests" / "adapter" / "data" / "prometheus-community-default-config.yaml"
COMMUNITY_VALUES = ROOT / "charts" / "promhpa" / "ci" / "prometheus-adapter-chart-values.yaml"


def documented() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for m in re.finditer(r"```(?:sh|bash|shell)\n(.*?)```", page.read_text(), re.S):
            for line in m.group(1).replace("\\\n", " ").splitlines():
                line = re.sub(r"\s+#.*$", "", line.strip())
                for command in re.split(r"\s*;\s*|\s*&&\s*", line):
                    # a redirect or a pipe ends the command (not the > of a <PLACEHOLDER>)
                    command = re.sub(r"\s+(\d?>|\|).*$", "", command).strip()
                    if command and not command.startswith("#"):
                        out.append((str(page.relative_to(ROOT)), command))
    return out


COMMANDS = documented()
PROMHPA = [
    (p, c)
    for p, c in COMMANDS
    if re.match(r"(promhpa-(adapter|controller)|python -m (adapter|controller))\b", c)
]
MAKE = [(p, c) for p, c in COMMANDS if c.startswith("make ")]
HELM = [(p, c) for p, c in COMMANDS if re.match(r"helm (install|upgrade) ", c)]


def test_the_pages_show_commands_of_each_kind() -> None:
    assert len(PROMHPA) >= 15
    assert len(MAKE) >= 8
    assert len(HELM) >= 3


def _parse(program: str, args: list[str]) -> argparse.Namespace | None:
    """The program's own reading of ``args``; None for --version/--help (exit 0)."""
    try:
        if program == "controller":
            return build_parser().parse_args(args)
        if args[:1] == ["check-config"]:
            return check_parser().parse_args(args[1:])
        kept, aside = compat.split_unknown(args)
        ns = serve_parser().parse_args(kept)
        overrides, errors, _ = compat.translate(ns, kept, aside)
        assert errors == [], errors
        vars(ns).update(overrides)
        return ns
    except SystemExit as e:
        if e.code == 0:
            return None
        raise AssertionError(f"the {program} refuses it (exit {e.code})") from None


@pytest.mark.parametrize(("page", "command"), PROMHPA, ids=[f"{p}: {c[:60]}" for p, c in PROMHPA])
def test_a_documented_promhpa_command_is_read_and_the_offline_ones_run(page: str, command: str) -> None:
    words = shlex.split(command.replace("~", str(Path.home())))
    if words[0] == "python":
        program, args = words[2], words[3:]
    else:
        program, args = words[0].removeprefix("promhpa-"), words[1:]
    parsed = _parse(program, args)
    if parsed is None:
        return
    offline = None
    if program == "controller" and args[:1] == ["decide"]:
        files = [f if (ROOT / f).exists() else str(EXAMPLE_SNAPSHOT) for f in parsed.snapshots]
        offline = ["decide", "-o", parsed.output, *(["--chain"] if parsed.chain else []), *files]
    live = any(a.startswith(("--prometheus-url", "--kubeconfig")) for a in args)
    if program == "adapter" and args[:1] == ["check-config"] and not live:
        offline = ["check-config", str(EXAMPLE_RULES)]
    if offline is not None:
        out = python_m(program, *offline)
        assert out.returncode == 0, f"{page}: {command}\n{out.stderr}"


@pytest.mark.parametrize(("page", "command"), MAKE, ids=[f"{p}: {c}" for p, c in MAKE])
def test_a_documented_make_target_exists(page: str, command: str) -> None:
    out = subprocess.run(
        ["make", "-n", *shlex.split(command)[1:]], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, f"{page}: {command}\n{out.stderr}"


@pytest.mark.tools
@pytest.mark.parametrize(("page", "command"), HELM, ids=[f"{p}: {c[:60]}" for p, c in HELM])
def test_a_documented_helm_install_renders_with_its_values(page: str, command: str) -> None:
    from tests.charts.chart import helm

    words = shlex.split(command)
    args: list[str] = []
    i = 3
    while i < len(words):
        w = words[i]
        if w in ("--create-namespace", "--wait", "--reuse-values"):
            i += 1
            continue
        if w in ("-n", "--namespace", "--set") and i + 1 < len(words):
            args += [w, words[i + 1]]
            i += 2
            continue
        if w == "-f" and i + 1 < len(words):
            given = ROOT / words[i + 1]
            args += ["-f", str(given if given.exists() else COMMUNITY_VALUES)]
            i += 2
            continue
        args.append(w)
        i += 1
    if not any(a.startswith("prometheus.url=") for a in args):
        args += ["--set", "prometheus.url=http://prometheus:9090"]  # --reuse-values keeps the installed one
    # a release's packaged chart (dist/promhpa-X.tgz, make release) is this one, packaged
    chart = words[3] if words[3].startswith("charts/") else "charts/promhpa"
    given = [a for a in args if a != chart and not re.fullmatch(r"dist/promhpa-[\w.]+\.tgz", a)]
    out = helm("template", words[2], str(ROOT / chart), *given, check=False)
    assert out.returncode == 0, f"{page}: {command}\n{out.stderr}"
