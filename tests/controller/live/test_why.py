"""The leader's memory of each HPA's distinct decisions (``controller.live.why``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.live.why import Owner
from controller.live.why import WhyLog
from controller.live.why import changes
from tests.controller.engine.builders import pod_metrics
from tests.controller.engine.builders import snapshot


def decided(usage: str, current: int = 3, seconds: int = 0, **kw: Any) -> tuple[Any, Any]:
    s = parse_snapshot(
        snapshot(current=current, pod_metrics_=[pod_metrics(f"web-{i}", usage) for i in range(current)], **kw)
    )
    from dataclasses import replace

    s = replace(s, now=s.now + timedelta(seconds=seconds))
    return s, decide(s)


def test_a_repeated_decision_extends_its_entry_instead_of_adding_one() -> None:
    log = WhyLog()
    for t in range(5):
        log.record(("ns", "web"), *decided("500m", seconds=t * 15), mode="active")
    (entry,) = log.entries[("ns", "web")]
    assert entry.count == 5
    assert (entry.last - entry.first).total_seconds() == 60


def test_a_new_decision_says_what_changed() -> None:
    log = WhyLog()
    log.record(("ns", "web"), *decided("500m"), mode="active")
    second = log.record(("ns", "web"), *decided("1", seconds=15), mode="active")
    assert "Resource cpu proposes 3 -> 6" in second.changes
    assert "desired replicas 3 -> 6" in second.changes
    assert "limiting step tolerance -> none" in second.changes


def test_only_the_last_size_distinct_decisions_are_kept() -> None:
    log = WhyLog(size=2)
    for i, usage in enumerate(("500m", "1", "2")):
        log.record(("ns", "web"), *decided(usage, seconds=i * 15), mode="active")
    kept = log.entries[("ns", "web")]
    assert [e.summary["proposals"][0]["replicas"] for e in kept] == [6, 12]  # the first (3) is gone


def test_the_wire_form_keeps_the_newest_n_and_the_explanation() -> None:
    log = WhyLog()
    for i, usage in enumerate(("500m", "1")):
        log.record(("ns", "web"), *decided(usage, seconds=i * 15), mode="active")
    doc = log.to_wire(("ns", "web"), last=1)
    assert doc is not None
    (item,) = doc["items"]
    assert item["desiredReplicas"] == 6
    assert "limiting step: none" in item["explanation"]
    assert log.to_wire(("ns", "other")) is None


def test_an_owner_that_changes_its_mind_is_a_new_entry_in_shadow_mode() -> None:
    log = WhyLog()
    s, d = decided("500m")
    log.record(
        ("ns", "web"), s, d, mode="shadow", owner=Owner(3, {"AbleToScale": "ReadyForNewScale"}, True, [])
    )
    e = log.record(
        ("ns", "web"), s, d, mode="shadow", owner=Owner(4, {"AbleToScale": "SucceededRescale"}, False, ["x"])
    )
    assert e.count == 1
    assert "the owner's status changed" in e.changes


def test_changes_between_equal_summaries_are_none() -> None:
    _, d = decided("500m")
    from controller.live.why import summarize

    assert changes(summarize(d), summarize(d)) == []
