"""The rules webhook: a ConfigMap of rules is checked before it reaches any adapter.

The chart registers a ValidatingWebhookConfiguration for its rules ConfigMap pointing here,
so ``helm upgrade`` (or ``kubectl apply``) with a broken rule is refused by the API server
with the same errors ``check-config`` prints -- file:line:key, Prometheus' own message for a
query it rejects -- and nothing changes: the ConfigMap keeps the old rules and the running
adapters keep serving them.

Who may call it. A review runs the submitted rules' queries against Prometheus, so an open
endpoint would let anyone who reaches the port send heavy queries. It is served on a
listener of its own (``--rules-webhook-port``) that answers only callers presenting a
client certificate signed by ``--rules-webhook-client-ca-file``: the certificate the
kube-apiserver presents to webhooks once its AdmissionConfiguration names one. No
certificate is 401, a certificate of another CA fails the TLS handshake, and a common name
outside ``--rules-webhook-allowed-names`` is 403. A certificate, not a token: it is checked
in the handshake with no call to the API server, on the API server's own request path; and
a listener of its own keeps the webhook's CA out of the serving port's trust, where a
certificate is also how the front proxy asserts a user.

What one review can cost is bounded: a body no larger than a ConfigMap can be; Prometheus
checks under ``--rules-webhook-timeout`` (below the webhook's own timeout); at most
``--rules-webhook-concurrency`` reviews query Prometheus at once, and a review past that
is checked offline at once (syntax, keys, templates, resources) and admitted with a
warning rather than queued: no slow review can hold a valid one past its timeout. When
Prometheus cannot answer in time the rules are admitted with a warning too: an outage must
not block a fix, and every adapter checks the rules again when it loads them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from adapter.admission.check_config import Verdict, validate
from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_rules import CLUSTER, NAMESPACED, key_of
from adapter.metricrules.team_rules import Verdict as TeamVerdict
from promclient.backends import Backends
from promclient.promapi import PrometheusAPI
from shared.kube.secureport import Handler

log = structlog.get_logger("adapter.webhook")

WEBHOOK_PATH = "/validate/rules"
MAX_BODY = 3 * 1024 * 1024  # a ConfigMap is at most 1 MiB; its JSON escaping can triple it


class WebhookMetrics:
    """The webhook's own counts, registered beside the adapter's metrics."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = registry or CollectorRegistry()
        p = "promhpa_adapter_rules_webhook"
        self.reviews = Counter(
            f"{p}_reviews_total",
            "Rule reviews answered, by result: allowed, denied, refused (not authenticated or "
            "authorized), bad_request, or allowed_offline (busy or Prometheus too slow: checked offline)",
            ["result"],
            registry=r,
        )
        self.seconds = Histogram(f"{p}_review_duration_seconds", "Time to answer one review", registry=r)


