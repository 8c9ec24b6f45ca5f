"""What one reconcile may write, in one place: the reconciler asks this instead of
branching on "dry" at each write.

- ``ACTIVE``: promhpa owns the HPA -- it writes the scale, the status and events, and keeps
  the decision's memory.
- ``PASSIVE``: another controller writes this HPA (``second_writer``) -- promhpa decides as
  it would, writes neither scale nor status, and resumes once that writer is quiet.
- ``SHADOW``: ``--dry-run`` -- the same, for good, beside the cluster's own controller.

A passive or shadow reconcile decides on the owner's rescales (they, not ours, count
against the rate limits), keeps its own recommendations with the owner's scale events, and
records events that say they are a dry run and never claim a rescale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from controller.engine.model import History


@dataclass(frozen=True)
class WritePolicy:
    mode: str  # what ``why`` shows: active, passive or shadow
    writes: bool  # the scale and the status

    def kept(self, decided: History, seen: History) -> History:
        """The memory kept for the next reconcile: the decision's, or -- when the owner
        writes -- our recommendations with the owner's scale events (``seen``)."""
        if self.writes:
            return decided
        return replace(
            decided, scale_up_events=seen.scale_up_events, scale_down_events=seen.scale_down_events
        )

    def event(self, reason: str, message: str) -> tuple[str, str]:
        return (reason, message) if self.writes else dry_run_event(reason, message)


ACTIVE = WritePolicy("active", writes=True)
PASSIVE = WritePolicy("passive", writes=False)
SHADOW = WritePolicy("shadow", writes=False)


def dry_run_event(reason: str, message: str) -> tuple[str, str]:
    """A dry run's event says so in its reason, and a rescale it only decided is a "would"."""
    if reason == "SuccessfulRescale":
        return "DryRunWouldRescale", f"would rescale (dry run, nothing written): {message}"
    return f"DryRun{reason}", message
