"""ParseMemo: the live controller parses what did not change since the last reconcile once."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest

from controller.engine import ParseMemo
from controller.engine import SnapshotError
from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.decision import history_to_wire
from controller.engine.model import History
from controller.engine.model import Recommendation
from controller.engine.model import ScaleEvent
from shared.durations import format_time

from .builders import NOW
from .builders import external_metric
from .builders import pod
from .builders import pod_metrics
from .builders import snapshot


def cpu_snapshot(pods: list[dict[str, Any]]) -> dict[str, Any]:
    names = [p["metadata"].get("name", "") for p in pods]
    return snapshot(pods=pods, pod_metrics_=[pod_metrics(n, "900m") for n in names if n])


def test_the_same_pod_object_is_parsed_once() -> None:
    memo, pods = ParseMemo(), [pod("a"), pod("b")]
    first = parse_snapshot(cpu_snapshot(pods), memo).pods
    second = parse_snapshot(cpu_snapshot(pods), memo).pods
    assert all(x is y for x, y in zip(first, second, strict=True))


def test_a_replaced_pod_object_is_parsed_again() -> None:
    """The informer replaces a changed pod's object; the new readiness must be seen."""
    memo = ParseMemo()
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
        parse_snapshot(cpu_snapshot([bad]), ParseMemo())
    assert str(memoized.value) == str(plain.value)


def test_a_pod_without_a_usable_name_is_parsed_every_time() -> None:
    nameless = pod("a")
    nameless["metadata"] = {"namespace": "ns"}
    memo = ParseMemo()
    first = parse_snapshot(cpu_snapshot([nameless]), memo).pods[0]
    assert parse_snapshot(cpu_snapshot([nameless]), memo).pods[0] is not first


def test_the_memo_is_bounded() -> None:
    memo = ParseMemo(limit=2)
    pods = [pod("a"), pod("b"), pod("c")]
    first = parse_snapshot(cpu_snapshot(pods), memo).pods
    again = parse_snapshot(cpu_snapshot(pods), memo).pods
    assert again == first  # equal decisions whatever was evicted
    assert len(memo._pods) <= 2


def external_chain(memo: ParseMemo | None, steps: int = 40) -> list[dict[str, Any]]:
    """Reconciles of one HPA on a swinging external metric, each fed the last one's memory
    (through the memo's documents, or written out and read back as offline)."""
    start = datetime(2024, 1, 1, tzinfo=UTC)
    history, replicas, out = History(), 3, []
    for i in range(steps):
        now = format_time(start + timedelta(seconds=15 * i))
        value = str([150, 900, 80, 20, 600, 10][i % 6] * 10)
        snap = snapshot(
            current=replicas,
            metrics=[external_metric(average="100")],
            external=[("qps", value)],
            pods=[pod(f"web-{j}") for j in range(replicas)],
            max_replicas=200,
            behavior={"scaleDown": {"stabilizationWindowSeconds": 60}},
        )
        snap["now"] = now
        snap["externalMetrics"][0]["timestamp"] = now
        snap["history"] = (
            memo.history_wire(("ns", "web"), history) if memo is not None else history_to_wire(history)
        )
        d = decide(parse_snapshot(snap, memo))
        out.append(d.to_wire())
        history = d.history
        replicas = d.desired_replicas if d.rescale else replicas
    return out


def test_decisions_over_many_reconciles_are_the_same_with_the_memo() -> None:
    with_memo, without = external_chain(ParseMemo()), external_chain(None)
    assert with_memo == without
    last = without[-1]["history"]
    assert last["scaleUpEvents"]  # the memory did its work
    assert last["scaleDownEvents"]
    assert len(last["recommendations"]) > 1


def test_the_memos_history_document_is_the_one_history_to_wire_writes() -> None:
    memo = ParseMemo()
    t = datetime(2024, 1, 1, tzinfo=UTC)
    recs = tuple(Recommendation(i, t + timedelta(seconds=15 * i)) for i in range(5))
    up = (ScaleEvent(2, t), ScaleEvent(1, t + timedelta(seconds=30), outdated=True))
    first = History(recs, up, ())
    first_doc = memo.history_wire(("ns", "a"), first)
    assert first_doc == history_to_wire(first)
    second = History((*recs[1:], Recommendation(9, t + timedelta(minutes=5))), up, (ScaleEvent(-3, t),))
    doc = memo.history_wire(("ns", "a"), second)
    assert doc == history_to_wire(second)
    assert doc["recommendations"][0] is first_doc["recommendations"][1]  # unchanged: not written again


def test_a_history_document_from_the_memo_is_taken_not_read() -> None:
    memo = ParseMemo()
    history = History((Recommendation(4, datetime(2024, 1, 1, tzinfo=UTC)),))
    snap = snapshot()
    snap["history"] = memo.history_wire(("ns", "web"), history)
    assert parse_snapshot(snap, memo).history is history


def test_any_other_history_document_is_read_as_written() -> None:
    """Another document for the same HPA (a saved snapshot, an edited one) is parsed: the
    memo answers only for the very object it made."""
    memo = ParseMemo()
    history = History((Recommendation(4, datetime(2024, 1, 1, tzinfo=UTC)),))
    made = memo.history_wire(("ns", "web"), history)
    snap = snapshot()
    snap["history"] = {**made, "recommendations": [{"replicas": 7, "timestamp": NOW}]}
    parsed = parse_snapshot(snap, memo).history
    assert parsed.recommendations is not None
    assert [r.replicas for r in parsed.recommendations] == [7]


def test_a_forgotten_hpas_document_is_read_again() -> None:
    memo = ParseMemo()
    history = History((Recommendation(4, datetime(2024, 1, 1, tzinfo=UTC)),))
    snap = snapshot()
    snap["history"] = memo.history_wire(("ns", "web"), history)
    memo.forget(("ns", "web"))
    parsed = parse_snapshot(snap, memo).history
    assert parsed == history
    assert parsed is not history


def test_the_same_settings_document_is_parsed_once_and_another_anew() -> None:
    memo = ParseMemo()
    controller = {"tolerance": 0.2, "cpuInitializationPeriod": "2m"}
    first = parse_snapshot(snapshot(controller=controller), memo).settings
    assert parse_snapshot(snapshot(controller=controller), memo).settings is first
    other = parse_snapshot(snapshot(controller={**controller, "tolerance": 0.3}), memo).settings
    assert other.tolerance == 0.3


def test_pods_sharing_one_spec_object_share_its_parse_and_decide_the_same() -> None:
    """The informer's pods of one template share their spec (``pod_fields``); their Pods
    share its containers, and the decision is the one made without the memo."""
    a, b = pod("a"), pod("b")
    b["spec"] = a["spec"]
    memo = ParseMemo()
    parsed = parse_snapshot(cpu_snapshot([a, b]), memo)
    assert parsed.pods[0].containers is parsed.pods[1].containers
    assert decide(parsed).to_wire() == decide(parse_snapshot(cpu_snapshot([a, b]))).to_wire()