def _review(uid: str, allowed: bool, message: str = "", warnings: list[str] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 422, "reason": "Invalid", "message": message}
    if warnings:
        response["warnings"] = [w[:1000] for w in warnings[:20]]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def _peer(request: web.Request) -> str | None:
    """The verified client certificate's common name ("" without one); None without TLS."""
    transport = request.transport
    sslobj = transport.get_extra_info("ssl_object") if transport else None
    if sslobj is None:
        return None
    cert = sslobj.getpeercert()
    if not cert:
        return ""
    return next((str(v) for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"), "")


def client_certificate_required(
    allowed_names: tuple[str, ...], metrics: WebhookMetrics
) -> Callable[..., Awaitable[web.StreamResponse]]:
    """Middleware: 401 without a verified client certificate, 403 for a name not allowed."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        name = _peer(request)
        if not name:
            metrics.reviews.labels("refused").inc()
            log.warning("webhook call without a client certificate refused", peer=request.remote)
            return web.json_response({"message": "a client certificate is required"}, status=401)
        if allowed_names and name not in allowed_names:
            metrics.reviews.labels("refused").inc()
            log.warning("webhook call from a certificate not allowed", common_name=name, peer=request.remote)
            return web.json_response(
                {"message": f"the client certificate's common name {name!r} is not allowed"}, status=403
            )
        return await handler(request)

    return check


async def _counted(metrics: WebhookMetrics, answer: Awaitable[tuple[str, web.Response]]) -> web.Response:
    """A review's answer, timed and counted by its result."""
    started = time.monotonic()
    try:
        result, response = await answer
    finally:
        metrics.seconds.observe(time.monotonic() - started)
    metrics.reviews.labels(result).inc()
    return response


class RulesReviewer:
    """Answers AdmissionReviews of a rules ConfigMap, each within its own bounds."""

    def __init__(
        self,
        prom: PrometheusAPI | Backends,
        max_age: timedelta,
        key: str = "config.yaml",
        *,
        timeout: float = 8.0,
        concurrency: int = 4,
        metrics: WebhookMetrics | None = None,
    ) -> None:
        self.prom, self.max_age, self.key, self.timeout = prom, max_age, key, timeout
        self.metrics = metrics or WebhookMetrics()
        self._free = max(0, concurrency)  # reviews that may query Prometheus now

    async def _verdict(self, text: str, where: str) -> tuple[Verdict, str | None]:
        """The full check when a slot is free and Prometheus answers in time; else the offline
        one at once, with why."""
        if self._free <= 0:
            return await validate(text, where, None, self.max_age), "the webhook is busy"
        self._free -= 1  # no await between the test and this: the loop runs one review at a time here
        try:
            async with asyncio.timeout(self.timeout):
                return await validate(text, where, self.prom, self.max_age), None
        except TimeoutError:
            why = f"Prometheus did not answer within {self.timeout:g}s"
            return await validate(text, where, None, self.max_age), why
        finally:
            self._free += 1

    async def handle(self, request: web.Request) -> web.Response:
        """``POST /validate/rules`` (AdmissionReview v1, a ConfigMap object)."""
        return await _counted(self.metrics, self._answer(request))

    async def _answer(self, request: web.Request) -> tuple[str, web.Response]:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return "bad_request", web.json_response({"message": "request too large"}, status=413)
        try:
            body = await request.json()
            req = body["request"]
            uid = str(req["uid"])
        except (ValueError, KeyError, TypeError):
            return "bad_request", web.json_response(
                {"message": "expected an admission.k8s.io/v1 AdmissionReview"}, status=400
            )
        obj = req.get("object") or {}
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", req.get("namespace", "")), meta.get("name", req.get("name", ""))
        where = f"configmap {ns}/{name}"
        text = (obj.get("data") or {}).get(self.key)
        if obj.get("kind") != "ConfigMap" or not isinstance(text, str):
            message = f"{where} has no {self.key!r} key with the adapter's rules"
            return "denied", web.json_response(_review(uid, False, message))
        verdict, offline = await self._verdict(text, f"{where} {self.key}")
        if verdict.errors:
            log.warning("rules refused", configmap=where, errors=verdict.errors)
            message = f"{len(verdict.errors)} error(s) in the adapter's rules:\n" + "\n".join(verdict.errors)
            return "denied", web.json_response(_review(uid, False, message))
        if offline is not None:
            log.warning("rules admitted after the offline checks only", configmap=where, why=offline)
            warning = f"checked offline only ({offline}); each adapter checks the rules again when loading"
            return "allowed_offline", web.json_response(_review(uid, True, warnings=[warning]))
        warnings = [f"not checked against Prometheus: {u}" for u in verdict.unverified]
        log.info("rules admitted", configmap=where, unverified=len(verdict.unverified))
        return "allowed", web.json_response(_review(uid, True, warnings=warnings))


class MetricRuleReviewer:
    """Answers AdmissionReviews of a MetricRule or ClusterMetricRule: what the adapter would
    judge ``Invalid`` or ``NotAllowed`` (its PromQL, its confinement, its size and cost
    limits, its backend) is refused at create time with the same message its status would
    carry; the rest -- a conflict, the file form's discovery -- depends on the cluster and is
    said on the status instead. Judged in the adapter's judging workers (``adapter.metricrules.judging``)
    within ``timeout``, below the webhook's own: a rule that cannot be judged in time is
    refused with why, as its status would say."""

    def __init__(self, judge: RuleJudge, metrics: WebhookMetrics, timeout: float = 8.0) -> None:
        self.judge, self.metrics, self.timeout = judge, metrics, timeout

    async def handle(self, request: web.Request) -> web.Response:
        """``POST /validate/metricrules`` (AdmissionReview v1)."""
        return await _counted(self.metrics, self._answer(request))

    async def _answer(self, request: web.Request) -> tuple[str, web.Response]:
        try:
            body = await request.json()
            req = body["request"]
            uid = str(req["uid"])
            kind = str(req["kind"]["kind"])
            obj = req["object"]
        except (ValueError, KeyError, TypeError):
            return "bad_request", web.json_response(
                {"message": "expected an admission.k8s.io/v1 AdmissionReview"}, status=400
            )
        if kind not in (NAMESPACED, CLUSTER) or not isinstance(obj, dict):
            return "denied", web.json_response(_review(uid, False, f"not a MetricRule: {kind}"))
        got = await self.judge.judge(kind, obj, time.time(), timeout=min(self.timeout, self.judge.timeout))
        _, ns, name = key_of(kind, obj)
        where = f"{kind} {ns + '/' if ns else ''}{name}"
        if isinstance(got, TeamVerdict) and got.reason in ("Invalid", "NotAllowed"):
            log.warning("metric rule refused", rule=where, reason=got.reason, message=got.message)
            return "denied", web.json_response(_review(uid, False, f"{where}: {got.message}"))
        warnings = [got.message] if isinstance(got, TeamVerdict) else []
        return "allowed", web.json_response(_review(uid, True, warnings=warnings))


METRIC_RULES_PATH = "/validate/metricrules"


def webhook_app(
    reviewer: RulesReviewer, allowed_names: tuple[str, ...] = (), team: MetricRuleReviewer | None = None
) -> web.Application:
    """The webhook's application, for its own listener (``adapter.server``)."""
    app = web.Application(
        middlewares=[client_certificate_required(allowed_names, reviewer.metrics)], client_max_size=MAX_BODY
    )
    app.router.add_post(WEBHOOK_PATH, reviewer.handle)
    if team is not None:
        app.router.add_post(METRIC_RULES_PATH, team.handle)
    return app
