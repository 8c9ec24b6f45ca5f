"""The image recipe and the chart agree with the distribution: the wheel holds every package
and the commands the chart runs, the image runs them as the chart's non-root user, and every
runtime dependency is pinned as tested. (tests/release builds and runs the image itself.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import yaml

from release.image import COMMANDS
from release.image import USER

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_image_runs_as_the_charts_non_root_user() -> None:
    values = yaml.safe_load((ROOT / "charts" / "promhpa" / "values.yaml").read_text())
    assert USER != 0
    assert values["podSecurityContext"]["runAsUser"] == USER


def test_the_image_has_a_command_for_each_script() -> None:
    assert set(COMMANDS) == set(PYPROJECT["project"]["scripts"])


def test_chart_commands_are_the_distributions_scripts() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    templates = ROOT / "charts" / "promhpa" / "templates"
    commands = re.findall(r"command: \[([\w-]+)", "".join(p.read_text() for p in templates.rglob("*.yaml")))
    assert sorted(set(commands)) == ["promhpa-adapter", "promhpa-controller"]
    assert set(commands) <= set(scripts)


def test_wheel_holds_every_package_and_both_commands(tmp_path: Path) -> None:
    src = tmp_path / "src"  # the packages alone, built outside the work tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for name in ("adapter", "controller", "shared"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("promhpa-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("adapter", "controller", "controller/engine", "controller/live", "shared"):
        assert f"{package}/__init__.py" in names, package
    assert not any(n.startswith(("tests/", "benchmarks/", "hack/")) for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "promhpa-adapter = shared.entry:adapter" in text  # SIGTERM handled before the imports
    assert "promhpa-controller = shared.entry:controller" in text


def test_the_image_installs_every_dependency_at_its_pinned_version() -> None:
    """constraints.txt pins each runtime dependency (and theirs) as tested, and the build
    image installs with it; a dependency added without a pin fails here."""
    pins = {
        line.split("==")[0]
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert all(
        "==" in line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for dep in PYPROJECT["project"]["dependencies"]:
        name = re.split(r"[<>=;\[ ]", dep, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pins, f"{name} has no pin in constraints.txt: run make constraints"


def test_the_distribution_names_its_project() -> None:
    project = PYPROJECT["project"]
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(project["urls"])
    assert project["classifiers"]
    assert project["authors"]
