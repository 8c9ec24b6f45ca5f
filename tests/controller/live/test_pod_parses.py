"""PodParses: the live controller converts each of the informer's pod objects once."""

from __future__ import annotations

from typing import Any

import pytest

from controller.engine import SnapshotError
from controller.engine import decide
from controller.engine import parse_snapshot
from controller.live.pod_parses import PodParses
from tests.controller.engine.builders import pod
from tests.controller.engine.builders import pod_metrics
from tests.controller.engine.builders import snapshot
from tests.controller.live.observations import observation_of


def cpu_snapshot(pods: list[dict[str, Any]]) -> dict[str, Any]:
    names = [p["metadata"].get("name", "") for p in pods]
    return snapshot(pods=pods, pod_metrics_=[pod_metrics(n, "900m") for n in names if n])


def test_the_same_pod_object_is_parsed_once() -> None:
    parses, pods = PodParses(), [pod("a"), pod("b")]
    first, second = parses.pods(pods), parses.pods(pods)
    assert all(x is y for x, y in zip(first, second, strict=True))


def test_a_replaced_pod_object_is_parsed_again() -> None:
    """The informer replaces a changed pod's object; the new readiness must be seen."""
    parses = PodParses()
    ready = [pod("a"), pod("b")]
    assert decide(observation_of(cpu_snapshot(ready)).view(parses)).desired_replicas == 4
    changed = [ready[0], pod("b", ready="False")]  # same name, new object
    view = observation_of(cpu_snapshot(changed)).view(parses)
    assert view.pods[1].ready_condition is not None
    assert view.pods[1].ready_condition[0] == "False"
    assert decide(view).to_wire() == decide(parse_snapshot(cpu_snapshot(changed))).to_wire()


def test_a_malformed_pod_is_refused_as_a_snapshot_file_refuses_it() -> None:
    bad = pod("a")
    bad["status"] = {"startTime": "yesterday"}
    with pytest.raises(SnapshotError) as offline:
        parse_snapshot(cpu_snapshot([bad]))
    with pytest.raises(SnapshotError) as live:
        PodParses().pods([bad])
    assert str(live.value) == str(offline.value)
    assert live.value.path == "pods[0].status.startTime"


def test_a_pod_without_a_usable_name_is_parsed_every_time() -> None:
    nameless = pod("a")
    nameless["metadata"] = {"namespace": "ns"}
    parses = PodParses()
    assert parses.pods([nameless])[0] is not parses.pods([nameless])[0]


def test_the_table_is_bounded() -> None:
    parses = PodParses(limit=2)
    pods = [pod("a"), pod("b"), pod("c")]
    assert parses.pods(pods) == parses.pods(pods)  # equal pods whatever was evicted
    assert len(parses._pods) <= 2


def test_pods_sharing_one_spec_object_share_its_parse_and_decide_the_same() -> None:
    """The informer's pods of one template share their spec (``pod_fields``); their Pods
    share its containers, and the decision is the one a snapshot file gives."""
    a, b = pod("a"), pod("b")
    b["spec"] = a["spec"]
    view = observation_of(cpu_snapshot([a, b])).view(PodParses())
    assert view.pods[0].containers is view.pods[1].containers
    assert decide(view).to_wire() == decide(parse_snapshot(cpu_snapshot([a, b]))).to_wire()
