"""check-config on MetricRule manifests: the adapter's own verdicts, from its judging
workers, one line per object (the command run as a user runs it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support import python_m

GOOD = """\
apiVersion: promhpa.io/v1alpha1
kind: MetricRule
metadata: {name: good, namespace: shop}
spec: {metric: queue, query: "sum(jobs_waiting)"}
"""


def rule(name: str, query: str) -> str:
    return (
        "---\napiVersion: promhpa.io/v1alpha1\nkind: MetricRule\n"
        f'metadata: {{name: {name}, namespace: shop}}\nspec: {{metric: m_{name}, query: "{query}"}}\n'
    )


def check(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return python_m("adapter", "check-config", str(path), *flags, timeout=120)


def test_every_manifest_gets_its_verdict_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "rules.yaml"
    f.write_text(GOOD + rule("wide", "max_over_time(x[1d])") + rule("deep", "abs(" * 3000 + "x" + ")" * 3000))
    out = check(f)
    assert out.returncode == 2, out
    assert f"{f}:1: MetricRule shop/good: valid" in out.stdout
    errors = out.stderr.splitlines()
    assert errors[0].startswith(f"error: {f}:6: MetricRule shop/wide: Invalid")
    assert "--team-rule-max-range" in errors[0]
    assert errors[1].startswith(f"error: {f}:11: MetricRule shop/deep: Invalid")
    assert "--team-rule-max-query-length" in errors[1]
    assert "Traceback" not in out.stderr


def test_the_adapters_limit_flags_change_the_verdict_as_they_would_there(tmp_path: Path) -> None:
    f = tmp_path / "rules.yaml"
    f.write_text(rule("wide", "max_over_time(x[1d])"))
    assert check(f).returncode == 2
    assert check(f, "--team-rule-max-range=48h", "--team-rule-max-lookback=48h").returncode == 0
