"""``replay --tune`` and ``replay --check``: what the spec should be, and whether a change is
worse, judged over the recorded history by the same closed loop as ``replay`` (pure).

A candidate spec changes the knobs a user tunes: the target value of every metric (as a
factor of today's), the tolerance band per direction (where the release has the field),
both stabilization windows and one rate policy per direction. Each is replayed over the
same steps; its cost is pod-hours, and its harm is minutes above *today's* target -- the
load per pod against the target the user set, so a candidate cannot buy pod-hours by
moving the goal post. The search is a fixed-seed random sample of the knob grid followed
by coordinate descent from the best feasible point, bounded by a count of replays: the
same seed, budget and history give the same answer on any machine.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from datetime import timedelta
from typing import Any

from shared.quantity import parse_quantity

from .report import Summary, summarize
from .simulate import Outcome

# the grid each knob is searched on; 1.0 / today's value is always a candidate
GRID: dict[str, tuple[Any, ...]] = {
    "target_factor": (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0),
    "tolerance": (0.02, 0.05, 0.1, 0.15, 0.2),
    "up_window": (0, 15, 30, 60, 120, 300),
    "down_window": (0, 30, 60, 120, 300, 600),
    "up_percent": (50, 100, 200, 400, 900),
    "down_percent": (10, 25, 50, 100),
}
UP_PERIOD, DOWN_PERIOD = 15, 60  # seconds: upstream's default policy periods


@dataclass(frozen=True)
class Knobs:
    target_factor: float = 1.0
    tolerance: float | None = None  # None: leave the spec's (and the flag's) tolerance
    up_window: int | None = None  # None: leave the spec's behavior for that direction
    down_window: int | None = None
    up_percent: int | None = None
    down_percent: int | None = None


@dataclass(frozen=True)
class Scored:
    knobs: Knobs
    spec: dict[str, Any]
    summary: Summary
    above: float  # minutes with the load per pod above today's target

    @property
    def cost(self) -> float:
        return self.summary.pod_hours


@dataclass(frozen=True)
class Tuned:
    current: Scored
    best: Scored
    evaluated: int
    bound: float  # the minutes above today's target the search allowed


def _scaled(value: Any, factor: float, integer: bool) -> Any:
    if integer:
        return max(1, round(int(value) * factor))
    milli = round(parse_quantity(str(value)).as_float() * factor * 1000)
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{max(milli, 1)}m"


def apply(spec: dict[str, Any], k: Knobs, tolerance_field: bool) -> dict[str, Any]:
    """The spec with the knobs set (a copy)."""
    out = copy.deepcopy(spec)
    if k.target_factor != 1.0:
        for m in out.get("metrics") or []:
            target = _target(m)
            for name in ("averageUtilization", "averageValue", "value"):
                if name in target:
                    target[name] = _scaled(target[name], k.target_factor, name == "averageUtilization")
    behavior = out.setdefault("behavior", {})
    for direction, window, percent, period in (
        ("scaleUp", k.up_window, k.up_percent, UP_PERIOD),
        ("scaleDown", k.down_window, k.down_percent, DOWN_PERIOD),
    ):
        rules = behavior.setdefault(direction, {})
        if window is not None:
            rules["stabilizationWindowSeconds"] = window
        if percent is not None:
            rules["policies"] = [{"type": "Percent", "value": percent, "periodSeconds": period}]
            rules["selectPolicy"] = "Max"
        if k.tolerance is not None and tolerance_field:
            rules["tolerance"] = str(k.tolerance)
        if not rules:
            behavior.pop(direction)
    if not behavior:
        out.pop("behavior")
    return out


def minutes_above(outcomes: list[Outcome], target: float | None, step: timedelta) -> float:
    """Minutes with the first metric's load above ``target`` (today's, not the variant's)."""
    if target is None:
        return 0.0
    minutes = step.total_seconds() / 60
    # load and target are in the same unit: per pod, or the total for a Value target
    return round(sum(minutes for o in outcomes if o.load is not None and o.load > target), 2)


def first_target(spec: dict[str, Any]) -> float | None:
    metrics = spec.get("metrics") or []
    if not metrics:
        return None
    target = _target(metrics[0])
    for name in ("averageUtilization", "averageValue", "value"):
        if name in target:
            return parse_quantity(str(target[name])).as_float()
    return None


def _target(metric: dict[str, Any]) -> Any:
    """The metric's target object itself (``apply`` edits it in place, in its own copy)."""
    kind = str(metric.get("type", ""))
    key = {"ContainerResource": "containerResource"}.get(kind, kind.lower())
    return (metric.get(key) or {}).get("target") or {}


