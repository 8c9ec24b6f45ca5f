"""promhpa's decisions against upstream's own controller package, snapshot by snapshot,
at every Kubernetes release promhpa decides as.

``hpa-differential-<version>`` (built by hack/build-tools.sh from that release's
pkg/controller/podautoscaler, unchanged, plus a driver file) reconciles each generated
snapshot with fake clients; ``decide`` decides the same snapshot, marked with the release
(``controller.kubernetesVersion``); every field must match: the rescale and its size, the
status (conditions with messages, current metrics), the events and the memory for the next
reconcile. ``make test`` runs a share with a fixed seed (PROMHPA_DIFF_SNAPSHOTS per release,
default 2,000 for the older releases and 5,000 for the newest); ``make differential`` runs
50,000 at each (``make differential SNAPSHOTS=N SEED=S``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.versions import parse_minor
from localcluster.tools import DIFFERENTIAL_VERSIONS
from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from tests.differential.compare import differences
from tests.differential.generate import Generator
from tests.support import missing

pytestmark = [pytest.mark.tools, pytest.mark.slow]
NEWEST = DIFFERENTIAL_VERSIONS[-1]
SEED = int(os.environ.get("PROMHPA_DIFF_SEED", "1337"))


def snapshots_for(version: str) -> int:
    given = os.environ.get("PROMHPA_DIFF_SNAPSHOTS")
    if given:
        return int(given)
    return 5000 if version == NEWEST else 2000


def harness(version: str) -> str:
    path = Path(Binaries(cache_bin()).differential_for(version))
    if not path.exists():
        missing(f"hpa-differential {version} is not built at {path}: run `make cluster-tools`")
    return str(path)


def upstream(version: str, snapshots: list[dict[str, object]]) -> list[dict[str, object]]:
    stdin = "".join(json.dumps(s) + "\n" for s in snapshots)
    out = subprocess.run(
        [harness(version)], input=stdin, capture_output=True, text=True, timeout=1800, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize("version", DIFFERENTIAL_VERSIONS)
def test_decisions_equal_upstreams_on_generated_snapshots(version: str) -> None:
    gen = Generator(SEED)
    snaps = []
    for _ in range(snapshots_for(version)):
        snap = gen.snapshot()
        snap["controller"]["kubernetesVersion"] = f"1.{parse_minor(version)}"  # type: ignore[index]
        snaps.append(snap)
    theirs = upstream(version, snaps)
    assert len(theirs) == len(snaps)
    differing: list[str] = []
    for i, (snap, answer) in enumerate(zip(snaps, theirs, strict=True)):
        ours = decide(parse_snapshot(snap)).to_wire()
        diff = differences(ours, answer)
        if diff:
            differing.append(f"snapshot {i} (seed {SEED}, {version}): " + "; ".join(diff))
    print(f"{version}: {len(snaps)} snapshots, {len(differing)} differing")
    assert differing == [], f"{len(differing)} of {len(snaps)} differ; first:\n" + "\n".join(differing[:10])
