"""What a replay amounts to: the summary table per variant, and the series as CSV or JSON (pure)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import timedelta

from shared.durations import format_time

from .simulate import Outcome


@dataclass(frozen=True)
class Summary:
    variant: str
    pod_hours: float
    peak: int
    mean: float
    scale_ups: int
    scale_downs: int
    minutes_above_target: float  # the saturation proxy: the HPA's metric above its target
    minutes_at_max: float
    real_pod_hours: float | None


def summarize(variant: str, outcomes: list[Outcome], step: timedelta, max_replicas: int) -> Summary:
    """Each outcome stands for one sync period: the replicas it leaves hold until the next."""
    hours, minutes = step.total_seconds() / 3600, step.total_seconds() / 60
    n = max(len(outcomes), 1)
    real = [o.real_replicas for o in outcomes]
    return Summary(
        variant,
        round(sum(o.replicas for o in outcomes) * hours, 3),
        max((o.replicas for o in outcomes), default=0),
        round(sum(o.replicas for o in outcomes) / n, 2),
        sum(1 for o in outcomes if o.rescaled > 0),
        sum(1 for o in outcomes if o.rescaled < 0),
        round(sum(minutes for o in outcomes if o.load is not None and o.target and o.load > o.target), 2),
        round(sum(minutes for o in outcomes if o.replicas >= max_replicas), 2),
        round(sum(r for r in real if r is not None) * hours, 3) if any(r is not None for r in real) else None,
    )


def table(summaries: list[Summary]) -> str:
    head = ["variant", "pod-hours", "peak", "mean", "ups", "downs", "min>target", "min@max", "real pod-hours"]
    rows = [head] + [
        [
            s.variant,
            f"{s.pod_hours:.3f}",
            str(s.peak),
            f"{s.mean:.2f}",
            str(s.scale_ups),
            str(s.scale_downs),
            f"{s.minutes_above_target:.1f}",
            f"{s.minutes_at_max:.1f}",
            "-" if s.real_pod_hours is None else f"{s.real_pod_hours:.3f}",
        ]
        for s in summaries
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    )


FIELDS = [
    "variant",
    "time",
    "replicas",
    "ready",
    "desired",
    "load",
    "target",
    "real_replicas",
    "held",
    "rescaled",
]


def rows(variants: dict[str, list[Outcome]]) -> list[dict[str, object]]:
    return [
        {
            "variant": name,
            "time": format_time(o.at),
            "replicas": o.replicas,
            "ready": o.ready,
            "desired": o.desired,
            "load": o.load,
            "target": o.target,
            "real_replicas": o.real_replicas,
            "held": o.held,
            "rescaled": o.rescaled,
        }
        for name, outcomes in variants.items()
        for o in outcomes
    ]


def as_csv(variants: dict[str, list[Outcome]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS)
    w.writeheader()
    for r in rows(variants):
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()


def as_json(variants: dict[str, list[Outcome]], summaries: list[Summary]) -> str:
    return json.dumps({"summary": [s.__dict__ for s in summaries], "series": rows(variants)}, indent=2)
