"""json_copy: equal, independent copies of decoded JSON, never a re-typed one."""

from __future__ import annotations

import math
from datetime import UTC
from datetime import datetime

from shared.jsondoc import json_copy


def test_a_copy_is_equal_and_independent() -> None:
    doc = {"spec": {"metrics": [{"type": "Pods", "n": 1, "x": 2.5, "ok": True, "none": None}]}}
    out = json_copy(doc)
    assert out == doc
    out["spec"]["metrics"][0]["n"] = 2
    assert doc["spec"]["metrics"][0]["n"] == 1


def test_what_json_cannot_carry_is_copied_unchanged() -> None:
    for doc in ({"big": 2**70}, {"tuple": (1, 2)}, {"when": datetime(2026, 1, 1, tzinfo=UTC)}):
        out = json_copy(doc)
        assert out == doc
        assert type(next(iter(out.values()))) is type(next(iter(doc.values())))


def test_nan_stays_nan() -> None:
    out = json_copy({"v": float("nan")})
    assert math.isnan(out["v"])
