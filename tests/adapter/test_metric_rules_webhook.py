"""The MetricRule admission review, called as the kube-apiserver calls it (aiohttp's test
client over the webhook's own application; the client-certificate gate is tested in
test_rules_webhook.py and end to end in tests/charts/test_install.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from aiohttp.test_utils import TestServer

from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_rules import Limits
from adapter.serving.rules_webhook import METRIC_RULES_PATH
from adapter.serving.rules_webhook import MetricRuleReviewer
from adapter.serving.rules_webhook import WebhookMetrics


@pytest.fixture(scope="module")
def judge() -> Iterator[RuleJudge]:
    """The adapter's judging pool, one real worker process."""
    j = RuleJudge(Limits(), workers=1, timeout=10)
    j.start()
    yield j
    j.close()


def review(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "promhpa.io", "version": "v1alpha1", "kind": kind},
            "object": {"metadata": {"name": "r", "namespace": "team-a"}, "spec": spec},
        },
    }


async def answer(judge: RuleJudge, body: dict[str, Any]) -> dict[str, Any]:
    app = web.Application()
    app.router.add_post(METRIC_RULES_PATH, MetricRuleReviewer(judge, WebhookMetrics()).handle)
    async with TestClient(TestServer(app)) as client:
        resp = await client.post(METRIC_RULES_PATH, json=body)
        assert resp.status == 200
        out: dict[str, Any] = (await resp.json())["response"]
        return out


def test_invalid_promql_is_denied_with_the_parsers_message(judge: RuleJudge) -> None:
    got = asyncio.run(answer(judge, review("MetricRule", {"metric": "m", "query": "sum(x"})))
    assert got["allowed"] is False
    assert got["status"]["message"].startswith("MetricRule team-a/r: spec.query: not valid PromQL")


def test_a_backend_the_platform_does_not_allow_is_denied(judge: RuleJudge) -> None:
    got = asyncio.run(
        answer(judge, review("MetricRule", {"metric": "m", "query": "sum(x)", "backend": "other"}))
    )
    assert got["allowed"] is False
    assert "not one a MetricRule may use" in got["status"]["message"]


def test_a_valid_rule_is_allowed(judge: RuleJudge) -> None:
    got = asyncio.run(answer(judge, review("MetricRule", {"metric": "m", "query": "sum(x)"})))
    assert got == {"uid": "u1", "allowed": True}


def test_a_file_form_the_rule_files_parser_refuses_is_denied_naming_the_key(judge: RuleJudge) -> None:
    got = asyncio.run(answer(judge, review("MetricRule", {"seriesQuery": "x", "metricsQuery": "y"})))
    assert got["allowed"] is False
    assert "resources" in got["status"]["message"]


def test_a_query_over_the_size_limit_is_denied_naming_the_limit(judge: RuleJudge) -> None:
    query = "+".join(["x"] * 5000)  # the parser itself would crash on it
    got = asyncio.run(answer(judge, review("MetricRule", {"metric": "m", "query": query})))
    assert got["allowed"] is False
    assert "--team-rule-max-query-length" in got["status"]["message"]


def test_a_query_over_a_cost_limit_is_denied_naming_the_limit(judge: RuleJudge) -> None:
    got = asyncio.run(answer(judge, review("MetricRule", {"metric": "m", "query": "max_over_time(x[1d])"})))
    assert got["allowed"] is False
    assert "--team-rule-max-range" in got["status"]["message"]
