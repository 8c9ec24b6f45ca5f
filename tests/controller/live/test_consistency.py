"""Read-your-writes' memory of our status writes (``controller.live.consistency``), pure."""

from __future__ import annotations

import pytest

from controller.live.consistency import ReadYourWrites
from controller.live.consistency import StaleReadError

KEY = ("shop", "web")


def test_a_cache_behind_our_write_is_stale_and_names_both_versions() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "120")
    with pytest.raises(StaleReadError, match="read version: 119 is not as new as written version: 120"):
        w.ensure_ready(KEY, "119")
    assert len(w) == 1  # still waiting


def test_a_cache_that_has_synced_nothing_is_stale() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "120")
    with pytest.raises(StaleReadError, match="read version is not synced"):
        w.ensure_ready(KEY, "")


def test_a_cache_that_caught_up_is_ready_and_the_write_is_forgotten() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "120")
    w.ensure_ready(KEY, "120")
    assert len(w) == 0
    w.ensure_ready(KEY, "1")  # nothing remembered: ready whatever the cache says


def test_an_older_write_never_replaces_a_newer_one() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "130")
    w.wrote_at(KEY, "u1", "120")
    with pytest.raises(StaleReadError):
        w.ensure_ready(KEY, "125")


def test_a_new_incarnation_of_the_hpa_replaces_the_old_ones_write() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "130")
    w.wrote_at(KEY, "u2", "90")
    w.ensure_ready(KEY, "95")
    assert len(w) == 0


def test_clearing_another_incarnation_keeps_this_ones_write() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "130")
    w.clear(KEY, "u0")
    assert len(w) == 1
    w.clear(KEY)
    assert len(w) == 0


def test_versions_that_are_not_numbers_are_not_compared() -> None:
    w = ReadYourWrites()
    w.wrote_at(KEY, "u1", "opaque")
    assert len(w) == 0  # nothing to wait for
    w.wrote_at(KEY, "u1", "120")
    w.ensure_ready(KEY, "opaque")  # cannot be compared: not blocked (upstream continues)
    assert len(w) == 0
