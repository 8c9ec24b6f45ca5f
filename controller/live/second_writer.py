"""The second-writer guard: promhpa stops writing an HPA that something else writes.

Two HPA controllers on one HPA fight: each rescales the target to its own decision and
overwrites the other's status. On managed control planes kube-controller-manager's HPA
controller cannot be turned off, so in active mode promhpa looks, at every reconcile and
for every HPA, for writes it did not make, in what the reconcile already reads:

- the HPA's ``managedFields``: an entry for the ``status`` subresource by another field
  manager whose time moved since the last look (at first sight: one within ``quiet``);
- the scale: replicas that moved since the last reconcile without promhpa writing them.

On such evidence the HPA goes *passive*: promhpa writes neither its scale nor its status
(it decides as in shadow mode, following the other writer's rescales), says so once (an
Event, a warning, ``promhpa_controller_second_writer``, ``/debug/writers``), and goes on
looking. It resumes only when the other writer has been quiet for ``quiet`` **and** for all
that time the stored status differed from promhpa's decision: the HPA needs a write and
nobody makes it. A live kube-controller-manager computes what promhpa computes (decisions
equal upstream's), so while it is alive the stored status is either its fresh write
(evidence) or already what promhpa would write (no need): the two never alternate.

Pure: plain data in, plain data out, time an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from shared.durations import parse_time

FIELD_MANAGER = "promhpa-controller"  # what our writes are recorded as in managedFields


@dataclass(frozen=True)
class Writers:
    """What the guard remembers of one HPA."""

    seen: dict[str, datetime] = field(default_factory=dict)  # other managers' last status write
    replicas: int | None = None  # the scale's replicas after the last reconcile
    passive_since: datetime | None = None
    last_evidence: datetime | None = None
    evidence: str = ""  # the latest, in words
    stale_since: datetime | None = None  # passive: since when the stored status lags ours

    @property
    def passive(self) -> bool:
        return self.passive_since is not None


@dataclass(frozen=True)
class Verdict:
    writers: Writers
    change: str | None = None  # "passive" or "active" when this reconcile changed it


def status_writes(hpa: dict[str, Any], own: str = FIELD_MANAGER) -> dict[str, datetime]:
    """Each other field manager's last write of the HPA's status, from its managedFields."""
    out: dict[str, datetime] = {}
    for entry in (hpa.get("metadata") or {}).get("managedFields") or []:
        manager = str(entry.get("manager", ""))
        if manager == own or entry.get("subresource") != "status" or not entry.get("time"):
            continue
        try:
            when = parse_time(str(entry["time"]))
        except ValueError:
            continue
        out[manager] = max(when, out.get(manager, when))
    return out


def notice(
    w: Writers, *, hpa: dict[str, Any], replicas: int | None, now: datetime, quiet: timedelta
) -> Verdict:
    """Before deciding: is there evidence of another writer? ``replicas``: the scale as read
    this reconcile (our own last write is remembered by ``after_our_scale_write``)."""
    writes = status_writes(hpa)
    evidence = []
    for manager, when in sorted(writes.items()):
        before = w.seen.get(manager)
        if (before is None and now - when < quiet) or (before is not None and when > before):
            evidence.append(f"{manager} wrote its status at {when.isoformat()}")
    if replicas is not None and w.replicas is not None and replicas != w.replicas:
        evidence.append(f"its target's replicas moved from {w.replicas} to {replicas} without promhpa")
    w = replace(w, seen={**w.seen, **writes}, replicas=replicas)
    if not evidence:
        return Verdict(w)
    passive = replace(
        w,
        passive_since=w.passive_since or now,
        last_evidence=now,
        evidence="; ".join(evidence),
        stale_since=None,
    )
    return Verdict(passive, None if w.passive else "passive")


def settle(w: Writers, *, wants_status: bool, now: datetime, quiet: timedelta) -> Verdict:
    """After deciding (passively): resume once the other writer has been quiet for ``quiet``
    and the stored status has lagged our decision (``wants_status``) for all that time."""
    if not w.passive:
        return Verdict(w)
    if not wants_status:
        return Verdict(replace(w, stale_since=None))  # the HPA is as promhpa would have it
    stale_since = w.stale_since or now
    quiet_since = w.last_evidence or w.passive_since or now
    if now - stale_since >= quiet and now - quiet_since >= quiet:
        return Verdict(replace(w, passive_since=None, stale_since=None, evidence=""), "active")
    return Verdict(replace(w, stale_since=stale_since))


def judge(
    w: Writers,
    *,
    hpa: dict[str, Any],
    replicas: int | None,
    wants_status: bool,
    now: datetime,
    quiet: timedelta,
) -> Verdict:
    """One reconcile's look, ``notice`` then ``settle``; the change is the first that happened."""
    first = notice(w, hpa=hpa, replicas=replicas, now=now, quiet=quiet)
    second = settle(first.writers, wants_status=wants_status, now=now, quiet=quiet)
    return Verdict(second.writers, first.change or second.change)


def after_our_scale_write(w: Writers, replicas: int) -> Writers:
    """Our own rescale is not evidence: remember what we wrote."""
    return replace(w, replicas=replicas)
