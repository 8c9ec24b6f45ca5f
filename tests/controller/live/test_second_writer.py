"""The second-writer guard's judgement, on plain data and a clock the test sets."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

from controller.live.second_writer import FIELD_MANAGER
from controller.live.second_writer import Writers
from controller.live.second_writer import after_our_scale_write
from controller.live.second_writer import judge

T0 = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
QUIET = timedelta(minutes=5)


def hpa(*writes: tuple[str, datetime]) -> dict[str, Any]:
    entries = [
        {
            "manager": m,
            "operation": "Update",
            "subresource": "status",
            "time": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for m, t in writes
    ]
    entries.append(
        {"manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-01-01T00:00:00Z"}
    )
    return {"metadata": {"name": "web", "namespace": "shop", "managedFields": entries}}


def look(w: Writers, h: dict[str, Any], at: datetime, replicas: int | None = 3, wants: bool = False) -> Any:
    return judge(w, hpa=h, replicas=replicas, wants_status=wants, now=at, quiet=QUIET)


def test_our_own_status_writes_are_not_evidence() -> None:
    v = look(Writers(), hpa((FIELD_MANAGER, T0)), T0 + timedelta(seconds=1))
    assert (v.writers.passive, v.change) == (False, None)


def test_a_recent_foreign_status_write_at_first_sight_makes_it_passive() -> None:
    v = look(Writers(), hpa(("kube-controller-manager", T0)), T0 + timedelta(seconds=10))
    assert v.change == "passive"
    assert "kube-controller-manager wrote its status" in v.writers.evidence


def test_an_old_foreign_write_at_first_sight_is_history_not_evidence() -> None:
    v = look(Writers(), hpa(("kube-controller-manager", T0)), T0 + timedelta(hours=2))
    assert (v.writers.passive, v.change) == (False, None)


def test_a_foreign_write_that_moves_later_is_evidence() -> None:
    w = look(Writers(), hpa(("kube-controller-manager", T0)), T0 + timedelta(hours=2)).writers
    v = look(w, hpa(("kube-controller-manager", T0 + timedelta(hours=2))), T0 + timedelta(hours=2, seconds=5))
    assert v.change == "passive"


def test_replicas_moved_without_us_are_evidence_but_our_own_rescale_is_not() -> None:
    w = look(Writers(), hpa(), T0, replicas=3).writers
    w = after_our_scale_write(w, 5)
    assert look(w, hpa(), T0 + timedelta(seconds=15), replicas=5).change is None
    v = look(w, hpa(), T0 + timedelta(seconds=30), replicas=7)
    assert v.change == "passive"
    assert "moved from 5 to 7 without promhpa" in v.writers.evidence


def test_passive_is_said_once_while_the_evidence_goes_on() -> None:
    w = Writers()
    changes = []
    for i in range(10):
        at = T0 + timedelta(seconds=15 * i)
        v = look(w, hpa(("kube-controller-manager", at)), at + timedelta(seconds=1))
        w = v.writers
        changes.append(v.change)
    assert changes == ["passive"] + [None] * 9


def test_it_stays_passive_while_the_stored_status_is_what_it_would_write() -> None:
    """The other writer is alive but has nothing to write: nothing to take over, ever."""
    w = look(Writers(), hpa(("kube-controller-manager", T0)), T0).writers
    for minutes in range(1, 120):
        w = look(
            w, hpa(("kube-controller-manager", T0)), T0 + timedelta(minutes=minutes), wants=False
        ).writers
        assert w.passive


def test_it_resumes_when_the_other_writer_is_quiet_and_the_hpa_needs_a_write_all_that_time() -> None:
    w = look(Writers(), hpa(("kube-controller-manager", T0)), T0).writers
    changes = []
    for s in range(15, 15 * 60, 15):
        v = look(w, hpa(("kube-controller-manager", T0)), T0 + timedelta(seconds=s), wants=True)
        w = v.writers
        changes.append((s, v.change))
    resumed = [s for s, c in changes if c == "active"]
    # quiet since 0 s, stale since the first look that wanted a write (15 s): 5 min each
    assert resumed == [315]
    assert not w.passive


def test_a_write_by_the_other_while_stale_restarts_both_clocks() -> None:
    w = look(Writers(), hpa(("kube-controller-manager", T0)), T0).writers
    w = look(w, hpa(("kube-controller-manager", T0)), T0 + timedelta(minutes=4), wants=True).writers
    later = T0 + timedelta(minutes=4, seconds=30)
    w = look(w, hpa(("kube-controller-manager", later)), later, wants=True).writers  # it wrote again
    v = look(w, hpa(("kube-controller-manager", later)), T0 + timedelta(minutes=9), wants=True)
    assert v.change is None  # only 4.5 min quiet: still passive
    assert v.writers.passive
