"""The benchmark tables in docs/ are the benchmarks' own output, not hand edits."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest

from benchmarks import bench_controller
from benchmarks import reaction
from benchmarks import scale_adapter
from benchmarks import scale_controller
from benchmarks import side_by_side
from benchmarks.doc_tables import SectionError
from benchmarks.doc_tables import markers
from benchmarks.doc_tables import render
from benchmarks.doc_tables import section
from benchmarks.doc_tables import update_section

ROOT = Path(__file__).resolve().parents[2]
TABLES = [
    ("docs/adapter.md", "bench-adapter", "benchmarks.side_by_side", side_by_side.HEADER),
    ("docs/controller.md", "bench-controller", "benchmarks.bench_controller", bench_controller.HEADER),
    ("docs/benchmarks.md", "bench-scale-controller", "benchmarks.scale", scale_controller.HEADER),
    ("docs/benchmarks.md", "bench-scale-cores", "benchmarks.scale", scale_controller.CORES_HEADER),
    ("docs/benchmarks.md", "bench-scale-discovery", "benchmarks.scale", scale_adapter.DISCOVERY_HEADER),
    ("docs/benchmarks.md", "bench-scale-pods", "benchmarks.scale", scale_adapter.PODS_HEADER),
    ("docs/benchmarks.md", "bench-reaction", "benchmarks.reaction", reaction.HEADER),
]


@pytest.mark.parametrize(("page", "name", "module", "header"), TABLES, ids=[t[1] for t in TABLES])
def test_each_docs_table_is_its_benchmarks_output_with_the_command_that_made_it(
    page: str, name: str, module: str, header: str
) -> None:
    text = section((ROOT / page).read_text(), name)
    lines = text.splitlines()
    assert lines[0].startswith(f"Made by `python -m {module}"), lines[0]
    assert "--update-docs" in lines[0]
    assert header in lines, f"{page}: the table's header is not the benchmark's own"


def test_both_competitors_limits_are_labelled_in_every_adapter_row() -> None:
    text = section((ROOT / "docs/adapter.md").read_text(), "bench-adapter")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| path")]
    labels = {ln.split("|")[8].strip() for ln in rows}
    assert labels == set(side_by_side.LIMITS.values())


def test_both_client_limits_are_rows_of_the_controller_table() -> None:
    text = section((ROOT / "docs/controller.md").read_text(), "bench-controller")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| HPAs")]
    labels = {ln.split("|")[3].strip() for ln in rows}
    assert labels == {bench_controller.LIMITS[k][0] for k in ("default", "raised")}


def test_the_scale_table_has_both_client_limits_and_the_raised_worker_count() -> None:
    text = section((ROOT / "docs/benchmarks.md").read_text(), "bench-scale-controller")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| HPAs")]
    labels = {ln.split("|")[3].strip() for ln in rows}
    assert labels == {label for label, _ in bench_controller.LIMITS.values()}


def test_updating_a_section_replaces_only_what_lies_between_its_markers(tmp_path: Path) -> None:
    begin, end = markers("demo")
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\nbefore\n{begin}\nold table\n{end}\nafter\n")
    update_section(page, "demo", "python -m benchmarks.demo --update-docs", ["| a |", "|---|"])
    text = page.read_text()
    assert text.startswith("# Title\n\nbefore\n")
    assert text.endswith(f"{end}\nafter\n")
    assert "old table" not in text
    assert section(text, "demo").splitlines()[2:] == ["| a |", "|---|"]


def test_a_page_without_the_markers_is_refused_naming_the_lines_to_add(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("no markers here\n")
    with pytest.raises(SectionError) as e:
        update_section(page, "demo", "cmd", ["x"])
    assert markers("demo")[0] in str(e.value)
    assert page.read_text() == "no markers here\n"


def test_a_rendered_section_names_its_command_and_day() -> None:
    out = render("python -m benchmarks.x --rounds 1", ["t"], datetime(2026, 11, 25, tzinfo=UTC))
    assert out.splitlines()[0] == "Made by `python -m benchmarks.x --rounds 1` on 2026-11-25:"


CONTROLLER_KEYS = {"run", "hpas", "controller", "setting", "reconciles_per_s", "p99_lag_s",
                   "cpu_ms_per_reconcile", "peak_rss_mib", "api_requests_per_s"}  # fmt: skip
SIDE_BY_SIDE_KEYS = {"path", "cpu_ms_per_request", "prometheus_adapter_cpu_ms_per_request", "ratio", "p99_ms"}


def test_the_scale_figures_are_in_benchmarks_json_as_the_issue_names_them() -> None:
    import json

    held = json.loads((ROOT / "docs/benchmarks.json").read_text())
    windows = held["controller"]
    assert windows, "make bench-scale ARGS=--update-docs writes them"
    for w in windows:
        assert set(w) >= CONTROLLER_KEYS, w
        assert w["run"] in (1, 2, 3)
        assert w["controller"] in ("promhpa", "kube-controller-manager")
        assert (w["p99_lag_s"] is None) == bool(w.get("over_range")), w
    for p in held.get("side_by_side", []):
        assert set(p) >= SIDE_BY_SIDE_KEYS, p


def test_the_reaction_figures_hold_every_autoscaler_over_at_least_50_steps() -> None:
    import json

    held = json.loads((ROOT / "docs/benchmarks.json").read_text())["reaction"]
    runs: dict[str, list[str]] = {}
    for r in held:
        runs.setdefault(r["query_cache_ttl"], []).append(r["autoscaler"])
    assert "5s" in runs, "the adapter's default query cache is measured"
    for autoscalers in runs.values():
        assert autoscalers == [t.label for t in reaction.TARGETS]
    for r in held:
        assert r["steps"] >= 50, r
        assert 0 < r["p50_s"] <= r["p99_s"] <= r["max_s"], r


def test_a_reaction_quantile_is_a_measured_step_time() -> None:
    times = [float(n) for n in range(1, 51)]
    assert reaction.quantile(times, 0.5) == 25.0
    assert reaction.quantile(times, 0.99) == 50.0
    assert reaction.quantile([3.0], 0.5) == 3.0


def test_figures_of_a_rerun_replace_that_runs_and_keep_the_others(tmp_path: Path) -> None:
    from benchmarks.doc_tables import update_figures

    path = tmp_path / "figures.json"
    update_figures("controller", [{"run": 1, "x": 1}, {"run": 2, "x": 2}], lambda _: True, path)
    held = update_figures("controller", [{"run": 2, "x": 3}], lambda r: r["run"] == 2, path)
    assert held == [{"run": 1, "x": 1}, {"run": 2, "x": 3}]


def test_the_scale_run_measures_50_workers_at_the_goal_size_and_only_them_past_it() -> None:
    sizes, every = [1000, 5000, 10000, 20000], ["default", "raised", "workers"]
    assert scale_controller.limits_at(1000, sizes, every) == ["default", "raised"]
    assert scale_controller.limits_at(10000, sizes, every) == every
    assert scale_controller.limits_at(20000, sizes, every) == ["workers"]
    assert scale_controller.limits_at(5000, [1000, 5000], every) == every  # the largest size asked


def test_each_window_shows_every_process_cores_and_their_total() -> None:
    r = scale_controller.Result(1, 1, 1, 1, None, 1, 1, 1, 1, {"apiserver": 0.5, "measured controller": 0.25})
    row = scale_controller.cores_row(10000, "qps 1000", "promhpa", r)
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = [c.strip() for c in scale_controller.CORES_HEADER.strip("|").split("|")]
    assert len(cells) == len(header)
    assert dict(zip(header, cells, strict=True)) == {
        **dict.fromkeys(header[3:-1], "0.00"),
        "HPAs": "10000", "client limits": "qps 1000", "controller": "promhpa",
        "measured controller": "0.25", "kube-apiserver": "0.50", "total": "0.75",
    }  # fmt: skip
