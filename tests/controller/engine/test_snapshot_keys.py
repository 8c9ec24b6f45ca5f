"""Unknown keys at every level of a snapshot the engine reads, with the nearest known one."""

from __future__ import annotations

from pathlib import Path

import yaml

from controller.engine.snapshot_keys import unknown_keys

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def example() -> dict:  # type: ignore[type-arg]
    return dict(yaml.safe_load((EXAMPLES / "01-cpu-scale-up-with-warming-pod.yaml").read_text()))


def test_the_examples_have_no_unknown_key() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert unknown_keys(yaml.safe_load(path.read_text())) == [], path.name


def test_a_misspelt_behavior_field_is_named_with_its_path_and_the_nearest_key() -> None:
    snap = example()
    snap["hpa"]["spec"]["behavior"] = {"scaleDown": {"stabilizationWindowSecond": 60}}
    assert unknown_keys(snap) == [
        "hpa.spec.behavior.scaleDown.stabilizationWindowSecond: unknown key "
        "(did you mean 'stabilizationWindowSeconds'?)"
    ]


def test_unknown_keys_in_lists_are_named_with_their_index() -> None:
    snap = example()
    snap["podMetrics"][2]["containers"][0]["usgae"] = {"cpu": "1"}
    snap["history"]["recommendations"][0]["replica"] = 3
    assert unknown_keys(snap) == [
        "podMetrics[2].containers[0].usgae: unknown key (did you mean 'usage'?)",
        "history.recommendations[0].replica: unknown key (did you mean 'replicas'?)",
    ]


def test_a_pods_spec_and_status_labels_and_annotations_are_open() -> None:
    snap = example()
    snap["pods"][0]["spec"]["nodeName"] = "n1"
    snap["pods"][0]["status"]["hostIP"] = "10.0.0.1"
    snap["hpa"]["metadata"]["annotations"] = {"anything": "goes"}
    assert unknown_keys(snap) == []
