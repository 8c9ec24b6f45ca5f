"""The admission webhook of promhpa's own HPA kind: the API server's refusals, in its words.

A built-in HPA that breaks one of autoscaling/v2's cross-field rules (a metric source that
does not match its ``type``, a target without the value its type needs, a bound below the
other) is refused by the API server with a ``Status`` naming each field. The CRD's schema
holds types, enums and patterns, not those rules, so the chart registers this webhook for
``horizontalpodautoscalers.autoscaling.promhpa.io``: it checks the object with
``engine.hpa_validation`` -- the rules and messages the API server uses, held against a real
one by the validation table -- and refuses it with the same causes (``details.causes``:
field and message each), which kubectl prints as it prints the built-in kind's.

Cheap by construction: a bounded body, a pure check, no call out. So it is open: served on
a listener of its own (``--admission-webhook-port``) that asks no client certificate -- API
servers of managed clusters call webhooks without credentials, and one configured with a
webhook client certificate presents one the controller cannot verify, which the endpoints'
listener (client certificates of the cluster's client CA) would refuse in the handshake.
"""

from __future__ import annotations

import ssl
from typing import Any

from aiohttp import web

from controller.engine.hpa_validation import validate_hpa
from controller.engine.knobs import settings_for
from controller.engine.model import Settings
from controller.engine.reader import SnapshotError
from shared.kube.resources import OWN_HPA

PATH = "/validate/horizontalpodautoscalers"
MAX_BODY = 3 * 1024 * 1024  # an object is at most 1.5 MiB in etcd; its review's JSON wraps it twice


def refusal(obj: dict[str, Any], settings: Settings) -> dict[str, Any] | None:
    """The Status the API server would answer for this object of promhpa's kind (422 Invalid,
    one cause per problem), or None when it would store it."""
    knobs: list[str] = []
    try:  # the release an object decides as sets the gates it is judged by
        settings = settings_for(obj, settings)[0]
    except SnapshotError as e:  # spec.controller's values the schema cannot judge
        path = e.path.removeprefix("hpa.")
        knobs = [f"{path}: Invalid value: {e.message}" if path else f"spec.controller: Invalid value: {e}"]
    problems = validate_hpa(obj, True, settings.feature_gates.hpa_configurable_tolerance) + knobs
    if not problems:
        return None
    name = str((obj.get("metadata") or {}).get("name") or "")
    causes = []
    for p in problems:
        field, _, message = p.partition(": ")
        causes.append({"reason": _reason(message), "message": message, "field": field})
    listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return {
        "code": 422,
        "reason": "Invalid",
        "message": f'{OWN_HPA.kind}.{OWN_HPA.group} "{name}" is invalid: {listed}',
        "details": {"name": name, "group": OWN_HPA.group, "kind": OWN_HPA.kind, "causes": causes},
    }


def _reason(message: str) -> str:
    """metav1.CauseType of a field.Error's message, as the API server writes it."""
    for words, reason in (
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too many", "FieldValueTooMany"),
        ("Too long", "FieldValueTooLong"),
    ):
        if message.startswith(words):
            return reason
    return "FieldValueInvalid"


async def serve(bind: str, port: int, ctx: ssl.SSLContext, settings: Settings) -> web.AppRunner:
    """The webhook on its own listener (``ctx`` asks no client certificate), serving."""
    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post(PATH, handler(settings))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, bind, port, ssl_context=ctx).start()
    except OSError:
        await runner.cleanup()
        raise
    return runner


def handler(settings: Settings) -> Any:
    """``POST /validate/horizontalpodautoscalers`` (AdmissionReview v1)."""

    async def review(request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return web.json_response({"message": "request too large"}, status=413)
        try:
            body = await request.json()
            req = body["request"]
            uid = str(req["uid"])
            obj = req.get("object")
        except (ValueError, KeyError, TypeError):
            return web.json_response(
                {"message": "expected an admission.k8s.io/v1 AdmissionReview"}, status=400
            )
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        if isinstance(obj, dict) and req.get("operation") in ("CREATE", "UPDATE"):
            status = refusal(obj, settings)
            if status is not None:
                response = {"uid": uid, "allowed": False, "status": status}
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    return review
