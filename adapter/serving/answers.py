"""Prometheus' samples shaped as the metrics APIs answer them: an external metric's value
list, a resource usage quantity, a selector as the API's JSON form."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from adapter.api.requests import MetricRequest
from adapter.api.wire import EXTERNAL, milli_quantity, timestamp, value_list
from promclient.promapi import Sample
from shared.quantity import Format, Quantity
from shared.selectors import Selector


def selector_json(sel: Selector | None) -> dict[str, Any] | None:
    if sel is None or sel.empty():
        return None
    labels = {r.key: r.values[0] for r in sel.requirements if r.operator in ("=", "==")}
    exprs = [
        {
            "key": r.key,
            "operator": {
                "in": "In",
                "notin": "NotIn",
                "exists": "Exists",
                "!": "DoesNotExist",
                "!=": "NotIn",
            }[r.operator],
            "values": list(r.values),
        }
        for r in sel.requirements
        if r.operator not in ("=", "==")
    ]
    out: dict[str, Any] = {}
    if labels:
        out["matchLabels"] = labels
    if exprs:
        out["matchExpressions"] = [{k: v for k, v in e.items() if v != []} for e in exprs]
    return out


def external_list(
    req: MetricRequest, samples: list[Sample], pick: Selector | None, *, zero: bool = False
) -> dict[str, Any]:
    """An ExternalMetricValueList of ``samples`` (``pick``: only series whose labels match;
    ``zero``: no series at all is one value of 0, for a rule with ``absent: zero``)."""
    items = []
    for s in samples:
        value = milli_quantity(s.value)
        labels = {k: v for k, v in s.labels.items() if k != "__name__"}
        if value is None or (pick is not None and not pick.matches(labels)):
            continue
        items.append(
            {
                "metricName": req.metric,
                "metricLabels": labels,
                "timestamp": timestamp(s.timestamp),
                "value": value,
            }
        )
    if zero and not items:
        items.append({"metricName": req.metric, "metricLabels": {}, "timestamp": timestamp(time.time()),
                      "value": "0"})  # fmt: skip
    return value_list(EXTERNAL, req.version, "ExternalMetricValueList", items)


def usage_of(resource: str, s: Sample) -> str:
    v = s.value if s.value == s.value and s.value >= 0 and s.value != float("inf") else 0.0
    if resource == "cpu":
        return milli_quantity(v) or "0"
    return str(Quantity(Decimal(int(v)), Format.BINARY_SI))
