"""What the controller keeps of a pod: exactly the fields the algorithm reads, shared.

A watched pod is kilobytes (managed fields, env, volumes, probes, container statuses); the
engine reads a handful of fields (``engine.parse.parse_pod``): name, namespace, labels,
deletion, phase, start time, the Ready condition and the containers' requests. Keeping only
those makes the pod cache of a large cluster several times smaller (kube-controller-manager
keeps ~13 KB a pod); a snapshot built from it decides exactly as one built from the whole
object (tested against ``parse_pod``).

What is left is still mostly repeats: every pod of a template has the same labels and the
same containers, and "Running", "True", "Ready" and the namespace are decoded afresh from
every pod's JSON. Measured at 20,000 pods (tracemalloc, in the running controller), the
decoded strings alone were 2 KB a pod. So the kept pods share what they have in common: one
labels object and one spec object per distinct value, and one copy of each short string --
and ``pod_parses.PodParses`` parses each shared spec once, so their Pods share it too.
Nothing here is ever changed in place (a changed pod is a new object), which is what makes
the sharing safe.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

_META = ("name", "namespace", "labels", "deletionTimestamp")
# distinct labels and specs kept for sharing; past it the table starts again (pods already
# kept keep what they share)
SHARED = 65_536


class _Shared:
    """One object per distinct value, for values that are never changed in place."""

    def __init__(self, limit: int = SHARED) -> None:
        self.limit = limit
        self._by_value: dict[Any, Any] = {}

    def get(self, key: Any, value: Any) -> Any:
        hit = self._by_value.get(key)
        if hit is not None:
            return hit
        if len(self._by_value) >= self.limit:
            self._by_value.clear()
        self._by_value[key] = value
        return value


_labels = _Shared()
_specs = _Shared()


def _str(v: Any) -> Any:
    return sys.intern(v) if type(v) is str else v


def _container(c: dict[str, Any], *extra: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": _str(c.get("name", ""))}
    requests = (c.get("resources") or {}).get("requests")
    if requests:
        out["resources"] = {"requests": requests}
    for k in extra:
        if k in c:
            out[k] = _str(c[k])
    return out


def _kept(obj: dict[str, Any], keys: tuple[str, ...], interned: tuple[str, ...]) -> dict[str, Any]:
    """``keys`` of ``obj`` that it has, the ``interned`` ones as one shared string each."""
    return {k: _str(obj[k]) if k in interned else obj[k] for k in keys if k in obj}


def _shared_labels(labels: Any) -> Any:
    if not isinstance(labels, dict) or not labels:
        return labels
    try:
        key = tuple(labels.items())
        hash(key)
    except TypeError:  # a value that is not a string: kept as it is, for parse_pod to reject
        return labels
    return _labels.get(key, {_str(k): _str(v) for k, v in labels.items()})


def _shared_spec(spec: dict[str, Any]) -> dict[str, Any]:
    try:
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # not JSON (never from the API server): kept as it is
        return spec
    shared: dict[str, Any] = _specs.get(key, spec)
    return shared


def pod_essentials(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the engine reads it (an Informer transform)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    kept_spec: dict[str, Any] = {"containers": [_container(c) for c in spec.get("containers") or []]}
    if spec.get("initContainers"):
        kept_spec["initContainers"] = [_container(c, "restartPolicy") for c in spec["initContainers"]]
    for k in ("resources", "overhead"):  # pod-level requests (a feature gate) and RuntimeClass overhead
        if k in spec:
            kept_spec[k] = spec[k]
    kept_status = _kept(status, ("phase", "startTime"), interned=("phase",))
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if ready:
        kept_status["conditions"] = [
            _kept(ready[0], ("type", "status", "lastTransitionTime"), interned=("type", "status"))
        ]
    kept_meta = _kept(meta, _META, interned=("namespace",))
    if "labels" in kept_meta:
        kept_meta["labels"] = _shared_labels(kept_meta["labels"])
    return {
        "apiVersion": _str(pod.get("apiVersion", "v1")),
        "kind": _str(pod.get("kind", "Pod")),
        "metadata": kept_meta,
        "spec": _shared_spec(kept_spec),
        "status": kept_status,
    }
