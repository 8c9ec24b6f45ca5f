"""The image recipe and the chart agree with the distribution.

No container runtime or base-image registry is reachable here, so the Dockerfile is not
built in the tests; what can drift is checked instead: every package is copied into the
build, the wheel it builds holds them and the two commands the chart runs, the run-time
stage keeps no build tools and runs as the chart's non-root user.
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

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
STAGES = re.split(r"^FROM ", DOCKERFILE, flags=re.M)[1:]


def test_build_stage_copies_every_package() -> None:
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert len(packages) >= 5  # shared, rules, promclient, controller, adapter: not vacuous
    build = STAGES[0]
    for pattern in packages:
        name = pattern.rstrip("*").rstrip(".")
        assert re.search(rf"^COPY {name} \./{name}$", build, flags=re.M), name


def test_runtime_stage_is_slim_non_root_and_without_build_tools() -> None:
    runtime = STAGES[-1]
    assert runtime.startswith("python:3.11-slim")
    assert "COPY --from=build /opt/promhpa /opt/promhpa" in runtime
    assert not re.search(r"apt-get install|gcc|build-essential|pip install", runtime)
    assert "pip uninstall -y pip" in runtime
    user = re.search(r"^USER (\d+):(\d+)$", runtime, flags=re.M)
    assert user is not None
    assert user.group(1) != "0"
    values = yaml.safe_load((ROOT / "charts" / "promhpa" / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(user.group(1))


def test_chart_commands_are_the_distributions_scripts() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    templates = ROOT / "charts" / "promhpa" / "templates"
    commands = re.findall(r"command: \[([\w-]+)", "".join(p.read_text() for p in templates.rglob("*.yaml")))
    assert sorted(set(commands)) == ["promhpa-adapter", "promhpa-controller"]
    assert set(commands) <= set(scripts)


def test_wheel_holds_every_package_and_both_commands(tmp_path: Path) -> None:
    src = tmp_path / "src"  # what the Dockerfile copies, built outside the work tree
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
    stage installs with it; a dependency added without a pin fails here."""
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
    assert "COPY pyproject.toml README.md LICENSE constraints.txt ./" in STAGES[0]
    assert "--constraint constraints.txt" in STAGES[0]


def test_the_distribution_names_its_project() -> None:
    project = PYPROJECT["project"]
    assert {"Homepage", "Documentation", "Changelog", "Issues"} <= set(project["urls"])
    assert project["classifiers"]
    assert project["authors"]
