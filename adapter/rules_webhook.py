"""The rules webhook: a ConfigMap of rules is checked before it reaches any adapter.

The chart registers a ValidatingWebhookConfiguration for its rules ConfigMap pointing here,
so ``helm upgrade`` (or ``kubectl apply``) with a broken rule is refused by the API server
with the same errors ``check-config`` prints -- file:line:key, Prometheus' own message for a
query it rejects -- and nothing changes: the ConfigMap keeps the old rules and the running
adapters keep serving them.

Like every admission webhook it is called by the kube-apiserver without client credentials,
so it is open; what it can do for a caller is bounded: one validation at a time, a body no
larger than a ConfigMap can be, Prometheus calls under the adapter's own deadline, and its
answer carries only error texts, never series or values. When Prometheus cannot answer, the
rules are admitted with a warning: an outage must not block a fix.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import structlog
from aiohttp import web

from .backends import Backends
from .check_config import validate
from .promapi import PrometheusAPI

log = structlog.get_logger("adapter")

WEBHOOK_PATH = "/validate/rules"
MAX_BODY = 3 * 1024 * 1024  # a ConfigMap is at most 1 MiB; its JSON escaping can triple it


def _review(uid: str, allowed: bool, message: str = "", warnings: list[str] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 422, "reason": "Invalid", "message": message}
    if warnings:
        response["warnings"] = [w[:1000] for w in warnings[:20]]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def rules_webhook(prom: PrometheusAPI | Backends, max_age: timedelta, key: str = "config.yaml") -> Any:
    """The handler for ``POST /validate/rules`` (AdmissionReview v1, a ConfigMap object)."""
    one_at_a_time = asyncio.Lock()

    async def handle(request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return web.json_response({"message": "request too large"}, status=413)
        try:
            body = await request.json()
            req = body["request"]
            uid = str(req["uid"])
        except (ValueError, KeyError, TypeError):
            return web.json_response(
                {"message": "expected an admission.k8s.io/v1 AdmissionReview"}, status=400
            )
        obj = req.get("object") or {}
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", req.get("namespace", "")), meta.get("name", req.get("name", ""))
        where = f"configmap {ns}/{name}"
        text = (obj.get("data") or {}).get(key)
        if obj.get("kind") != "ConfigMap" or not isinstance(text, str):
            return web.json_response(
                _review(uid, False, f"{where} has no {key!r} key with the adapter's rules")
            )
        async with one_at_a_time:
            verdict = await validate(text, f"{where} {key}", prom, max_age)
        if verdict.errors:
            log.warning("rules refused", configmap=where, errors=verdict.errors)
            message = f"{len(verdict.errors)} error(s) in the adapter's rules:\n" + "\n".join(verdict.errors)
            return web.json_response(_review(uid, False, message))
        warnings = [f"not checked against Prometheus: {u}" for u in verdict.unverified]
        log.info("rules admitted", configmap=where, unverified=len(verdict.unverified))
        return web.json_response(_review(uid, True, warnings=warnings))

    return handle
