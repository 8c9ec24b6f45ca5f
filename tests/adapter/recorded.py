"""A recorded-answer Prometheus (``promclient.promapi.PrometheusAPI``), for the pure unit tests
and for failures a real Prometheus cannot be made to produce on demand: it answers each
query from a table, records what it was asked, and raises what it is told to."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from datetime import timedelta

from promclient.promapi import Gate
from promclient.promapi import PrometheusUnavailable
from promclient.promapi import Sample


@dataclass
class RecordedPrometheus:
    answers: dict[str, list[Sample]] = field(default_factory=dict)  # PromQL -> vector
    series_answers: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    failure: PrometheusUnavailable | None = None
    asked: list[str] = field(default_factory=list)
    url: str = "recorded://prometheus"

    async def query(
        self, promql: str, gate: Gate | None = None, namespace: str | None = None
    ) -> list[Sample]:
        self.asked.append(promql)
        if self.failure is not None:
            raise self.failure
        return list(self.answers.get(promql, []))

    async def series(
        self, match: str, max_age: timedelta, namespace: str | None = None
    ) -> list[dict[str, str]]:
        if self.failure is not None:
            raise self.failure
        return list(self.series_answers.get(match, []))

    async def labels(self, match: str | None = None) -> list[str]:
        return sorted({k for s in self.series_answers.values() for labels in s for k in labels})
