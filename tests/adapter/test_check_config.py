"""``python -m adapter check-config``: validation alone, and what each rule would serve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import Exporter, PrometheusProcess, wait_until


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adapter", "check-config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bad_file_names_line_and_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("rules:\n- seriesQuery: x\n  metricsQuery: y\n  resources: {templte: <<.Resource>>}\n")
    out = run(str(cfg))
    assert out.returncode == 2
    assert f"{cfg}:4: rules[0].resources.templte: unknown key (did you mean 'template'?)" in out.stderr


def test_shows_metrics_and_queries_with_a_prometheus(
    tmp_path: Path, exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    exporter.set('cc_requests_total{namespace="default",pod="web-0"}', 5)
    wait_until(lambda: prometheus.query("cc_requests_total") != [], what="scrape")
    cfg = tmp_path / "ok.yaml"
    cfg.write_text("""rules:
- seriesQuery: '{__name__="cc_requests_total"}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
""")
    out = run(str(cfg), f"--prometheus-url={prometheus.url}")
    assert out.returncode == 0, out.stderr
    assert "pods/cc_requests_per_second" in out.stdout
    assert 'sum(rate(cc_requests_total{namespace="default",pod="example"}[2m])) by (pod)' in out.stdout
    assert "namespaces/cc_requests_per_second" in out.stdout
