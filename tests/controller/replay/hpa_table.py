"""The HPA validation table (``data/invalid_hpas.yaml``): a valid autoscaling/v2 HPA, and
changes that each make it invalid; the pure tests and the live ones read the same."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

TABLE = yaml.safe_load((Path(__file__).parent / "data" / "invalid_hpas.yaml").read_text())
BASE: dict[str, Any] = TABLE["base"]
CASES: list[dict[str, Any]] = TABLE["cases"]


def changed(path: str, value: Any = None, delete: bool = False) -> dict[str, Any]:
    """The base HPA with ``value`` set at ``path`` under its spec (list items by index), or
    what is there deleted."""
    doc = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node: Any = doc["spec"]
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    key: Any = int(last) if last.isdigit() else last
    if delete:
        del node[key]
    else:
        node[key] = value
    return doc


def document(case: dict[str, Any]) -> dict[str, Any]:
    """The case's HPA."""
    return changed(case["path"], case.get("value"), bool(case.get("delete")))
