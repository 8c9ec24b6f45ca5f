"""Every Kubernetes release promhpa decides as is held everywhere it must be: the
differential harness (hack/versions.env), the engine's reference patches, the gate table,
docs/versions.md and, for the newest, a folder of conformance cases of its own. Adding a
release, or moving a beta to its GA, is then a change these tests walk through (pure)."""

from __future__ import annotations

import re

from controller.engine.gates import GATES
from controller.engine.versions import NEWEST
from controller.engine.versions import REFERENCE_PATCH
from controller.engine.versions import SUPPORTED_MINORS
from controller.engine.versions import parse_minor
from localcluster.tools import DIFFERENTIAL_VERSIONS
from tests.conftest import CONFORMANCE
from tests.conftest import ROOT

VERSIONS_DOC = (ROOT / "docs" / "versions.md").read_text()


def test_the_differential_runs_every_supported_release_at_its_reference_patch() -> None:
    assert sorted(parse_minor(v) for v in DIFFERENTIAL_VERSIONS) == list(SUPPORTED_MINORS)
    assert sorted(REFERENCE_PATCH.values(), key=parse_minor) == sorted(DIFFERENTIAL_VERSIONS, key=parse_minor)


def test_every_gate_that_every_release_knows_has_a_value_for_each() -> None:
    tolerance = GATES["HPAConfigurableTolerance"][1]
    assert set(tolerance) == set(SUPPORTED_MINORS)


def test_versions_doc_has_a_gate_column_for_each_release() -> None:
    header = next(line for line in VERSIONS_DOC.splitlines() if line.startswith("| gate |"))
    assert [c.strip() for c in header.strip("|").split("|")][1:] == [f"1.{m}" for m in SUPPORTED_MINORS]


def test_versions_doc_names_the_supported_range_and_each_reference_patch() -> None:
    assert f"1.{SUPPORTED_MINORS[0]} to\n1.{NEWEST}" in VERSIONS_DOC or (
        f"1.{SUPPORTED_MINORS[0]} to 1.{NEWEST}" in VERSIONS_DOC
    )
    for patch in REFERENCE_PATCH.values():
        assert patch in VERSIONS_DOC, f"docs/versions.md does not name {patch}"


def test_versions_doc_lists_what_the_newest_release_changes_with_pull_requests() -> None:
    rows = [line for line in VERSIONS_DOC.splitlines() if line.startswith(f"| 1.{NEWEST} |")]
    assert rows, f"docs/versions.md lists nothing 1.{NEWEST} changes"
    assert all(re.search(r"kubernetes#\d+|not found", row) for row in rows), rows


def test_the_newest_release_has_conformance_cases_of_its_own() -> None:
    cases = sorted((CONFORMANCE / "hpa" / f"v1.{NEWEST}").glob("*.yaml"))
    assert cases, f"no conformance cases under tests/conformance/hpa/v1.{NEWEST}"
