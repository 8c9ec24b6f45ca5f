"""The secure port's gate, on a real aiohttp server on loopback: the order of its checks and
its answers. Who a caller is and what it may do are the gate's inputs (each process's own
``authenticate``/``authorize``); the delegated reviews behind them are tested live with the
adapter and the controller."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer

from shared.kube.delegated import User
from shared.kube.errors import KubeError
from shared.kube.secureport import Gate
from shared.kube.secureport import add_metrics_route
from shared.kube.secureport import add_probe_routes
from shared.kube.secureport import bearer_token
from shared.kube.secureport import status_response

USERS = {"alice": User("alice", ("devs",)), "bob": User("bob")}


async def _authenticate(request: web.Request) -> User | None:
    token = bearer_token(request)
    if token == "down":
        raise KubeError(0, "TokenReview: no answer")
    return USERS.get(token or "")


async def _authorize(request: web.Request, user: User) -> tuple[bool, str]:
    return user.name == "alice", "" if user.name == "alice" else "no RBAC rule"


def _admit(request: web.Request) -> web.StreamResponse | None:
    return status_response(400, "BadRequest", "bad path") if "//" in request.path else None


def _forbidden(request: web.Request, user: User) -> str:
    return f'user "{user.name}" cannot get path "{request.path}"'


async def _debug(_: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _ask(path: str, token: str | None = None) -> tuple[int, Any]:
    from prometheus_client import CollectorRegistry
    from prometheus_client import Counter

    registry = CollectorRegistry()
    Counter("served", "requests", registry=registry).inc()
    gate = Gate(_authenticate, _authorize, _forbidden, admit=_admit)
    app = web.Application(middlewares=[gate.middleware()])
    add_probe_routes(app, alive=lambda: None, ready=lambda: "informers not synced")
    add_metrics_route(app, registry)
    app.router.add_get("/debug/{rest:.*}", _debug)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        r = await client.get(path, headers=headers)
        body = await r.json() if r.content_type == "application/json" else await r.text()
        return r.status, body


def test_probes_are_open_and_readiness_says_why_it_is_not_ready() -> None:
    assert asyncio.run(_ask("/healthz")) == (200, "ok")
    assert asyncio.run(_ask("/readyz")) == (503, "informers not synced")


def test_no_credentials_is_an_unauthorized_status() -> None:
    code, body = asyncio.run(_ask("/metrics"))
    assert code == 401
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "Unauthorized", 401)


def test_a_user_without_the_permission_gets_forbidden_with_the_reason() -> None:
    code, body = asyncio.run(_ask("/metrics", "bob"))
    assert code == 403
    assert body["message"] == 'user "bob" cannot get path "/metrics": no RBAC rule'


def test_an_allowed_user_is_served() -> None:
    code, body = asyncio.run(_ask("/metrics", "alice"))
    assert code == 200
    assert "served_total 1.0" in body


def test_an_api_server_that_cannot_be_asked_is_service_unavailable_not_a_refusal() -> None:
    code, body = asyncio.run(_ask("/metrics", "down"))
    assert code == 503
    assert body["reason"] == "ServiceUnavailable"
    assert "TokenReview: no answer" in body["message"]


def test_a_request_refused_on_its_face_is_answered_before_anyone_is_asked() -> None:
    code, body = asyncio.run(_ask("/debug//x", "down"))  # "down" would be a 503 if asked
    assert (code, body["reason"]) == (400, "BadRequest")
