"""HPA status conditions, updated in place as upstream does.

A condition keeps its position in the list; a new type is appended. ``lastTransitionTime``
moves only when the status changes. Types, reasons and messages are a public contract
(``kubectl describe hpa``), so the texts live with the code that sets them and are upstream's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.durations import format_time

ABLE_TO_SCALE = "AbleToScale"
SCALING_ACTIVE = "ScalingActive"
SCALING_LIMITED = "ScalingLimited"
SCALED_TO_ZERO = "ScaledToZero"


def set_condition(
    conditions: list[dict[str, Any]],
    ctype: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
) -> None:
    wire_status = "True" if status else "False"
    for cond in conditions:
        if cond.get("type") == ctype:
            break
    else:
        cond = {"type": ctype}
        conditions.append(cond)
    transition = cond.get("lastTransitionTime")
    if cond.get("status") != wire_status:
        transition = format_time(now)
    # rebuilt in the API server's field order, so output diffs cleanly against kubectl's;
    # fields the controller does not set (the condition's observedGeneration) stay as they were
    others = {
        k: v
        for k, v in cond.items()
        if k not in ("type", "status", "lastTransitionTime", "reason", "message")
    }
    fresh = {"type": ctype, "status": wire_status}
    if transition is not None:
        fresh["lastTransitionTime"] = transition
    fresh.update(reason=reason, message=message, **others)
    cond.clear()
    cond.update(fresh)


def get_condition(conditions: list[dict[str, Any]], ctype: str) -> dict[str, Any] | None:
    for cond in conditions:
        if cond.get("type") == ctype:
            return cond
    return None


def remove_condition(conditions: list[dict[str, Any]], ctype: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != ctype]
