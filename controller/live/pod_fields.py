"""What the controller keeps of a pod: exactly the fields the algorithm reads.

A watched pod is kilobytes (managed fields, env, volumes, probes, container statuses); the
engine reads a handful of fields (``engine.parse.parse_pod``): name, namespace, labels,
deletion, phase, start time, the Ready condition and the containers' requests. Keeping only
those makes the pod cache of a large cluster several times smaller (kube-controller-manager
keeps ~13 KB a pod); a snapshot built from it decides exactly as one built from the whole
object (tested against ``parse_pod``).
"""

from __future__ import annotations

from typing import Any

_META = ("name", "namespace", "labels", "deletionTimestamp", "resourceVersion", "uid")


def _container(c: dict[str, Any], *extra: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.get("name", "")}
    requests = (c.get("resources") or {}).get("requests")
    if requests:
        out["resources"] = {"requests": requests}
    for k in extra:
        if k in c:
            out[k] = c[k]
    return out


def pod_essentials(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the engine reads it (an Informer transform)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    kept_spec: dict[str, Any] = {"containers": [_container(c) for c in spec.get("containers") or []]}
    if spec.get("initContainers"):
        kept_spec["initContainers"] = [_container(c, "restartPolicy") for c in spec["initContainers"]]
    for k in ("resources", "overhead"):  # pod-level requests (a feature gate) and RuntimeClass overhead
        if k in spec:
            kept_spec[k] = spec[k]
    kept_status: dict[str, Any] = {k: status[k] for k in ("phase", "startTime") if k in status}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    if ready:
        kept_status["conditions"] = [
            {k: ready[0][k] for k in ("type", "status", "lastTransitionTime") if k in ready[0]}
        ]
    return {
        "apiVersion": pod.get("apiVersion", "v1"),
        "kind": pod.get("kind", "Pod"),
        "metadata": {k: meta[k] for k in _META if k in meta},
        "spec": kept_spec,
        "status": kept_status,
    }
