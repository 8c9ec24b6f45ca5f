"""Writes: the scale subresource, HPA status (only when it changed, retrying conflicts) and
Events from ``horizontal-pod-autoscaler`` (``promhpa`` in a dry run), aggregated like
client-go's recorder (a repeat of the same event bumps its count instead of creating another)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from cachetools import TTLCache

from controller.live.second_writer import FIELD_MANAGER
from shared.durations import format_time
from shared.kube.client import Kube
from shared.kube.errors import Conflict, KubeError
from shared.kube.resources import HPA, Resource

COMPONENT = "horizontal-pod-autoscaler"
# our writes' field manager, so managedFields tell them from another controller's
# (``second_writer`` reads them)
AS_US = [("fieldManager", FIELD_MANAGER)]


async def update_status(
    kube: Kube, hpa: dict[str, Any], status: dict[str, Any], attempts: int = 3, kind: Resource = HPA
) -> dict[str, Any] | None:
    """PUT the status if it differs; on a conflict, re-read the HPA and try again. The HPA
    as written (its resourceVersion is what read-your-writes waits for), or None when the
    status was already as decided."""
    current = hpa
    for _ in range(attempts):
        if current.get("status") == status:
            return None
        # never managedFields: the informer's copy has no field sets (``hpa_fields``), and the
        # server's record of who owns what is its own
        meta = {k: v for k, v in current["metadata"].items() if k != "managedFields"}
        body = {**current, "metadata": meta, "status": status}
        try:
            written = await kube.put(
                kind.path(current["metadata"]["namespace"], current["metadata"]["name"]) + "/status",
                body,
                AS_US,
            )
            return written if isinstance(written, dict) else {}
        except KubeError as e:
            if not isinstance(e, Conflict):
                raise
            current = await kube.get(kind.path(current["metadata"]["namespace"], current["metadata"]["name"]))
            status = _keeping_last_scale(status, current.get("status") or {})
    raise Conflict(409, f"status update kept conflicting after {attempts} attempts")


def _keeping_last_scale(status: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """A status decided on a read older than the conflicting write keeps that write's
    ``lastScaleTime`` when it has none: it did not rescale (a rescale sets one), and the
    other writer's record of the last rescale -- ``adopt`` carrying an HPA's over, say -- is
    newer than anything it read."""
    if "lastScaleTime" in status or "lastScaleTime" not in fresh:
        return status
    return {"lastScaleTime": fresh["lastScaleTime"], **status}


class EventRecorder:
    def __init__(
        self, kube: Kube, ttl: float = 600, component: str = COMPONENT, kind: Resource = HPA
    ) -> None:
        self.kube = kube
        # a dry run's events, and those of promhpa's own kind, are promhpa's, never the built-in's
        self.component = component
        self.kind = kind  # what the events are about (involvedObject)
        self._seen: TTLCache[str, dict[str, Any]] = TTLCache(maxsize=10_000, ttl=ttl)

    async def record(self, hpa: dict[str, Any], type_: str, reason: str, message: str) -> None:
        meta = hpa["metadata"]
        now = format_time(datetime.now(UTC))
        key = hashlib.sha256(f"{meta.get('uid')}|{type_}|{reason}|{message}".encode()).hexdigest()
        ns = meta["namespace"]
        seen = self._seen.get(key)
        if seen is not None:
            seen = {**seen, "count": int(seen.get("count", 1)) + 1, "lastTimestamp": now}
            try:
                self._seen[key] = await self.kube.put(
                    f"/api/v1/namespaces/{ns}/events/{seen['metadata']['name']}", seen
                )
                return
            except KubeError:
                pass  # expired or deleted: create a new one
        event_name = f"{meta['name']}.{key[:16]}"
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{key[:16]}", "namespace": ns},
            "involvedObject": {
                "apiVersion": self.kind.api_version,
                "kind": self.kind.kind,
                "name": meta["name"],
                "namespace": ns,
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
        }
        try:
            self._seen[key] = await self.kube.post(f"/api/v1/namespaces/{ns}/events", event)
        except KubeError as e:
            if isinstance(e, Conflict):  # same name exists from an earlier run: count it there
                existing = await self.kube.get(f"/api/v1/namespaces/{ns}/events/{event_name}")
                self._seen[key] = existing
                await self.record(hpa, type_, reason, message)
            else:
                raise
