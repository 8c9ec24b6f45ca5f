"""The opt-in fallback: what an HPA decides while its metrics cannot be read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.decision import history_to_wire
from controller.engine.fallback import ANNOTATION
from controller.engine.fallback import FallbackError
from controller.engine.fallback import parse_spec
from controller.engine.limiting import limiting_step

from .builders import external_metric
from .builders import snapshot

QPS = [external_metric("qps", average="10")]


def run(fallback: dict[str, Any] | str | None, *, current: int = 3, ok: str | None = None,
        history: dict[str, Any] | None = None, **kw: Any) -> Any:  # fmt: skip
    s = snapshot(current=current, metrics=QPS, external=[("qps", ok)] if ok else [],
                 history=history if history is not None else {"recommendations": []}, **kw)  # fmt: skip
    if fallback is not None:
        s["hpa"]["metadata"]["annotations"] = {
            ANNOTATION: fallback if isinstance(fallback, str) else json.dumps(fallback)
        }
    return decide(parse_snapshot(s))


def failing_since(t: str, **extra: Any) -> dict[str, Any]:
    return {"recommendations": [], "fallback": {"failingSince": t, **extra}}


def conditions(d: Any) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in d.status.get("conditions", [])}


def test_without_the_annotation_a_failed_metric_holds_the_count_as_upstream_does() -> None:
    d = run(None)
    assert (d.desired_replicas, d.rescale, d.fallback) == (3, False, "")
    assert "FallbackActive" not in conditions(d)
    assert "fallback" not in history_to_wire(d.history)


def test_a_fresh_failure_waits_out_failure_duration_and_remembers_when_it_began() -> None:
    d = run({"policy": "Static", "replicas": 6, "failureDurationSeconds": 60})
    assert (d.desired_replicas, d.rescale) == (3, False)
    assert history_to_wire(d.history)["fallback"] == {"failingSince": "2026-01-01T12:00:00Z"}
    assert any("fallback Static waits" in n for n in d.notes)


def test_static_proposes_its_replicas_once_the_failure_has_lasted() -> None:
    d = run({"policy": "Static", "replicas": 6, "failureDurationSeconds": 60},
            history=failing_since("2026-01-01T11:58:00Z"))  # fmt: skip
    assert (d.desired_replicas, d.rescale) == (6, True)
    assert conditions(d)["FallbackActive"] == ("True", "Static")
    assert conditions(d)["ScalingActive"][0] == "False"  # the metric did fail: said as upstream says it
    assert "metrics unavailable for 120s" in d.fallback
    assert limiting_step(d) == "fallback"


def test_hold_higher_keeps_the_larger_of_the_last_good_proposal_and_current() -> None:
    h = failing_since("2026-01-01T11:58:00Z", lastGood=5, lastGoodAt="2026-01-01T11:57:00Z")
    d = run({"policy": "HoldHigher", "failureDurationSeconds": 0}, history=h)
    assert d.desired_replicas == 5


def test_hold_lower_keeps_the_smaller_and_never_goes_to_zero() -> None:
    h = failing_since("2026-01-01T11:58:00Z", lastGood=0, lastGoodAt="2026-01-01T11:57:00Z")
    d = run({"policy": "HoldLower", "failureDurationSeconds": 0}, history=h, min_replicas=0)
    assert d.desired_replicas == 1


def test_a_stale_last_good_proposal_holds_the_current_count() -> None:
    h = failing_since("2026-01-01T11:58:00Z", lastGood=9, lastGoodAt="2026-01-01T10:00:00Z")
    d = run({"policy": "HoldHigher", "failureDurationSeconds": 0, "maxStalenessSeconds": 600}, history=h)
    assert d.desired_replicas == 3
    assert "stale" in d.fallback


def test_recovery_ends_the_fallback_and_remembers_the_good_proposal() -> None:
    stored = [{"type": "FallbackActive", "status": "True", "reason": "Static", "message": "x",
               "lastTransitionTime": "2026-01-01T11:59:00Z"}]  # fmt: skip
    d = run({"policy": "Static", "replicas": 6}, ok="40", history=failing_since("2026-01-01T11:58:00Z"),
            conditions=stored)  # fmt: skip
    assert "FallbackActive" not in conditions(d)
    assert history_to_wire(d.history)["fallback"] == {"lastGood": 4, "lastGoodAt": "2026-01-01T12:00:00Z"}
    assert d.fallback == ""


def test_the_memory_round_trips_through_a_snapshot() -> None:
    h = failing_since("2026-01-01T11:58:00Z", lastGood=5, lastGoodAt="2026-01-01T11:57:00Z")
    d = run({"policy": "HoldHigher"}, history=h)
    again = parse_snapshot(snapshot(history=history_to_wire(d.history))).history
    assert again.fallback == d.history.fallback


def test_an_invalid_annotation_is_ignored_with_a_note_and_upstream_decides() -> None:
    d = run({"policy": "Static"})
    assert (d.desired_replicas, d.rescale) == (3, False)
    assert any("fallback ignored" in n and "replicas" in n for n in d.notes)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("not json", "not JSON"),
        ('{"policy": "Sometimes"}', "policy"),
        ('{"policy": "Static", "replicas": 0}', "replicas"),
        ('{"policy": "HoldHigher", "replicas": 3}', "replicas"),
        ('{"policy": "Static", "replicas": 2, "failureDurationSeconds": -1}', "failureDurationSeconds"),
        ('{"policy": "Static", "replicas": 2, "after": 5}', "unknown key 'after'"),
    ],
)
def test_a_bad_annotation_names_the_key(text: str, names: str) -> None:
    with pytest.raises(FallbackError, match=names):
        parse_spec({ANNOTATION: text})
