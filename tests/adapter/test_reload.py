"""Rules change without a restart: the adapter re-reads its rule file when it changes, as
the kubelet updates a mounted ConfigMap (an atomic swap), and refuses a broken one."""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

PODS = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/rl/pods/p1"


def rule(metric: str) -> str:
    return f"""
- seriesQuery: '{{__name__="{metric}",namespace!="",pod!=""}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
"""


@pytest.fixture
def adapter(exporter: Exporter, prometheus: PrometheusProcess, tmp_path: Path) -> Iterator[AdapterProcess]:
    exporter.set('reload_old{namespace="rl",pod="p1"}', 1)
    exporter.set('reload_new{namespace="rl",pod="p1"}', 2)
    wait_until(lambda: prometheus.query("reload_new") != [], what="scrape")
    a = start_adapter(
        tmp_path,
        prometheus.url,
        "rules:" + rule("reload_old"),
        "--config-reload-interval=0.5s",
        "--query-cache-ttl=0s",
    )
    yield a
    stop_adapter(a)


def swap(path: Path, text: str) -> None:
    """As the kubelet updates a ConfigMap volume: the new file appears whole, at once."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def reloads(a: AdapterProcess, result: str) -> float:
    with urllib.request.urlopen(a.url + "/metrics", context=a.ctx, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(f'promhpa_adapter_rules_reloads_total{{result="{result}"}}'):
                return float(line.split()[-1])
    return 0.0


def test_a_rule_edit_is_served_without_a_restart(adapter: AdapterProcess, tmp_path: Path) -> None:
    assert adapter.get(f"{PODS}/reload_old")[0] == 200
    assert adapter.get(f"{PODS}/reload_new")[0] == 404
    pid = adapter.proc.pid
    swap(tmp_path / "adapter.yaml", "rules:" + rule("reload_old") + rule("reload_new"))
    wait_until(lambda: adapter.get(f"{PODS}/reload_new")[0] == 200, timeout=15, what="the new rule served")
    assert adapter.get(f"{PODS}/reload_new")[1]["items"][0]["value"] == "2"
    assert (adapter.proc.pid, adapter.proc.poll()) == (pid, None)
    assert reloads(adapter, "success") == 1


def test_a_broken_edit_changes_nothing(adapter: AdapterProcess, tmp_path: Path) -> None:
    swap(tmp_path / "adapter.yaml", "rules:" + rule("reload_old").replace("metricsQuery", "metricQuery"))
    wait_until(lambda: reloads(adapter, "error") == 1, timeout=15, what="the refusal counted")
    assert adapter.get(f"{PODS}/reload_old")[0] == 200  # the old rules still serve
    with urllib.request.urlopen(adapter.url + "/readyz", context=adapter.ctx, timeout=5) as r:
        assert r.status == 200  # readiness unchanged: the old rules are fine
    log = adapter.log.read_text()
    assert "rule file refused; still serving the previous rules" in log
    assert "adapter.yaml:" in log
    assert "metricQuery" in log  # the offending key, with its line


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            "rules:\n"
            + "".join(
                f"- a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9)
            ).replace("*a0", "x"),
            "aliases expand",
        ),
        ("rules: " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
        ("rules: []\n#" + "x" * (5 * 2**20) + "\n", "larger than the input limit"),
        ("rules: [caf\xe9]\n", "not UTF-8"),
    ],
    ids=["aliases", "depth", "size", "latin-1"],
)
def test_an_edit_over_the_input_bounds_keeps_the_old_rules(
    adapter: AdapterProcess, tmp_path: Path, edit: str, said: str
) -> None:
    """The server reads its rule file through the same bounded loader as check-config: a
    hostile edit is refused like a broken one, and the old rules go on serving."""
    path = tmp_path / "adapter.yaml"
    tmp = path.with_suffix(".new")
    tmp.write_bytes(edit.encode("latin-1"))
    os.replace(tmp, path)
    wait_until(lambda: reloads(adapter, "error") == 1, timeout=15, what="the refusal counted")
    assert adapter.get(f"{PODS}/reload_old")[0] == 200
    assert (adapter.proc.poll(), said in adapter.log.read_text()) == (None, True)
