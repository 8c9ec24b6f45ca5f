"""API errors are typed from the Status the server answers with (pure)."""

from __future__ import annotations

import json

import pytest

from shared.kube.errors import Conflict
from shared.kube.errors import Forbidden
from shared.kube.errors import KubeError
from shared.kube.errors import NotFound
from shared.kube.errors import Timeout
from shared.kube.errors import from_status


def status(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    ).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (403, "Forbidden", Forbidden),
        (504, "Timeout", Timeout),
    ],
)
def test_status_becomes_its_typed_error(code: int, reason: str, cls: type[KubeError]) -> None:
    e = from_status(code, status(code, reason, "the message"), "GET /x")
    assert isinstance(e, cls)
    assert (e.status, e.reason, e.message, str(e)) == (code, reason, "the message", "GET /x: the message")


def test_an_answer_that_is_not_a_status_keeps_its_code() -> None:
    e = from_status(502, b"<html>bad gateway</html>", "GET /x", "Bad Gateway")
    assert type(e) is KubeError
    assert (e.status, e.message) == (502, "Bad Gateway")


def test_the_status_code_wins_over_the_http_code() -> None:
    assert isinstance(from_status(500, status(404, "NotFound", "gone"), "GET /x"), NotFound)
