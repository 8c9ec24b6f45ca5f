"""What serves a metrics request, as one interface, and the chain that asks each in turn.

A provider lists the resources it serves (discovery) and answers a request, or declines it
(None) for the next one. The adapter chains the upstream metrics servers it forwards to
(``adapter.forwarding``: their routing patterns come first) ahead of the rule file and its
MetricRules (``adapter.serving.providers``), so a metric is answered and listed by the same
provider; failures leave the chain as ``errors.StatusError`` only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from promclient.promapi import PrometheusTimeout, PrometheusUnavailable
from rules.promql import QueryError
from rules.templates import TemplateError

from .errors import StatusError
from .requests import MetricRequest, NotFound


@dataclass(frozen=True)
class Forwarded:
    """Another metrics server's answer, passed on as it came (status and body)."""

    code: int
    body: bytes


Answer = dict[str, Any] | Forwarded


class MetricsProvider(Protocol):
    def resources(self, req: MetricRequest) -> list[dict[str, Any]]:
        """The APIResource entries of ``req``'s group and version this provider serves."""
        ...

    async def answer(self, req: MetricRequest, path_qs: str) -> Answer | None:
        """The answer to a request for values (``path_qs``: the path and query as received),
        or None when another provider should answer it."""
        ...


class ProviderChain:
    """Providers in order: the first that answers a request serves it, and discovery lists
    each name once, as the first provider listing it has it (the one that answers it)."""

    def __init__(self, providers: Sequence[MetricsProvider]) -> None:
        self.providers = tuple(providers)

    def resources(self, req: MetricRequest) -> list[dict[str, Any]]:
        seen: set[Any] = set()
        out: list[dict[str, Any]] = []
        for p in self.providers:
            for r in p.resources(req):
                if r.get("name") not in seen:
                    seen.add(r.get("name"))
                    out.append(r)
        return out

    async def answer(self, req: MetricRequest, path_qs: str) -> Answer:
        for p in self.providers:
            try:
                found = await p.answer(req, path_qs)
            except Exception as e:
                status = as_status(e)
                if status is None:
                    raise
                raise status from e
            if found is not None:
                return found
        raise NotFound(f"no provider serves {req.group}/{req.version} {req.metric or req.resource}")


def as_status(e: Exception) -> StatusError | None:
    """The ``Status`` a failure of the layers below the adapter is served as: Prometheus past
    its deadline 504, Prometheus unable to answer 503, a query or template a request made
    invalid 400. None: not a failure with a status (a bug, served as 500 by aiohttp)."""
    if isinstance(e, StatusError):
        return e
    if isinstance(e, PrometheusTimeout):
        return StatusError(str(e), code=504, reason="Timeout")
    if isinstance(e, PrometheusUnavailable):
        return StatusError(str(e), code=503, reason="ServiceUnavailable")
    if isinstance(e, QueryError | TemplateError):
        return StatusError(str(e), code=400, reason="BadRequest")
    return None
