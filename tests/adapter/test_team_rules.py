"""MetricRules and ClusterMetricRules judged and assigned (plain data; the live behaviour
is in test_team_rules_live.py)."""

from __future__ import annotations

from typing import Any

from adapter.metricrules.team_assignment import assign
from adapter.metricrules.team_assignment import condition
from adapter.metricrules.team_rules import CLUSTER
from adapter.metricrules.team_rules import NAMESPACED
from adapter.metricrules.team_rules import Limits
from adapter.metricrules.team_rules import TeamRule
from adapter.metricrules.team_rules import Verdict
from adapter.metricrules.team_rules import judge
from rules.naming import NAMESPACES
from rules.naming import PODS
from rules.queries import ObjectQuery

LIMITS = Limits(per_namespace=2, backends=frozenset({""}))


def rule(
    name: str,
    ns: str = "team-a",
    metric: str = "queue_depth",
    query: str = "sum(queue)",
    created: str = "t1",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "generation": 1, "creationTimestamp": created},
        "spec": {"metric": metric, "query": query, **spec},
    }


def test_a_direct_rule_is_served_with_its_query_confined_to_its_namespace() -> None:
    got = judge(NAMESPACED, rule("q"), LIMITS)
    assert isinstance(got, TeamRule)
    assert got.query == 'sum({__name__="queue",namespace="team-a"})'


def test_a_cluster_rule_is_parsed_but_not_confined() -> None:
    got = judge(CLUSTER, {"metadata": {"name": "q"}, "spec": {"metric": "m", "query": "sum(queue)"}}, LIMITS)
    assert isinstance(got, TeamRule)
    assert (got.namespace, got.query) == ("", "sum(queue)")


def test_invalid_promql_names_the_field_and_the_parsers_message() -> None:
    got = judge(NAMESPACED, rule("q", query="sum(queue"), LIMITS)
    assert isinstance(got, Verdict)
    assert (got.reason, got.message.startswith("spec.query: not valid PromQL")) == ("Invalid", True)


def test_a_backend_the_platform_does_not_allow_is_not_allowed() -> None:
    got = judge(NAMESPACED, rule("q", backend="thanos"), LIMITS)
    assert isinstance(got, Verdict)
    assert got.reason == "NotAllowed"
    assert "allowed: default" in got.message


def file_rule(name: str = "f", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team-a", "generation": 1, "creationTimestamp": "t1"},
        "spec": {
            "kind": "External",
            "seriesQuery": '{__name__=~"^jobs_.*"}',
            "name": {"matches": "^jobs_(.*)$", "as": "${1}_jobs"},
            "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)",
            **spec,
        },
    }


def test_the_file_form_discovers_and_renders_each_query_confined() -> None:
    got = judge(NAMESPACED, file_rule(), LIMITS)
    assert isinstance(got, TeamRule)
    assert got.selector == '{__name__=~"^jobs_.*",namespace="team-a"}'
    a, _ = assign([(NAMESPACED, file_rule())], {}, [], LIMITS, {got.key: {"waiting_jobs": "jobs_waiting"}})
    served = a.lookup("team-a", "waiting_jobs")
    assert served is not None
    query = served.rule.render(served.series, "team-a", None)
    assert query == 'sum by (queue)({__name__="jobs_waiting",namespace="team-a",namespace="team-a"})'
    assert a.verdicts[got.key].message == "serving 1 external metric(s): waiting_jobs"


def test_a_file_form_template_error_names_the_key() -> None:
    got = judge(NAMESPACED, file_rule(metricsQuery="sum(<<.Nope>>)"), LIMITS)
    assert isinstance(got, Verdict)
    assert got.reason == "Invalid"
    assert "metricsQuery" in got.message


def test_a_file_form_that_found_nothing_yet_says_so() -> None:
    a, _ = assign([(NAMESPACED, file_rule())], {}, [], LIMITS, {})
    assert a.verdicts[(NAMESPACED, "team-a", "f")].message.startswith("no series match spec.seriesQuery yet")


