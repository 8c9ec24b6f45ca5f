"""Discovery against the real kube-apiserver: scale subresources, plurals, preferred versions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable
from typing import TypeVar

import pytest

from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.discovery import RESTMapper
from shared.kube.errors import NotFound

pytestmark = pytest.mark.cluster


T = TypeVar("T")


def mapper(cluster: Cluster) -> RESTMapper:
    return RESTMapper(Kube(load(str(cluster.kubeconfig))))


def ask(cluster: Cluster, call: Callable[[RESTMapper], Awaitable[T]]) -> T:
    """``call``'s answer from a fresh mapper, on a loop of its own."""

    async def go() -> T:
        m = mapper(cluster)
        try:
            return await call(m)
        finally:
            await m.kube.aclose()

    return asyncio.run(go())


def test_scale_subresource_of_a_deployment(cluster: Cluster) -> None:
    m = ask(cluster, lambda m: m.mapping("apps/v1", "Deployment"))
    assert m.scale_path("shop", "web") == "/apis/apps/v1/namespaces/shop/deployments/web/scale"


def test_unknown_kind_is_not_matched_in_its_group(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match=r'^no matches for kind "Gadget" in group "apps"$'):
        ask(cluster, lambda m: m.mapping("apps/v1", "Gadget"))


def test_unserved_group_is_not_matched_with_its_name(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match=r'^no matches for kind "Gadget" in group "example\.com"$'):
        ask(cluster, lambda m: m.mapping("example.com/v1", "Gadget"))


def test_the_references_version_is_not_used_only_its_group(cluster: Cluster) -> None:
    m = ask(cluster, lambda m: m.mapping("apps/v1beta9", "Deployment"))
    assert m.scale_path("shop", "web") == "/apis/apps/v1/namespaces/shop/deployments/web/scale"


def test_a_kind_without_a_scale_subresource_is_mapped_for_the_scale_get_to_refuse(cluster: Cluster) -> None:
    m = ask(cluster, lambda m: m.mapping("v1", "ConfigMap"))
    assert m.scale_path("shop", "settings") == "/api/v1/namespaces/shop/configmaps/settings/scale"


def test_preferred_version_of_a_served_group(cluster: Cluster) -> None:
    assert ask(cluster, lambda m: m.preferred_version("autoscaling")) == "v2"


def test_plural_of_a_kind_the_table_does_not_know(cluster: Cluster) -> None:
    assert (
        ask(cluster, lambda m: m.resource_for("rbac.authorization.k8s.io/v1", "ClusterRole"))
        == "clusterroles"
    )


def test_a_discovered_mapping_is_then_known_without_io(cluster: Cluster) -> None:
    async def discover(m: RESTMapper) -> None:
        assert m.cached_mapping("apps/v1", "StatefulSet") is None
        found = await m.mapping("apps/v1", "StatefulSet")
        assert m.cached_mapping("apps/v1", "StatefulSet") == found
        assert m.cached_mapping("not a version//", "StatefulSet") is None

    ask(cluster, discover)
