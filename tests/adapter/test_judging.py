"""MetricRules judged in real worker processes: a judgment that crashes its worker or
overruns its deadline costs that rule, not the adapter. The crash is the real one
promql-parser 0.12.0 has (docs/security.md), caused in a worker by parsing past the size
limits the judge itself keeps; the overrun is a real judgment that takes too long."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import promql_parser
import pytest
from prometheus_client import CollectorRegistry

from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_rules import NAMESPACED
from adapter.metricrules.team_rules import Limits
from adapter.metricrules.team_rules import TeamRule
from adapter.metricrules.team_rules import Verdict


def parse_without_limits(kind: str, obj: dict[str, Any], limits: Limits, now: float | None) -> Verdict:
    """What judging was before the size limits: the query straight into the parser."""
    promql_parser.parse(obj["spec"]["query"])
    return Verdict("True", "Served", "parsed")


def slow(kind: str, obj: dict[str, Any], limits: Limits, now: float | None) -> Verdict:
    time.sleep(float(obj["spec"]["query"]))
    return Verdict("True", "Served", "slept")


def rule(query: str, name: str = "r") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a"}, "spec": {"metric": "m", "query": query}}


@pytest.fixture
def judge() -> Iterator[RuleJudge]:
    j = RuleJudge(Limits(), workers=1, timeout=10, registry=CollectorRegistry())
    j.start()
    yield j
    j.close()


def test_a_rule_is_judged_in_a_worker_as_it_would_be_here(judge: RuleJudge) -> None:
    got = asyncio.run(judge.judge(NAMESPACED, rule("sum(x)")))
    assert isinstance(got, TeamRule)
    assert got.query == 'sum({__name__="x",namespace="team-a"})'


def test_a_worker_that_crashes_makes_its_rule_invalid_and_is_replaced(judge: RuleJudge) -> None:
    judge.work = parse_without_limits
    crash = "abs(" * 8000 + "x" + ")" * 8000  # a segmentation fault in 0.3 s
    got = asyncio.run(judge.judge(NAMESPACED, rule(crash), timeout=120))
    assert isinstance(got, Verdict)
    assert got.reason == "Invalid"
    assert "ended its worker (exit code -11)" in got.message
    assert judge.failures.labels("crashed")._value.get() == 1
    again = asyncio.run(judge.judge(NAMESPACED, rule("sum(x)")))  # the replacement answers
    assert again == Verdict("True", "Served", "parsed")


def test_a_judgment_past_its_deadline_makes_its_rule_invalid(judge: RuleJudge) -> None:
    judge.work = slow
    t0 = time.monotonic()
    got = asyncio.run(judge.judge(NAMESPACED, rule("30"), timeout=1.0))
    assert time.monotonic() - t0 < 10
    assert isinstance(got, Verdict)
    assert "longer than 1s" in got.message
    assert judge.failures.labels("timeout")._value.get() == 1
    assert asyncio.run(judge.judge(NAMESPACED, rule("0"))) == Verdict("True", "Served", "slept")


def test_the_query_that_crashed_the_parser_is_refused_by_the_real_judge(judge: RuleJudge) -> None:
    got = asyncio.run(judge.judge(NAMESPACED, rule("abs(" * 8000 + "x" + ")" * 8000)))
    assert isinstance(got, Verdict)
    assert "--team-rule-max-query-length" in got.message
    assert judge.failures.labels("crashed")._value.get() == 0
