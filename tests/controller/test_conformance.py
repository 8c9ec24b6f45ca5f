"""Upstream's answers, case by case: every snapshot under tests/conformance/hpa, and under
the founding material's folder too where it sits beside the clone (tests/conftest.py).

Each case is decided in-process by the same engine ``decide`` uses, and compared with the
checker that ships beside the cases (so the comparison rules are the material's, not ours).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.live.pod_parses import PodParses
from tests.conftest import CONFORMANCE
from tests.conftest import EXTRA_CONFORMANCE
from tests.controller.live.observations import live_view


def _cases() -> list[Path]:
    """The repository's cases, then the extra folder's that the repository lacks."""
    ours = sorted((CONFORMANCE / "hpa").rglob("*.yaml"))
    have = {p.relative_to(CONFORMANCE) for p in ours}
    extra = (
        sorted((EXTRA_CONFORMANCE / "hpa").rglob("*.yaml")) if (EXTRA_CONFORMANCE / "hpa").is_dir() else []
    )
    return ours + [p for p in extra if p.relative_to(EXTRA_CONFORMANCE) not in have]


CASES = _cases()


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", CONFORMANCE / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conformance_run", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.conformance
def test_conformance_cases_are_present(conformance_dir: Path) -> None:
    """No cases is a failure (``tests.support.missing``), not an empty parametrization."""
    assert CASES, f"no *.yaml cases under {conformance_dir / 'hpa'}"


@pytest.mark.conformance
@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_upstream_conformance_case(case: Path) -> None:
    data: dict[str, Any] = yaml.safe_load(case.read_text())
    out = decide(parse_snapshot(data)).to_wire()
    why = _checker().check(data.get("expect") or {}, out)
    assert why is None, f"{case.name}: {why}"


@pytest.mark.conformance
def test_conformance_runner_reports_zero_failures(conformance_dir: Path) -> None:
    """The material's own runner, through the real CLI, in one process for all cases."""
    import subprocess

    folders = [str(conformance_dir / "hpa")]
    if (EXTRA_CONFORMANCE / "hpa").is_dir():
        folders.append(str(EXTRA_CONFORMANCE / "hpa"))
    proc = subprocess.run(
        [sys.executable, str(conformance_dir / "run.py"), *folders],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1].endswith(" 0 failed")


@pytest.mark.conformance
@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_case_decides_the_same_on_the_live_path(case: Path) -> None:
    """The live controller types what it read directly (``Observation.view``), with each
    pod parsed once (the second view finds them parsed): it decides as the file does."""
    data: dict[str, Any] = yaml.safe_load(case.read_text())
    offline = decide(parse_snapshot(data)).to_wire()
    parses = PodParses()
    for _ in range(2):
        assert decide(live_view(data, parses)).to_wire() == offline


def _release_cases() -> list[Path]:
    """Cases in a ``v1.N`` folder: each pins a rule that release changed."""
    return sorted(p for p in (CONFORMANCE / "hpa").glob("v1.*/*.yaml"))


@pytest.mark.conformance
@pytest.mark.parametrize("case", _release_cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_release_case_fails_when_decided_as_the_release_before(case: Path) -> None:
    """A ``v1.N`` case records upstream's 1.N answer where 1.N-1 answers otherwise: decided
    as 1.N-1 it must fail, so each rule the release changed is held by a case."""
    data: dict[str, Any] = yaml.safe_load(case.read_text())
    minor = int(case.parent.name.split(".")[1])
    assert data["controller"]["kubernetesVersion"] == f"1.{minor}", "a v1.N case decides as 1.N"
    data["controller"]["kubernetesVersion"] = f"1.{minor - 1}"
    out = decide(parse_snapshot(data)).to_wire()
    assert _checker().check(data.get("expect") or {}, out) is not None, (
        f"{case.name} passes as 1.{minor - 1} too: it does not pin a 1.{minor} rule"
    )
