"""PodMemo: the live controller parses each informer pod object once per change."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import PodMemo, SnapshotError, decide, parse_snapshot

from .builders import pod, pod_metrics, snapshot


def cpu_snapshot(pods: list[dict[str, Any]]) -> dict[str, Any]:
    names = [p["metadata"].get("name", "") for p in pods]
    return snapshot(pods=pods, pod_metrics_=[pod_metrics(n, "900m") for n in names if n])


def test_the_same_pod_object_is_parsed_once() -> None:
    memo, pods = PodMemo(), [pod("a"), pod("b")]
    first = parse_snapshot(cpu_snapshot(pods), memo).pods
    second = parse_snapshot(cpu_snapshot(pods), memo).pods
    assert all(x is y for x, y in zip(first, second, strict=True))


def test_a_replaced_pod_object_is_parsed_again() -> None:
    """The informer replaces a changed pod's object; the new readiness must be seen."""
    memo = PodMemo()
    ready = [pod("a"), pod("b")]
    assert decide(parse_snapshot(cpu_snapshot(ready), memo)).desired_replicas == 4
    changed = [ready[0], pod("b", ready="False")]  # same name, new object
    parsed = parse_snapshot(cpu_snapshot(changed), memo)
    assert parsed.pods[1].ready_condition is not None
    assert parsed.pods[1].ready_condition[0] == "False"
    assert decide(parsed).to_wire() == decide(parse_snapshot(cpu_snapshot(changed))).to_wire()


def test_a_malformed_pod_is_refused_as_without_the_memo() -> None:
    bad = pod("a")
    bad["status"] = {"startTime": "yesterday"}
    with pytest.raises(SnapshotError) as plain:
        parse_snapshot(cpu_snapshot([bad]))
    with pytest.raises(SnapshotError) as memoized:
        parse_snapshot(cpu_snapshot([bad]), PodMemo())
    assert str(memoized.value) == str(plain.value)


def test_a_pod_without_a_usable_name_is_parsed_every_time() -> None:
    nameless = pod("a")
    nameless["metadata"] = {"namespace": "ns"}
    memo = PodMemo()
    first = parse_snapshot(cpu_snapshot([nameless]), memo).pods[0]
    assert parse_snapshot(cpu_snapshot([nameless]), memo).pods[0] is not first


def test_the_memo_is_bounded() -> None:
    memo = PodMemo(limit=2)
    pods = [pod("a"), pod("b"), pod("c")]
    first = parse_snapshot(cpu_snapshot(pods), memo).pods
    again = parse_snapshot(cpu_snapshot(pods), memo).pods
    assert again == first  # equal decisions whatever was evicted
    assert len(memo._memo) <= 2