def test_a_discovered_name_the_rule_file_holds_is_left_to_it_and_said() -> None:
    key = (NAMESPACED, "team-a", "f")
    found = {key: {"waiting_jobs": "jobs_waiting", "done_jobs": "jobs_done"}}
    a, _ = assign([(NAMESPACED, file_rule())], {}, ["done_jobs"], LIMITS, found)
    assert a.lookup("team-a", "done_jobs") is None
    assert a.lookup("team-a", "waiting_jobs") is not None
    assert "held elsewhere: 'done_jobs' is served by the adapter's rule file" in a.verdicts[key].message


def custom_rule(name: str = "c") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team-a", "generation": 1, "creationTimestamp": "t1"},
        "spec": {
            "seriesQuery": '{__name__=~"^http_.*_total$",pod!=""}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}},
            "name": {"matches": "^http_(.*)_total$", "as": "${1}"},
            "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
        },
    }


def test_the_custom_file_form_serves_pod_metrics_of_its_namespace_confined() -> None:
    got = judge(NAMESPACED, custom_rule(), LIMITS)
    assert isinstance(got, TeamRule)
    assert got.custom
    found = {
        got.key: {(PODS, "requests"): "http_requests_total", (NAMESPACES, "requests"): "http_requests_total"}
    }
    a, _ = assign([(NAMESPACED, custom_rule())], {}, [], LIMITS, found)
    served = a.lookup_custom("team-a", PODS, "requests")
    assert served is not None
    query, label = served.rule.render_custom(served.series, ObjectQuery(PODS, "team-a", ("web-1",), None))
    assert label == "pod"
    assert 'namespace="team-a"' in query
    assert a.lookup_custom("team-a", NAMESPACES, "requests") is None  # no namespace's own object
    assert a.lookup_custom("team-b", PODS, "requests") is None
    assert a.verdicts[got.key].message == "serving 1 custom metric(s): pods/requests"


def test_a_custom_file_form_without_resources_names_the_key() -> None:
    obj = {
        "metadata": {"name": "f", "namespace": "team-a"},
        "spec": {"seriesQuery": "x", "metricsQuery": "y"},
    }
    got = judge(NAMESPACED, obj, LIMITS)
    assert isinstance(got, Verdict)
    assert got.reason == "Invalid"
    assert "resources" in got.message


def test_the_rule_file_holds_its_names_and_the_team_rule_says_conflict() -> None:
    a, _ = assign([(NAMESPACED, rule("q"))], {}, ["queue_depth"], LIMITS)
    assert a.lookup("team-a", "queue_depth") is None
    assert a.verdicts[(NAMESPACED, "team-a", "q")].reason == "Conflict"
    assert "rule file" in a.verdicts[(NAMESPACED, "team-a", "q")].message


def test_the_older_of_two_rules_for_one_name_holds_it() -> None:
    objs = [(NAMESPACED, rule("new", created="t2")), (NAMESPACED, rule("old", created="t1"))]
    a, _ = assign(objs, {}, [], LIMITS)
    served = a.lookup("team-a", "queue_depth")
    assert served is not None
    assert served.rule.name == "old"
    assert a.verdicts[(NAMESPACED, "team-a", "new")].message.endswith("MetricRule team-a/old")


def test_the_same_name_in_two_namespaces_is_two_metrics() -> None:
    objs = [(NAMESPACED, rule("q", ns="team-a")), (NAMESPACED, rule("q", ns="team-b"))]
    a, _ = assign(objs, {}, [], LIMITS)
    ra, rb = a.lookup("team-a", "queue_depth"), a.lookup("team-b", "queue_depth")
    assert ra is not None
    assert rb is not None
    assert (ra.rule.namespace, rb.rule.namespace) == ("team-a", "team-b")


def test_a_team_rule_is_never_served_in_another_namespace() -> None:
    a, _ = assign([(NAMESPACED, rule("q"))], {}, [], LIMITS)
    assert a.lookup("team-b", "queue_depth") is None