def tune(
    hpa: dict[str, Any],
    run: Callable[[dict[str, Any]], list[Outcome]],
    step: timedelta,
    *,
    budget: int,
    seed: int,
    max_minutes_above: float | None,
    tolerance_field: bool,
) -> Tuned:
    """Search the knobs for the fewest pod-hours with at most ``max_minutes_above`` minutes
    above today's target (None: no more than today's spec); ``run`` replays one HPA."""
    spec = hpa.get("spec") or {}
    goal = first_target(spec)
    max_replicas = int(spec.get("maxReplicas", 0))
    seen: dict[Knobs, Scored] = {}

    def score(k: Knobs) -> Scored:
        if k not in seen:
            candidate = apply(spec, k, tolerance_field)
            out = run({**hpa, "spec": candidate})
            summary = summarize("tuned", out, step, max_replicas)
            seen[k] = Scored(k, candidate, summary, minutes_above(out, goal, step))
        return seen[k]

    current = score(Knobs())
    bound = current.above if max_minutes_above is None else max_minutes_above
    names = [f.name for f in fields(Knobs) if f.name != "tolerance" or tolerance_field]
    rng = random.Random(seed)

    def better(a: Scored, b: Scored) -> bool:
        """a beats b: feasible before infeasible, then fewer pod-hours, then fewer minutes above."""
        fa, fb = a.above <= bound, b.above <= bound
        if fa != fb:
            return fa
        if not fa:
            return (a.above, a.cost) < (b.above, b.cost)
        return (a.cost, a.above) < (b.cost, b.above)

    best = current
    samples = max(budget // 2, 1)
    while len(seen) < samples + 1 and len(seen) < budget:
        k = Knobs(**{n: rng.choice(GRID[n]) for n in names})
        s = score(k)
        if better(s, best):
            best = s
    improved = True
    while improved and len(seen) < budget:
        improved = False
        for n in names:
            here = getattr(best.knobs, n)
            grid = GRID[n]
            i = grid.index(here) if here in grid else None
            moves = [grid[j] for j in (i - 1, i + 1) if 0 <= j < len(grid)] if i is not None else list(grid)
            for v in moves:
                if len(seen) >= budget:
                    break
                s = score(replace(best.knobs, **{n: v}))
                if better(s, best):
                    best, improved = s, True
    return Tuned(current, best, len(seen), bound)


def spec_diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The recommended change as a unified diff of the two specs' YAML."""
    import difflib

    import yaml

    a = yaml.safe_dump({"spec": before}, sort_keys=True).splitlines(keepends=True)
    b = yaml.safe_dump({"spec": after}, sort_keys=True).splitlines(keepends=True)
    return (
        "".join(difflib.unified_diff(a, b, "current", "recommended")) or "(no change: today's spec is best)\n"
    )


def tuned_table(t: Tuned) -> str:
    head = ["spec", "pod-hours", "peak", "scale events", "min>target"]
    rows = [head] + [
        [name, f"{s.cost:.3f}", str(s.summary.peak), str(s.summary.scale_ups + s.summary.scale_downs),
         f"{s.above:.1f}"]
        for name, s in (("current", t.current), ("recommended", t.best))
    ]  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


@dataclass(frozen=True)
class Verdict:
    worse: list[str]  # each threshold the change breaks, in words
    lines: list[str]  # the comparison, for the log of a CI job


def check(
    a: Summary, b: Summary, a_above: float, b_above: float, *, pod_hours_pct: float, minutes_above: float
) -> Verdict:
    """Is B (the change) worse than A (today) beyond the thresholds? ``pod_hours_pct``: the
    allowed increase in pod-hours, in percent of A's; ``minutes_above``: the allowed increase
    in minutes above today's target."""
    worse = []
    limit = a.pod_hours * (1 + pod_hours_pct / 100)
    if b.pod_hours > limit + 1e-9:
        worse.append(f"pod-hours {a.pod_hours:.3f} -> {b.pod_hours:.3f} (allowed up to {limit:.3f})")
    if b_above > a_above + minutes_above + 1e-9:
        allowed = a_above + minutes_above
        worse.append(
            f"minutes above today's target {a_above:.1f} -> {b_above:.1f} (allowed up to {allowed:.1f})"
        )
    lines = [
        f"pod-hours: {a.pod_hours:.3f} -> {b.pod_hours:.3f}",
        f"minutes above today's target: {a_above:.1f} -> {b_above:.1f}",
    ]
    return Verdict(worse, lines)
