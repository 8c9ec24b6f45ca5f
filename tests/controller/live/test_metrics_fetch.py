"""External items as the snapshot records them: whatever the server returned for a query
answers that query offline too, as upstream counts it live."""

from __future__ import annotations

from typing import Any

from controller.live.metrics_fetch import answering
from shared.selectors import from_label_selector

KEDA_ITEM: dict[str, Any] = {"metricName": "s0-prometheus", "metricLabels": None, "value": "30"}


def test_an_item_without_labels_answers_the_selector_it_was_returned_for() -> None:
    selector = {"matchLabels": {"scaledobject.keda.sh/name": "kapp"}}
    item = answering(KEDA_ITEM, selector)
    assert from_label_selector(selector).matches(item["metricLabels"])
    assert item["value"] == "30"


def test_every_operator_is_satisfied() -> None:
    selector = {
        "matchLabels": {"queue": "jobs"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]},
            {"key": "tier", "operator": "Exists"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    labels = {"queue": "other", "zone": "c", "env": "dev", "canary": "yes", "kept": "1"}
    item = answering({**KEDA_ITEM, "metricLabels": labels}, selector)
    assert from_label_selector(selector).matches(item["metricLabels"])
    assert item["metricLabels"]["kept"] == "1"  # labels the selector does not speak of stay


def test_labels_that_already_match_are_kept_as_they_are() -> None:
    selector = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
    item = answering({**KEDA_ITEM, "metricLabels": {"zone": "b"}}, selector)
    assert item["metricLabels"] == {"zone": "b"}


def test_no_selector_leaves_the_item_alone() -> None:
    assert answering(KEDA_ITEM, None) is KEDA_ITEM
