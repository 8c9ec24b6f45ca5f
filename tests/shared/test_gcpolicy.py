"""freeze_startup_heap: what lives at start-up leaves the collector's passes; cycles made
afterwards are still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from shared.gcpolicy import freeze_startup_heap
from shared.gcpolicy import pause_collection
from shared.gcpolicy import resume_collection


@pytest.fixture
def unfrozen() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_startup_heap_is_frozen(unfrozen: None) -> None:
    kept = [Node() for _ in range(100)]
    frozen = freeze_startup_heap()
    assert frozen >= len(kept)
    # the objects live at the freeze are in the permanent generation, which no pass (and
    # gc.get_objects) sees; the count itself may move as other threads free frozen objects
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(node) in tracked for node in kept)


def test_a_cycle_made_after_the_freeze_is_still_collected(unfrozen: None) -> None:
    freeze_startup_heap()
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None


def test_collection_paused_for_start_up_resumes_when_the_heap_is_frozen(unfrozen: None) -> None:
    pause_collection()
    try:
        assert not gc.isenabled()
        freeze_startup_heap()
        assert gc.isenabled()
    finally:
        resume_collection()


def test_a_young_threshold_raises_only_the_young_generations(unfrozen: None) -> None:
    _, older, oldest = gc.get_threshold()
    freeze_startup_heap(young_threshold=10_000)
    assert gc.get_threshold() == (10_000, older, oldest)


def test_a_cycle_is_collected_automatically_under_a_raised_young_threshold(unfrozen: None) -> None:
    freeze_startup_heap(young_threshold=10_000)
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    keep = [Node() for _ in range(20_000)]  # kept objects fill the young generation: a pass runs
    assert gone() is None
    assert len(keep) == 20_000
