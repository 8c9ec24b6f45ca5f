"""Request paths: the apiserver's reading, and the shapes a provider may serve (pure)."""

from __future__ import annotations

import pytest

from adapter.api.requests import BadRequest
from adapter.api.requests import NotFound
from adapter.api.requests import decode_path
from adapter.api.requests import parse_path
from adapter.api.requests import request_info
from rules.config import GroupResource

C = "/apis/custom.metrics.k8s.io/v1beta2"
E = "/apis/external.metrics.k8s.io/v1beta1"
R = "/apis/metrics.k8s.io/v1beta1"


@pytest.mark.parametrize(
    ("path", "namespace", "resource", "name", "subresource", "verb"),
    [
        (f"{C}/namespaces/a/pods/*/m", "a", "pods", "*", "m", "get"),
        (f"{C}/namespaces/a/pods/p1/m", "a", "pods", "p1", "m", "get"),
        (f"{C}/namespaces/a/metrics/m", "a", "metrics", "m", "", "get"),
        (f"{C}/namespaces/a/namespaces/b/m", "a", "namespaces", "b", "m", "get"),
        (f"{C}/namespaces/a/status/x/m", "a", "namespaces", "a", "status", "get"),
        (f"{C}/nodes/n1/m", "", "nodes", "n1", "m", "get"),
        (f"{E}/namespaces/a/queue", "a", "queue", "", "", "list"),
        (f"{E}/namespaces//queue", "", "queue", "", "", "list"),
        (f"{R}/namespaces/a/pods", "a", "pods", "", "", "list"),
        (f"{R}/pods", "", "pods", "", "", "list"),
    ],
)
def test_request_info_reads_paths_as_the_apiserver_does(
    path: str, namespace: str, resource: str, name: str, subresource: str, verb: str
) -> None:
    info = request_info(path)
    assert info.is_resource
    assert (info.namespace, info.resource, info.name, info.subresource, info.verb) == (
        namespace,
        resource,
        name,
        subresource,
        verb,
    )


def test_discovery_paths_are_not_resource_requests() -> None:
    assert not request_info(C).is_resource
    assert parse_path(C, {}).kind == "discovery"


def test_path_is_decoded_exactly_once() -> None:
    assert decode_path("/a%2500/b") == "/a%00/b"
    assert decode_path("/a%252F") == "/a%2F"
    assert decode_path("/a%2Fb") == "/a/b"


def test_stray_percent_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="invalid URL escape"):
        decode_path("/apis/x/%zz")


def test_doubly_encoded_namespace_is_refused_not_decoded_twice() -> None:
    with pytest.raises(BadRequest, match="invalid namespace '%00'"):
        parse_path(f"{E}/namespaces/%2500/queue", {})


def test_encoded_slash_splits_the_path_like_the_apiserver() -> None:
    # "a%2Fpods" is two segments for the apiserver too: namespace "a", resource "pods"
    req = parse_path(f"{R}/namespaces/a%2Fpods", {})
    assert (req.kind, req.namespace) == ("pods", "a")


def test_cluster_scoped_resource_inside_a_namespace_is_not_found() -> None:
    with pytest.raises(NotFound, match="cluster-scoped"):
        parse_path(f"{C}/namespaces/a/namespaces/b/m", {})
    with pytest.raises(NotFound, match="cluster-scoped"):
        parse_path(f"{C}/namespaces/a/nodes/n1/m", {})


def test_namespaced_resource_at_the_root_is_not_found() -> None:
    with pytest.raises(NotFound, match="namespaced"):
        parse_path(f"{C}/pods/*/m", {})


def test_namespace_subresource_shape_is_not_a_metric() -> None:
    with pytest.raises(NotFound):
        parse_path(f"{C}/namespaces/a/status/x/m", {})


@pytest.mark.parametrize(
    "path",
    [
        f"{E}/namespaces//queue",
        f"{C}/namespaces//pods/*/m",
        f"{C}/namespaces//metrics/m",
        f"{R}/namespaces//pods",
    ],
)
def test_empty_namespace_is_a_bad_request(path: str) -> None:
    with pytest.raises(BadRequest, match="namespace in the path is empty"):
        parse_path(path, {})


@pytest.mark.parametrize(
    "path", [f"{C}/namespaces/a/pods//m", f"{C}/namespaces/a/pods/p1/", f"{C}/nodes/../m"]
)
def test_empty_or_dot_names_are_bad_requests(path: str) -> None:
    with pytest.raises((BadRequest, NotFound)):
        parse_path(path, {})


def test_namespace_object_metric_queries_the_namespace_it_names() -> None:
    req = parse_path(f"{C}/namespaces/a/metrics/queue_length", {})
    assert (req.resource, req.name, req.metric) == (GroupResource("", "namespaces"), "a", "queue_length")
    # the apiserver authorized namespace "a" for that path: the object read is namespace "a"
    assert request_info(f"{C}/namespaces/a/metrics/queue_length").namespace == req.name


def test_namespaced_request_keeps_the_authorized_namespace() -> None:
    path = f"{C}/namespaces/shop/pods/*/requests"
    assert parse_path(path, {}).namespace == request_info(path).namespace == "shop"


def test_external_metric_needs_the_namespaced_shape() -> None:
    with pytest.raises(NotFound):
        parse_path(f"{E}/queue", {})
    assert parse_path(f"{E}/namespaces/a/queue", {}).namespace == "a"
