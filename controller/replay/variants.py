"""What a replay varies and how one variant runs: the time range (``-7d``, RFC 3339), the
``--set`` assignments checked against the HPA spec's fields, ``--requests``, and one
variant's closed loop over the recorded steps. Pure: no I/O, no clock reads."""

from __future__ import annotations

import argparse
import copy
import itertools
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from controller.engine.model import Settings
from shared import inputfiles
from shared.durations import DurationError, parse_time
from shared.quantity import Quantity, QuantityError

from . import hpa_fields
from .simulate import Loop, Outcome, Step

_RELATIVE = re.compile(r"^-(\d+(?:\.\d+)?)([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def moment(text: str, now: datetime) -> datetime:
    """``now``, ``-7d`` / ``-90m`` (s, m, h, d, w), or an RFC 3339 time."""
    if text == "now":
        return now
    m = _RELATIVE.match(text)
    if m:
        return now - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    try:
        return parse_time(text)
    except (DurationError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: use now, a relative time (-90s, -90m, -12h, -7d, -2w) or an RFC 3339 "
            "time such as 2026-01-01T12:00:00Z"
        ) from None


def assignment_of(assignment: str) -> tuple[list[str | int], Any]:
    """The path and value of ``PATH=VALUE`` (the value read as YAML), checked against the
    autoscaling/v2 HPA spec's fields and types: ValueError naming the assignment."""
    path, sep, raw = assignment.partition("=")
    if not sep or not path:
        raise ValueError(
            f"--set {assignment!r}: use PATH=VALUE, e.g. behavior.scaleDown.stabilizationWindowSeconds=60"
        )
    keys: list[str | int] = []
    for part in path.split("."):
        m = re.fullmatch(r"([A-Za-z_][\w]*)((?:\[\d+\])*)", part)
        if not m:
            raise ValueError(f"--set {assignment!r}: {part!r} is not a field name")
        keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    try:
        value = inputfiles.load_one(raw, f"--set {path}")
    except (inputfiles.InputError, yaml.YAMLError) as e:
        raise ValueError(f"--set {assignment!r}: {e}") from None
    try:
        hpa_fields.check(keys, value)
    except hpa_fields.FieldError as e:
        raise ValueError(f"--set {assignment!r}: {e}") from None
    return keys, value


def set_path(spec: dict[str, Any], assignment: str) -> dict[str, Any]:
    """``behavior.scaleDown.stabilizationWindowSeconds=60`` or ``metrics[0].resource.target.
    averageUtilization=70`` applied to a copy of the HPA spec."""
    keys, value = assignment_of(assignment)
    out = copy.deepcopy(spec)
    node: Any = out
    for k, nxt in itertools.pairwise(keys):
        if isinstance(k, int):
            if not isinstance(node, list) or k >= len(node):
                raise ValueError(f"--set {assignment!r}: no element [{k}]")
            node = node[k]
        else:
            node = node.setdefault(k, [] if isinstance(nxt, int) else {})
    node[keys[-1]] = value
    return out


def requests_of(text: str) -> dict[str, str]:
    """``--requests cpu=100m,memory=128Mi``, each value a quantity."""
    out = {}
    for kv in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = kv.partition("=")
        if not eq or not name:
            raise ValueError(f"--requests {kv!r}: use NAME=QUANTITY, e.g. cpu=100m")
        try:
            Quantity.parse(value)
        except QuantityError as e:
            raise ValueError(f"--requests {kv!r}: {e}") from None
        out[name] = value
    return out


def replay(
    hpa: dict[str, Any], steps: list[Step], settings: Settings, pod_startup: timedelta,
    requests: dict[str, str], initial: int | None,
) -> list[Outcome]:  # fmt: skip
    """One variant over the recorded steps, in a closed loop (pure)."""
    spec = hpa.get("spec") or {}
    loop = Loop({**hpa, "status": {}}, settings, pod_startup, requests)
    first_real = next((s.real_replicas for s in steps if s.real_replicas is not None), None)
    start = (
        initial
        if initial is not None
        else first_real
        if first_real is not None
        else spec.get("minReplicas", 1)
    )
    loop.start(max(int(start), 1), steps[0].at if steps else datetime.now(UTC))
    return [loop.step(s) for s in steps]
