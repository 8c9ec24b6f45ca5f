"""What the live controller keeps of each HPA between reconciles, in one record.

Upstream keeps an HPA's recommendations and scale events in maps keyed by the HPA and
drops them when the HPA is deleted; here everything promhpa keeps of one HPA beyond that
(the second-writer guard's memory, the explanatory series it set) lives in one record, so
deleting an HPA is one ``pop``, and nothing of a deleted HPA can outlive it by being
forgotten in one store and not another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.engine.model import History

from .monitor import Key, Series
from .second_writer import Writers


@dataclass
class HpaRecord:
    """One HPA's state between reconciles."""

    # the recommendations and scale events the next snapshot carries (upstream's memory)
    history: History | None = None
    # the second-writer guard's memory (None: the guard has not seen this HPA)
    writers: Writers | None = None
    # the explanatory series (proposals, recommendation, limiting step) last set
    series: set[Series] = field(default_factory=set)


class HpaRecords:
    """The records by HPA; a record exists from an HPA's first reconcile to its deletion."""

    def __init__(self) -> None:
        self._records: dict[Key, HpaRecord] = {}

    def get(self, key: Key) -> HpaRecord | None:
        return self._records.get(key)

    def of(self, key: Key) -> HpaRecord:
        """The HPA's record, made on first use."""
        record = self._records.get(key)
        if record is None:
            record = self._records[key] = HpaRecord()
        return record

    def pop(self, key: Key) -> HpaRecord | None:
        return self._records.pop(key, None)

    def history(self, key: Key) -> History | None:
        record = self._records.get(key)
        return record.history if record else None

    def passive(self) -> list[tuple[Key, Writers]]:
        """HPAs the second-writer guard has made passive, sorted by key."""
        found = [
            (k, r.writers) for k, r in self._records.items() if r.writers is not None and r.writers.passive
        ]
        return sorted(found, key=lambda kw: kw[0])
