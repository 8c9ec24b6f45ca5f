"""What the adapter's start-up pays for before its first answer.

The aggregator cannot list a metric before the adapter's first discovery is done, so the
libraries the serving path does not need first -- the kubernetes client (loaded in a worker
thread while Prometheus answers that discovery), requests (only a cloud backend's
credential library uses it), prometheus-api-client (no product code does: the local
cluster's tooling reads its Prometheus with it), cryptography (only to make a
certificate) -- are not imported with it. Nor does the garbage collector run before then (shared.gcpolicy).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from adapter.__main__ import main

LATER = ("kubernetes", "requests", "prometheus_api_client", "cryptography")


def test_importing_the_adapter_leaves_the_slow_libraries_for_later() -> None:
    probe = (
        f"import json, sys, adapter.__main__\nprint(json.dumps([m for m in {LATER!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_a_start_up_that_ends_without_serving_collects_garbage_again() -> None:
    assert main(["--prometheus-url=ftp://prometheus:9090"]) == 2  # refused before serving
    assert gc.isenabled()
