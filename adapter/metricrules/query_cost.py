"""What a team's query may cost the Prometheus every HPA shares: the limits, and the checks
made on a rule's query before it is served (plain data; the per-request limits are
enforced by ``adapter.metricrules.team_gate``).

Why these limits: Prometheus' work for an instant query grows with the series it touches
times the samples in each window. A team controls the windows (``[...]``), how far back
they lie (``offset``, ``@``), how often a subquery evaluates its inner query (its step),
and how often and how many at once its queries run. The query time limit alone
(``--team-rule-query-timeout``) bounds one query's duration, not what many of them cost.
The label matchers are the team's own and are confined to its namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .isolation import Reach


@dataclass(frozen=True)
class CostLimits:
    """Per-namespace limits on a MetricRule's queries; the defaults, and why each, are in
    docs/rules.md."""

    max_range: timedelta = timedelta(hours=1)
    max_lookback: timedelta = timedelta(hours=6)
    min_subquery_step: timedelta = timedelta(seconds=15)
    max_series: int = 10_000
    max_concurrent: int = 8
    queries_per_second: float = 20.0
    burst: int = 40


def _show(ms: float) -> str:
    """A duration as PromQL writes it (90000 ms -> 1m30s)."""
    total = int(ms // 1000)
    if total == 0:
        return f"{int(ms)}ms"
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size:
            out += f"{total // size}{unit}"
            total %= size
    return out


def _ms(d: timedelta) -> int:
    return round(d / timedelta(milliseconds=1))


def over_cost(reach: Reach, limits: CostLimits, now: float) -> str | None:
    """Why a query reading ``reach`` may not be served at ``now`` (seconds since the epoch),
    naming the limit and what to write instead; None when it may."""
    if reach.longest_range_ms > _ms(limits.max_range):
        return (
            f"a window of {_show(reach.longest_range_ms)} is longer than the limit of "
            f"{_show(_ms(limits.max_range))} (--team-rule-max-range); use a shorter window, or "
            "a recording rule that aggregates over time"
        )
    if reach.smallest_step_ms is not None and reach.smallest_step_ms < _ms(limits.min_subquery_step):
        return (
            f"a subquery step of {_show(reach.smallest_step_ms)} is below the limit of "
            f"{_show(_ms(limits.min_subquery_step))} (--team-rule-min-subquery-step); use a "
            f"step of at least {_show(_ms(limits.min_subquery_step))}, e.g. [10m:1m]"
        )
    pinned = 0.0 if reach.earliest_at is None else max(0.0, now - reach.earliest_at) * 1000
    lookback = reach.lookback_ms + pinned
    if lookback > _ms(limits.max_lookback):
        return (
            f"the query reads data from {_show(lookback)} before now, further back than the limit of "
            f"{_show(_ms(limits.max_lookback))} (--team-rule-max-lookback: windows, offsets and @ "
            "together); use a smaller offset or window, or @ end()"
        )
    return None