def test_a_cluster_rule_serves_every_namespace_and_wins_over_a_team_rule() -> None:
    cluster = {
        "metadata": {"name": "c", "creationTimestamp": "t9"},
        "spec": {"metric": "queue_depth", "query": "q"},
    }
    a, _ = assign([(NAMESPACED, rule("q", created="t1")), (CLUSTER, cluster)], {}, [], LIMITS)
    got = a.lookup("team-a", "queue_depth")
    assert got is not None
    assert got.rule.kind == CLUSTER
    assert a.verdicts[(NAMESPACED, "team-a", "q")].reason == "Conflict"


def test_a_namespace_past_its_limit_has_its_newest_rules_refused() -> None:
    objs = [(NAMESPACED, rule(f"r{i}", metric=f"m{i}", created=f"t{i}")) for i in range(3)]
    a, _ = assign(objs, {}, [], LIMITS)
    assert [a.verdicts[(NAMESPACED, "team-a", f"r{i}")].reason for i in range(3)] == [
        "Served",
        "Served",
        "NotAllowed",
    ]


def test_an_invalid_edit_keeps_the_last_valid_version_serving() -> None:
    _, good = assign([(NAMESPACED, rule("q"))], {}, [], LIMITS)
    edited = rule("q", query="sum(")
    edited["metadata"]["generation"] = 2
    a, _ = assign([(NAMESPACED, edited)], good, [], LIMITS)
    served = a.lookup("team-a", "queue_depth")
    assert served is not None
    assert served.rule.query == 'sum({__name__="queue",namespace="team-a"})'
    v = a.verdicts[(NAMESPACED, "team-a", "q")]
    assert (v.status, v.reason) == ("False", "Invalid")
    assert v.message.endswith("(still serving generation 1)")


def test_a_deleted_rule_is_forgotten() -> None:
    _, good = assign([(NAMESPACED, rule("q"))], {}, [], LIMITS)
    a, good = assign([], good, [], LIMITS)
    assert (a.served, good) == ({}, {})


def test_the_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    before = {"type": "Accepted", "status": "True", "lastTransitionTime": "2026-11-25T10:00:00Z"}
    same = condition(Verdict("True", "Served", "m"), 3, "2026-11-25T11:00:00Z", before)
    flipped = condition(Verdict("False", "Invalid", "m"), 3, "2026-11-25T11:00:00Z", before)
    assert (same["lastTransitionTime"], flipped["lastTransitionTime"]) == (
        "2026-11-25T10:00:00Z",
        "2026-11-25T11:00:00Z",
    )
    assert same["observedGeneration"] == 3


def test_a_teams_regexps_run_on_re2_which_backtracks_on_nothing() -> None:
    """``(a+)+$`` takes exponential time in Python's engine on a name like a…a!; the rule
    file's own regexps may use that engine (the platform's), a team's never do."""
    got = judge(NAMESPACED, file_rule(name={"matches": "^(a+)+$", "as": "x"}), LIMITS)
    assert isinstance(got, TeamRule)
    assert got.rule is not None
    assert got.rule.naming is not None
    assert got.rule.naming.matches.fast is False
    assert got.rule.naming.matches.search("a" * 64 + "!") is None


def test_a_query_over_a_size_limit_is_invalid_naming_the_flag() -> None:
    got = judge(NAMESPACED, rule("q", query="+".join(["x"] * 200)), LIMITS)
    assert isinstance(got, Verdict)
    assert "--team-rule-max-query-depth" in got.message


def test_a_file_forms_template_over_a_size_limit_is_invalid_naming_the_key() -> None:
    got = judge(NAMESPACED, file_rule(metricsQuery="abs(" * 100 + "<<.Series>>" + ")" * 100), LIMITS)
    assert isinstance(got, Verdict)
    assert got.message.startswith("spec.metricsQuery nests")


def test_an_at_pin_past_the_lookback_is_invalid_when_judged_at_a_time() -> None:
    got = judge(NAMESPACED, rule("q", query="sum(queue @ 1000)"), LIMITS, now=1_800_000_000)
    assert isinstance(got, Verdict)
    assert "--team-rule-max-lookback" in got.message
