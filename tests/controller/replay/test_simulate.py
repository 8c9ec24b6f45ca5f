"""The replay's closed loop, summary and picture on plain data (no Prometheus)."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.engine.model import Settings
from controller.replay.plot import plot
from controller.replay.report import as_csv
from controller.replay.report import summarize
from controller.replay.simulate import Step
from controller.replay.variants import moment
from controller.replay.variants import replay
from controller.replay.variants import set_path
from localcluster.manifests import hpa_manifest
from localcluster.manifests import pods_metric

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
SYNC = timedelta(seconds=3)


def hpa(target: str = "10", window: int = 15, max_replicas: int = 8) -> dict[str, Any]:
    h = hpa_manifest("demo", "shop", pods_metric("rps", target), max_replicas=max_replicas)
    h["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": window}}
    return h


def curve(*phases: tuple[float | None, int]) -> list[Step]:
    """(total load, syncs) phases as recorded steps."""
    steps, i = [], 0
    for load, n in phases:
        for _ in range(n):
            steps.append(Step(T0 + i * SYNC, (load,)))
            i += 1
    return steps


def run(h: dict[str, Any], steps: list[Step], startup: float = 1.0) -> list[Any]:
    return replay(h, steps, Settings(), timedelta(seconds=startup), {}, 1)


def test_total_load_is_spread_over_the_simulated_ready_pods() -> None:
    out = run(hpa(), curve((65, 12)))
    assert [o.replicas for o in out][:5] == [5, 5, 5, 5, 5]  # the default scale-up limit: 4 pods
    assert out[-1].replicas == 7
    assert out[-1].load == pytest.approx(65 / 7, abs=0.001)


def test_scale_down_waits_out_the_stabilization_window_then_follows_the_load() -> None:
    out = run(hpa(window=15), curve((65, 12), (8, 10)))
    downs = [i for i, o in enumerate(out) if o.rescaled < 0]
    assert downs == [12 + 4]  # the last high recommendation (step 11) leaves the 15 s window
    assert all(o.held == "ScaleDownStabilized" for o in out[12:16])
    assert out[-1].replicas == 1


def test_new_pods_count_only_after_they_become_ready() -> None:
    out = run(hpa(), curve((65, 3)), startup=5.0)
    assert [o.ready for o in out] == [1, 1, 5]  # created at the first sync, ready 5 s later


def test_a_gap_in_the_history_never_scales_down() -> None:
    out = run(hpa(window=0), curve((65, 12), (None, 5)))
    assert {o.replicas for o in out[12:]} == {7}
    assert all(o.load is None for o in out[12:])


def test_a_second_spec_changes_the_pod_hours_as_expected() -> None:
    steps = curve((5, 5), (65, 20), (8, 20))
    a = summarize("A", run(hpa(target="10"), steps), SYNC, 8)
    b = summarize("B", run(set_hpa(hpa(), "metrics[0].pods.target.averageValue=20"), steps), SYNC, 8)
    assert b.pod_hours < a.pod_hours
    assert (a.peak, b.peak) == (7, 4)
    assert a.scale_ups >= 1
    assert a.scale_downs >= 1


def set_hpa(h: dict[str, Any], assignment: str) -> dict[str, Any]:
    return {**h, "spec": set_path(h["spec"], assignment)}


def test_set_paths_reach_nested_fields_and_list_items() -> None:
    spec = hpa()["spec"]
    assert set_path(spec, "behavior.scaleDown.stabilizationWindowSeconds=60")["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 60
    }
    assert (
        set_path(spec, "metrics[0].pods.target.averageValue=20")["metrics"][0]["pods"]["target"][
            "averageValue"
        ]
        == 20
    )
    assert set_path(spec, "behavior.scaleUp.selectPolicy=Disabled")["behavior"]["scaleUp"] == {
        "selectPolicy": "Disabled"
    }
    assert spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 15  # a copy
    with pytest.raises(ValueError, match="no element"):
        set_path(spec, "metrics[3].pods.target.averageValue=1")
    with pytest.raises(ValueError, match="PATH=VALUE"):
        set_path(spec, "minReplicas")


def test_times_read_relative_and_absolute() -> None:
    assert moment("-7d", T0) == T0 - timedelta(days=7)
    assert moment("-90m", T0) == T0 - timedelta(minutes=90)
    assert moment("now", T0) == T0
    assert moment("2026-11-20T00:00:00Z", T0) == datetime(2026, 11, 20, tzinfo=UTC)


def test_csv_has_one_row_per_variant_and_sync() -> None:
    steps = curve((65, 4))
    text = as_csv({"A": run(hpa(), steps), "B": run(hpa(target="20"), steps)})
    lines = text.strip().splitlines()
    assert lines[0].startswith("variant,time,replicas")
    assert len(lines) == 1 + 8


def test_picture_draws_every_series(tmp_path: Path) -> None:
    import matplotlib.image

    steps = [Step(s.at, s.totals, 1) for s in curve((5, 5), (65, 20), (8, 20))]
    variants = {"A": run(hpa(), steps), "B": run(hpa(window=60), steps)}
    drawn = plot(variants, tmp_path / "replay.png", "replay of shop")
    assert drawn == [
        "A: metric", "A: replicas", "A: held back", "B: metric", "B: replicas", "B: held back", "target",
        "real replicas",
    ]  # fmt: skip
    image = matplotlib.image.imread(tmp_path / "replay.png")
    assert image.shape[:2] == (650, 1100)
    assert (image[..., :3] < 0.9).any()  # not blank


def test_an_hpa_of_promhpas_own_kind_is_replayed_with_its_knobs() -> None:
    ours = {**hpa(), "apiVersion": "autoscaling.promhpa.io/v2"}
    ours["spec"] = {**ours["spec"], "controller": {"tolerance": 0.5}}
    # 12 per pod against a target of 10 is outside the default 10 % and inside 50 %
    assert run(hpa(), curve((12, 4)))[-1].replicas == 2
    assert run(ours, curve((12, 4)))[-1].replicas == 1
