"""What the differential test compares: promhpa's `decide` output against upstream's
outcome for the same snapshot, field by field, after the few normalizations that only
undo serialization differences (Go omits a zero `currentReplicas`; an absent list is an
empty one)."""

from __future__ import annotations

import re
from typing import Any

JSON = dict[str, Any]


def _status(status: JSON | None) -> JSON:
    out = {k: v for k, v in (status or {}).items() if v not in (None, [], {})}
    if out.get("currentReplicas") == 0:
        del out["currentReplicas"]  # omitempty in autoscaling/v2
    return out


def _history(h: JSON | None) -> JSON:
    h = h or {}
    out: JSON = {
        "scaleUpEvents": h.get("scaleUpEvents") or [],
        "scaleDownEvents": h.get("scaleDownEvents") or [],
    }
    if h.get("recommendations") is not None:
        out["recommendations"] = h["recommendations"]
    return out


# Upstream names the first pod it meets without a request (or without the container), in
# the order of its pod lister -- a map, so any such pod is upstream's answer: the messages
# are compared without the pod's and container's names (upstream's nondeterminism).
_MISSING = re.compile(r"missing request for (\w+) in container \S+ of Pod \S+")
_NO_CONTAINER = re.compile(r"container \S+ not found in Pod \S+")
_NO_POD_LEVEL = re.compile(r"missing pod-level request for \w+ in Pod \S+")


# AmbiguousSelector lists the HPAs in map order: compared as a set (1.37's "e.g." and the
# full list of 1.33-1.36).
_CLAIMANTS = re.compile(r"\(e\.g\. \[([^\]]*)\]\)")
_ALL_CLAIMANTS = re.compile(r"controlled by multiple HPAs: \[([^\]]*)\]")


def _unnamed(text: str) -> str:
    # which of the two a pod reports also depends on which pod comes first
    text = _MISSING.sub("<a pod without the request or container>", text)
    text = _NO_CONTAINER.sub("<a pod without the request or container>", text)
    text = _NO_POD_LEVEL.sub("<a pod without the request or container>", text)
    text = _ALL_CLAIMANTS.sub(
        lambda m: "controlled by multiple HPAs: [" + " ".join(sorted(m.group(1).split())) + "]", text
    )
    return _CLAIMANTS.sub(lambda m: "(e.g. [" + " ".join(sorted(m.group(1).split())) + "])", text)


def _mask(value: Any) -> Any:
    if isinstance(value, str):
        return _unnamed(value)
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, dict):
        return {k: _mask(v) for k, v in value.items()}
    return value


def differences(ours: JSON, upstream: JSON) -> list[str]:
    """The fields that differ, each as 'field: ours != upstream' (empty when equal)."""
    ours, upstream = _mask(ours), _mask(upstream)
    out: list[str] = []
    if upstream.get("error") and "status" not in upstream:
        return [f"upstream harness failed: {upstream['error']}"]
    if bool(ours.get("rescale")) != bool(upstream.get("rescale")):
        out.append(f"rescale: {ours.get('rescale')} != {upstream.get('rescale')}")
    elif ours.get("rescale") and ours.get("desiredReplicas") != upstream.get("desiredReplicas"):
        out.append(f"desiredReplicas: {ours.get('desiredReplicas')} != {upstream.get('desiredReplicas')}")
    a, b = _status(ours.get("status")), _status(upstream.get("status"))
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            out.append(f"status.{key}: {a.get(key)!r} != {b.get(key)!r}")
    ev_a = [(e["type"], e["reason"], e["message"]) for e in ours.get("events") or []]
    ev_b = [(e["type"], e["reason"], e["message"]) for e in upstream.get("events") or []]
    if ev_a != ev_b:
        out.append(f"events: {ev_a!r} != {ev_b!r}")
    h_a, h_b = _history(ours.get("history")), _history(upstream.get("history"))
    if h_a != h_b:
        out.append(f"history: {h_a!r} != {h_b!r}")
    return out
