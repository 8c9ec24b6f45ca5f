"""The live decision is the offline one: what a reconcile read, typed directly
(``Observation.view``), equals the snapshot file of the same reads parsed back -- over the
differential corpus, the conformance cases (``test_conformance``) and a chain of reconciles
carrying their memory -- with no document made or parsed on the live path."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from controller.engine import decide
from controller.engine import parse_snapshot
from controller.engine.gates import GATES
from controller.engine.gates import GateError
from controller.engine.gates import resolve
from controller.engine.model import History
from controller.engine.model import Settings
from controller.engine.parse import parse_settings
from controller.engine.reader import _Reader
from controller.engine.versions import Release
from controller.live.assemble import settings_to_wire
from controller.live.pod_parses import PodParses
from tests.controller.engine.builders import external_metric
from tests.controller.engine.builders import pod
from tests.controller.engine.builders import snapshot
from tests.controller.live.observations import live_view
from tests.controller.live.observations import observation_of
from tests.differential.generate import Generator


def test_the_live_view_is_the_parsed_file_over_the_differential_corpus() -> None:
    gen, parses = Generator(7), PodParses()
    for i in range(1500):
        doc = gen.snapshot()
        view = live_view(doc, parses)
        assert view == parse_snapshot(doc), f"snapshot {i} (seed 7)"
        assert decide(view).to_wire() == decide(parse_snapshot(doc)).to_wire(), f"snapshot {i} (seed 7)"


def test_the_snapshot_command_writes_what_the_live_view_decides_on() -> None:
    gen, parses = Generator(11), PodParses()
    for i in range(500):
        seen = observation_of(gen.snapshot())
        assert parse_snapshot(seen.document()) == seen.view(parses), f"snapshot {i} (seed 11)"


def chain(live: bool, steps: int = 40) -> list[dict[str, Any]]:
    """Reconciles of one HPA on a swinging external metric, each given the last one's
    memory: typed (live) or written out and read back (offline)."""
    start = datetime(2024, 1, 1, tzinfo=UTC)
    history, replicas, out, parses = History(), 3, [], PodParses()
    for i in range(steps):
        now = start + timedelta(seconds=15 * i)
        value = str([150, 900, 80, 20, 600, 10][i % 6] * 10)
        doc = snapshot(
            current=replicas,
            metrics=[external_metric(average="100")],
            external=[("qps", value)],
            pods=[pod(f"web-{j}") for j in range(replicas)],
            max_replicas=200,
            behavior={"scaleDown": {"stabilizationWindowSeconds": 60}},
        )
        seen = replace(observation_of(doc), now=now, history=history)
        seen.metrics["externalMetrics"][0]["timestamp"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        d = decide(seen.view(parses) if live else parse_snapshot(seen.document()))
        out.append(d.to_wire())
        history = d.history
        replicas = d.desired_replicas if d.rescale else replicas
    return out


def test_a_chain_of_reconciles_with_their_memory_decides_the_same_live() -> None:
    live, offline = chain(live=True), chain(live=False)
    assert live == offline
    last = offline[-1]["history"]
    assert last["scaleUpEvents"]  # the memory did its work
    assert last["scaleDownEvents"]
    assert len(last["recommendations"]) > 1


def test_the_flags_settings_survive_the_snapshot_file() -> None:
    """Live decides on the Settings its flags made; a saved snapshot replays them as read
    back from its ``controller`` block: equal, at every release and gate setting."""
    checked = 0
    for minor in range(33, 39):
        for bits in itertools.product((None, True, False), repeat=len(GATES)):
            wanted = {name: b for name, b in zip(GATES, bits, strict=True) if b is not None}
            try:
                gates = resolve(Release(minor), wanted)
            except GateError:
                continue  # that release's kube-controller-manager refuses it: no such flags
            for tolerance, period in ((0.1, timedelta(minutes=5)), (0.25, timedelta(milliseconds=1500))):
                s = Settings(tolerance=tolerance, cpu_initialization_period=period, feature_gates=gates,
                             release=Release(minor))  # fmt: skip
                assert parse_settings(_Reader(settings_to_wire(s), "controller")) == s, (minor, wanted)
                checked += 1
    assert checked > 1000
