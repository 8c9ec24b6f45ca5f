from __future__ import annotations

import pytest

from adapter.config import ConfigError, parse_config
from adapter.default_rules import DEFAULT_RULES

GOOD = """
rules:
- seriesQuery: '{__name__=~"^http_requests_.*",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^http_requests_internal.*"}]
  resources:
    overrides: {namespace: {resource: namespace}, pod: {resource: pod}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="queue_depth"}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


def test_reads_a_prometheus_adapter_config_unchanged() -> None:
    c = parse_config(GOOD, "adapter.yaml")
    assert len(c.rules) == 1
    assert len(c.external_rules) == 1
    rule = c.rules[0]
    assert rule.naming.as_ == "${1}_per_second"
    assert not rule.series_filters[0].keep("http_requests_internal_total")
    assert rule.resources.overrides["pod"].resource == "pods"
    assert c.external_rules[0].resources.namespaced is False


def test_default_rules_parse() -> None:
    c = parse_config(DEFAULT_RULES, "defaults")
    assert len(c.rules) == 6
    assert c.resource_rules is not None
    assert c.resource_rules.window == "5m"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rules:\n- seriesQuery: x\n  metricsQuery: y\n  resources: {overides: {}}\n",
            "adapter.yaml:4: rules[0].resources.overides: unknown key (did you mean 'overrides'?)",
        ),
        ("rulez: []\n", "adapter.yaml:1: rulez: unknown key (did you mean 'rules'?)"),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  name: {matches: '(a'}\n",
            "adapter.yaml:5: rules[0].name.matches: invalid regular expression '(a'",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n"
            "  metricsQuery: '<<range .X>>'\n",
            "adapter.yaml:4: rules[0].metricsQuery: invalid template: unsupported action <<range .X>>",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: kube_pod}\n  metricsQuery: y\n",
            "adapter.yaml:3: rules[0].resources.template: must contain <<.Resource>>",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  name: {matches: '(a)(b)'}\n",
            "rules[0].name.as: must be set: 'matches' has 2 capture groups",
        ),
        (
            "rules:\n- seriesQuery: x\n  resources: {template: <<.Resource>>}\n  metricsQuery: y\n"
            "  seriesFilters: [{is: a, isNot: b}]\n",
            "rules[0].seriesFilters[0]: needs exactly one of 'is' or 'isNot'",
        ),
        (
            "rules:\n- resources: {template: <<.Resource>>}\n  metricsQuery: y\n",
            "rules[0].seriesQuery: is required",
        ),
        ("rules: {}\n", "adapter.yaml:1: rules: must be a list, got a mapping"),
        ("rules: [\n", "adapter.yaml:2: not valid YAML"),
    ],
)
def test_bad_configs_name_the_line_and_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config(text, "adapter.yaml")
    assert message in str(e.value)
