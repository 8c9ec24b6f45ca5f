"""promhpa's own HPA kind (``autoscaling.promhpa.io/v2``) beside the built-in HPAs.

Its objects get a reconciler and workers of their own, built from the built-in HPAs': the
same pods cache, scale reads, metrics, leadership (``elector``) and second-writer guard.
They always write -- the built-in controller never acts on this kind, so a dry run, which
shadows the built-in HPAs, does not concern them -- and their events are promhpa's. Their
reconciler also sees the built-in HPAs' selectors: a target both kinds claim is upstream's
AmbiguousSelector for ours, naming the other.
"""

from __future__ import annotations

from datetime import timedelta

from controller.engine.knobs import own_kind_settings
from shared.kube.client import Kube
from shared.kube.resources import OWN_HPA

from .caches import hpa_informer
from .reconciler import Reconciler
from .why import WhyLog
from .workers import Workers
from .writer import EventRecorder

COMPONENT = "promhpa"  # who reports the kind's events


def own_kind_workers(
    builtin: Workers,
    informer_kube: Kube,
    *,
    hpa_selector: str,
    watch_idle_timeout: float,
    why_history: int,
    second_writer_quiet: timedelta | None,
) -> Workers:
    """Unstarted workers of the kind, their informer wired to them, beside ``builtin``."""
    b = builtin.reconciler
    hpas = hpa_informer(informer_kube, None, hpa_selector, watch_idle_timeout, OWN_HPA)
    reconciler = Reconciler(
        b.kube,
        b.mapper,
        hpas,
        b.pods,
        own_kind_settings(b.settings),
        EventRecorder(b.kube, component=COMPONENT, kind=OWN_HPA),
        b.metrics,
        metrics_timeout=b.metrics_timeout,
        why=WhyLog(why_history),
        second_writer_quiet=second_writer_quiet,
        scales=b.scales,
        kind=OWN_HPA,
        other_selectors=b.selectors,
    )
    workers = Workers(
        reconciler,
        sync_period=builtin.sync_period,
        count=builtin.count,
        dry_run=False,
        generation_gate=builtin.generation_gate,
        enqueues_immediately=builtin.enqueues_immediately,
        elector=builtin.elector,
    )
    hpas.on_change = workers.on_hpa
    return workers
