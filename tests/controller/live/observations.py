"""A snapshot document taken apart into what one live reconcile reads (``Observation``):
the API objects as the server sent them, the flags and the HPA's memory typed, as the
running controller holds them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.engine import parse_snapshot
from controller.engine.model import Snapshot
from controller.engine.parse import METRIC_READS
from controller.live.observe import Observation
from controller.live.pod_parses import PodParses


def observation_of(doc: dict[str, Any]) -> Observation:
    typed = parse_snapshot(doc)
    return Observation(
        now=typed.now,
        settings=typed.settings,
        hpa=doc["hpa"],
        scale=doc.get("scale"),
        scale_error=doc.get("scaleError"),
        scale_path=None,
        pods=list(doc.get("pods") or []),
        metrics={k: doc[k] for k in METRIC_READS if doc.get(k) is not None},
        history=typed.history if "history" in doc else None,
        selecting=tuple(doc.get("selectingHPAs") or ()),
    )


def live_view(doc: dict[str, Any], parses: PodParses) -> Snapshot:
    """What the live controller decides on for the reads ``doc`` records, with a failed
    scale write (``scaleUpdateError``) set on the view as the reconciler sets it."""
    return replace(observation_of(doc).view(parses), scale_update_error=doc.get("scaleUpdateError"))
