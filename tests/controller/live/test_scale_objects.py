"""Scales worked out from target objects, and the scale client's view of a Scale (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.live.scale_objects import LABEL_SELECTOR
from controller.live.scale_objects import LABEL_SET
from controller.live.scale_objects import ScaleConversionError
from controller.live.scale_objects import ScalePaths
from controller.live.scale_objects import as_scale_client_returns
from controller.live.scale_objects import builtin_essentials
from controller.live.scale_objects import builtin_scale
from controller.live.scale_objects import custom_scale
from controller.live.scale_objects import label_selector_text
from controller.live.scale_objects import label_set_text

META = {
    "name": "web",
    "namespace": "shop",
    "uid": "u1",
    "resourceVersion": "42",
    "creationTimestamp": "2026-01-01T00:00:00Z",
}
PATHS = ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")


def deployment(**spec: Any) -> dict[str, Any]:
    return {"metadata": {**META, "labels": {"a": "b"}}, "spec": spec, "status": {"replicas": 2}}


def test_a_deployments_scale_is_the_api_servers() -> None:
    obj = deployment(replicas=3, selector={"matchLabels": {"app": "web"}}, template={"spec": {}})
    assert builtin_scale(LABEL_SELECTOR, builtin_essentials(obj)) == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": META,
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "selector": "app=web"},
    }


def test_a_scale_of_zero_has_no_spec_replicas_field() -> None:
    scale = builtin_scale(LABEL_SELECTOR, deployment(replicas=0, selector={"matchLabels": {"app": "web"}}))
    assert scale is not None
    assert scale["spec"] == {}


def test_essentials_drop_the_pod_template_and_labels() -> None:
    kept = builtin_essentials(deployment(replicas=1, selector={}, template={"spec": {"containers": []}}))
    assert kept == {"metadata": META, "spec": {"replicas": 1, "selector": {}}, "status": {"replicas": 2}}


def test_match_labels_and_expressions_are_sorted_by_key_with_values_sorted() -> None:
    selector = {
        "matchLabels": {"tier": "web", "app": "shop"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "b", "operator": "Exists"},
        ],
    }
    assert label_selector_text(selector) == "app=shop,b,!canary,env notin (dev),tier=web,zone in (a,b)"


def test_requirements_sharing_a_key_keep_go_order_labels_first() -> None:
    selector = {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}
    assert label_selector_text(selector) == "app=x,app"


def test_many_requirements_sharing_a_key_are_left_to_the_get() -> None:
    exprs = [{"key": f"k{i:02}", "operator": "Exists"} for i in range(12)]
    exprs.append({"key": "k00", "operator": "DoesNotExist"})
    assert label_selector_text({"matchExpressions": exprs}) is None


def test_an_unknown_operator_is_left_to_the_get() -> None:
    assert (
        label_selector_text({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}) is None
    )


def test_a_replication_controllers_selector_is_its_sorted_pairs() -> None:
    assert label_set_text({"b": "2", "a": "1"}) == "a=1,b=2"
    rc = {"metadata": META, "spec": {"replicas": 1, "selector": {"app": "x"}}, "status": {}}
    scale = builtin_scale(LABEL_SET, rc)
    assert scale is not None
    assert scale["status"] == {"replicas": 0, "selector": "app=x"}


def test_a_custom_resource_reads_its_crds_paths() -> None:
    obj = {"metadata": META, "spec": {"replicas": 4}, "status": {"replicas": 3, "selector": "b=1, a in (x)"}}
    scale = custom_scale(PATHS, obj)
    assert scale is not None
    assert scale["spec"] == {"replicas": 4}
    assert scale["status"] == {"replicas": 3, "selector": "b=1, a in (x)"}  # as stored


def test_a_custom_resource_without_the_fields_is_zero_replicas_and_no_selector() -> None:
    scale = custom_scale(PATHS, {"metadata": META, "spec": {}})
    assert scale is not None
    assert scale["spec"] == {}
    assert scale["status"] == {"replicas": 0}


@pytest.mark.parametrize(
    "obj",
    [
        {"metadata": META, "spec": {"replicas": "3"}},  # the server's type error
        {"metadata": META, "spec": {"replicas": 1.5}},
        {"metadata": META, "spec": {"replicas": None}},
        {"metadata": META, "spec": "flat"},  # the path runs through a string
        {"metadata": META, "spec": {"replicas": 1}, "status": {"selector": {"matchLabels": {}}}},
        {"metadata": META, "spec": {"replicas": 2**31}},
    ],
)
def test_a_custom_resource_the_server_would_refuse_is_left_to_the_get(obj: dict[str, Any]) -> None:
    assert custom_scale(PATHS, obj) is None


def scale_with(selector: str) -> dict[str, Any]:
    return {"kind": "Scale", "spec": {}, "status": {"replicas": 1, "selector": selector}}


def test_the_scale_client_rewrites_a_selector_as_a_label_selector() -> None:
    seen = as_scale_client_returns(scale_with("b=2,a==1,c in (y,x),!d"))
    assert seen["status"]["selector"] == "a=1,b=2,c in (x,y),!d"


def test_the_scale_client_keeps_the_last_of_two_equalities_on_a_key() -> None:
    assert as_scale_client_returns(scale_with("a=1,a=2"))["status"]["selector"] == "a=2"


def test_a_blank_selector_comes_back_empty() -> None:
    assert "selector" not in as_scale_client_returns(scale_with(" "))["status"]


def test_an_unparsable_selector_fails_the_scale_read() -> None:
    with pytest.raises(ScaleConversionError) as e:
        as_scale_client_returns(scale_with("app in ("))
    assert str(e.value) == (
        "received an object from a /scale endpoint which was not convertible to autoscaling Scale: "
        'failed to parse target selector: couldn\'t parse the selector string "app in (": '
        "unable to parse requirement: found '', expected: ',', ')' or identifier"
    )


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ("a!=b", '"!=" is not a valid label selector operator'),
        ("a>1", '"gt" isn\'t supported in label selectors'),
        ("a<1", '"lt" isn\'t supported in label selectors'),
    ],
)
def test_an_operator_a_label_selector_cannot_hold_fails_the_scale_read(selector: str, problem: str) -> None:
    with pytest.raises(ScaleConversionError, match=problem):
        as_scale_client_returns(scale_with(selector))
