"""promhpa's decisions against upstream's own controller package, snapshot by snapshot.

``hpa-differential`` (built by hack/build-tools.sh from Kubernetes v1.37.2's
pkg/controller/podautoscaler, unchanged, plus a driver file) reconciles each generated
snapshot with fake clients; ``decide`` decides the same snapshot; every field must match:
the rescale and its size, the status (conditions with messages, current metrics), the
events and the memory for the next reconcile. A fixed seed in CI; ``make differential``
runs a long one (PROMHPA_DIFF_SNAPSHOTS, PROMHPA_DIFF_SEED).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from controller.engine import decide, parse_snapshot
from localcluster.tools import Binaries, cache_bin
from tests.differential.compare import differences
from tests.differential.generate import Generator
from tests.support import missing

pytestmark = [pytest.mark.tools, pytest.mark.slow]
SNAPSHOTS = int(os.environ.get("PROMHPA_DIFF_SNAPSHOTS", "5000"))
SEED = int(os.environ.get("PROMHPA_DIFF_SEED", "1337"))


def harness() -> str:
    path = Path(Binaries(cache_bin()).differential)
    if not path.exists():
        missing(f"hpa-differential is not built at {path}: run `make cluster-tools`")
    return str(path)


def upstream(snapshots: list[dict[str, object]]) -> list[dict[str, object]]:
    stdin = "".join(json.dumps(s) + "\n" for s in snapshots)
    out = subprocess.run([harness()], input=stdin, capture_output=True, text=True, timeout=1800, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_decisions_equal_upstreams_on_generated_snapshots() -> None:
    gen = Generator(SEED)
    snaps = [gen.snapshot() for _ in range(SNAPSHOTS)]
    theirs = upstream(snaps)
    assert len(theirs) == len(snaps)
    differing: list[str] = []
    for i, (snap, answer) in enumerate(zip(snaps, theirs, strict=True)):
        ours = decide(parse_snapshot(snap)).to_wire()
        diff = differences(ours, answer)
        if diff:
            differing.append(f"snapshot {i} (seed {SEED}): " + "; ".join(diff))
    print(f"{len(snaps)} snapshots, {len(differing)} differing")
    assert differing == [], f"{len(differing)} of {len(snaps)} differ; first:\n" + "\n".join(differing[:10])
