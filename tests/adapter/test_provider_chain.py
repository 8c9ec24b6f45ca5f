"""The provider chain: who answers, what discovery lists, and the one error type that
leaves it (pure: providers here are plain objects implementing the interface)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapter.api.errors import StatusError
from adapter.api.provider import Forwarded
from adapter.api.provider import ProviderChain
from adapter.api.requests import NotFound
from adapter.api.requests import parse_path
from promclient.promapi import PrometheusRejected
from promclient.promapi import PrometheusTimeout
from promclient.promapi import PrometheusUnavailable
from rules.promql import QueryError

REQ = parse_path("/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_depth", {})
DISCOVERY = parse_path("/apis/external.metrics.k8s.io/v1beta1", {})


class Listing:
    """Lists ``names``; answers ``answer`` (None: declines), or raises ``error``."""

    def __init__(self, names: list[str], answer: Any = None, error: Exception | None = None) -> None:
        self.names, self._answer, self.error, self.asked = names, answer, error, 0

    def resources(self, req: Any) -> list[dict[str, Any]]:
        return [{"name": n, "kind": f"from {id(self)}"} for n in self.names]

    async def answer(self, req: Any, path_qs: str) -> Any:
        self.asked += 1
        if self.error is not None:
            raise self.error
        return self._answer


def answer(chain: ProviderChain) -> Any:
    return asyncio.run(chain.answer(REQ, "/apis/..."))


def test_the_first_provider_that_answers_serves_the_request() -> None:
    upstream = Listing([], answer=Forwarded(200, b"{}"))
    rules = Listing([], answer={"kind": "ExternalMetricValueList"})
    assert answer(ProviderChain([upstream, rules])) == Forwarded(200, b"{}")
    assert rules.asked == 0


def test_a_provider_that_declines_passes_the_request_on() -> None:
    rules = Listing([], answer={"kind": "ExternalMetricValueList"})
    assert answer(ProviderChain([Listing([]), rules])) == {"kind": "ExternalMetricValueList"}


def test_a_request_no_provider_answers_is_not_found() -> None:
    with pytest.raises(NotFound, match="queue_depth"):
        answer(ProviderChain([Listing([])]))


def test_discovery_lists_a_name_once_as_the_provider_that_answers_it_has_it() -> None:
    first, second = Listing(["a", "shared"]), Listing(["shared", "b"])
    listed = ProviderChain([first, second]).resources(DISCOVERY)
    assert [r["name"] for r in listed] == ["a", "shared", "b"]
    assert listed[1]["kind"] == f"from {id(first)}"


@pytest.mark.parametrize(
    ("error", "code", "reason"),
    [
        (PrometheusTimeout("no answer in 10s"), 504, "Timeout"),
        (PrometheusUnavailable("refused"), 503, "ServiceUnavailable"),
        (PrometheusRejected("parse error"), 503, "ServiceUnavailable"),
        (QueryError("bad label"), 400, "BadRequest"),
        (
            StatusError("slow down", code=429, reason="TooManyRequests", retry_after=2.0),
            429,
            "TooManyRequests",
        ),
    ],
    ids=["timeout", "unavailable", "rejected", "query", "status"],
)
def test_every_failure_leaves_the_chain_as_one_status_error(error: Exception, code: int, reason: str) -> None:
    with pytest.raises(StatusError) as raised:
        answer(ProviderChain([Listing([], error=error)]))
    assert (raised.value.code, raised.value.reason) == (code, reason)
    assert str(error) in str(raised.value)


def test_a_bug_in_a_provider_is_not_dressed_as_a_status() -> None:
    with pytest.raises(KeyError):
        answer(ProviderChain([Listing([], error=KeyError("bug"))]))
