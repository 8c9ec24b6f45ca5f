"""The resource table and GroupVersion parsing (pure)."""

from __future__ import annotations

import pytest

from shared.kube.resources import GroupVersion
from shared.kube.resources import GroupVersionError
from shared.kube.resources import by_kind
from shared.kube.resources import by_plural
from shared.kube.resources import by_singular
from shared.kube.resources import resource_path


@pytest.mark.parametrize(
    ("text", "group", "version"),
    [
        ("v1", "", "v1"),
        ("apps/v1", "apps", "v1"),
        ("", "", ""),
        ("/", "", ""),
        ("a.b/v2beta1", "a.b", "v2beta1"),
    ],
)
def test_group_version_parses_as_apimachinery_does(text: str, group: str, version: str) -> None:
    assert GroupVersion.parse(text) == GroupVersion(group, version)


def test_more_than_one_slash_is_an_error_with_upstreams_text() -> None:
    with pytest.raises(GroupVersionError, match='unexpected GroupVersion string: "a/b/c"'):
        GroupVersion.parse("a/b/c")


def test_well_known_resources_know_their_scope_kind_and_version() -> None:
    pods, deployments = by_plural("pods"), by_kind("apps", "Deployment")
    assert pods is not None
    assert deployments is not None
    assert (pods.kind, pods.api_version, pods.namespaced) == ("Pod", "v1", True)
    assert deployments.path("shop", "web") == "/apis/apps/v1/namespaces/shop/deployments/web"
    assert by_singular("namespace") is not None
    assert by_plural("nodes").namespaced is False  # type: ignore[union-attr]
    assert by_plural("deployments", group="extensions") is None


def test_paths_of_core_and_grouped_resources() -> None:
    assert resource_path("", "v1", "pods") == "/api/v1/pods"
    assert resource_path("apps", "v1", "deployments", "ns") == "/apis/apps/v1/namespaces/ns/deployments"
