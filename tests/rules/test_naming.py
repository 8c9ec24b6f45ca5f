from __future__ import annotations

import re

import pytest

from rules.config import GroupResource
from rules.config import Naming
from rules.config import Resources
from rules.naming import NamingError
from rules.naming import ResourceMapper
from rules.naming import metric_name
from rules.templates import Template


@pytest.mark.parametrize(
    ("matches", "as_", "series", "name"),
    [
        (".*", "$0", "http_requests_total", "http_requests_total"),
        ("^(.*)_total$", "$1", "http_requests_total", "http_requests"),
        ("^(.*)_total$", "${1}_per_second", "http_requests_total", "http_requests_per_second"),
        ("^(?P<base>.*)_seconds_total$", "${base}", "cpu_seconds_total", "cpu"),
        ("^(.*)_total$", "$1x", "a_total", ""),  # Go reads $1x as the group named "1x": empty
        ("^(.*)$", "$$$1", "a", "$a"),
    ],
)
def test_metric_names_expand_like_go(matches: str, as_: str, series: str, name: str) -> None:
    assert metric_name(Naming(re.compile(matches), as_), series) == name


def test_series_that_does_not_match_is_an_error() -> None:
    with pytest.raises(NamingError, match="did not match"):
        metric_name(Naming(re.compile("^foo"), "$0"), "bar")


def test_template_maps_labels_to_resources_both_ways() -> None:
    m = ResourceMapper(Resources(template=Template.parse("kube_<<.Resource>>")))
    assert m.resource_for_label("kube_pod") == GroupResource("", "pods")
    assert m.resource_for_label("kube_deployment") == GroupResource("apps", "deployments")
    assert m.resource_for_label("kube_unknownthing") is None
    assert m.label_for_resource(GroupResource("", "pods")) == "kube_pod"
    assert m.namespace_label() == "kube_namespace"


def test_overrides_map_labels_to_resources_both_ways() -> None:
    m = ResourceMapper(
        Resources(overrides={"k8s_ns": GroupResource("", "namespaces"), "k8s_pod": GroupResource("", "pods")})
    )
    assert m.resource_for_label("k8s_pod") == GroupResource("", "pods")
    assert m.label_for_resource(GroupResource("", "namespaces")) == "k8s_ns"
    assert m.resource_for_label("pod") is None
