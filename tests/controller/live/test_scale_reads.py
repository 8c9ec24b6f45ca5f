"""Scales from watches against the real kube-apiserver: the same Scale a GET answers,
byte for byte after JSON, for every built-in scalable kind and a custom resource; the GET
wherever the watch cannot answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller.live.scale_reads import ScaleReads
from localcluster import Cluster
from localcluster.manifests import custom_resource_definition
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.discovery import Mapping
from shared.kube.discovery import RESTMapper
from shared.kube.errors import NotFound
from tests.loopthread import LoopThread
from tests.loopthread import loop_thread
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "scalewatch"
GROUP = "scalewatch.example.com"
SELECTOR = {
    "matchLabels": {"tier": "web", "app": "shop"},
    "matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b", "a"]},
        {"key": "canary", "operator": "DoesNotExist"},
    ],
}
LABELS = {"tier": "web", "app": "shop", "zone": "a"}
POD = {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "example.invalid/c"}]}}
RC_POD = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": POD["spec"]}
# HPA-style reference -> object
TARGETS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("apps/v1", "Deployment", "d"): {"replicas": 2, "selector": SELECTOR, "template": POD},
    ("apps/v1", "ReplicaSet", "rs"): {"replicas": 0, "selector": SELECTOR, "template": POD},
    ("apps/v1", "StatefulSet", "ss"): {
        "replicas": 1,
        "selector": SELECTOR,
        "template": POD,
        "serviceName": "s",
    },
    ("v1", "ReplicationController", "rc"): {
        "replicas": 3,
        "selector": {"b": "2", "a": "1"},
        "template": {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": POD["spec"]},
    },
    (f"{GROUP}/v1", "Sprocket", "sp"): {"replicas": 4},
}


@pytest.fixture(scope="module")
def targets(cluster: Cluster) -> Iterator[None]:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.apply([custom_resource_definition(GROUP, "Sprocket", "sprockets")])
    cluster.kubectl("wait", "--for=condition=Established", f"crd/sprockets.{GROUP}", "--timeout=60s")
    cluster.apply(
        [
            {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}
            for (api, kind, name), spec in TARGETS.items()
        ]
    )
    status = json.dumps({"status": {"replicas": 2, "selector": "b=1,a in (y,x)"}})
    cluster.kubectl("-n", NS, "patch", "sprocket", "sp", "--subresource=status", "--type=merge", "-p", status)
    try:
        yield
    finally:
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        cluster.kubectl("delete", "crd", f"sprockets.{GROUP}", "--wait=false", check=False)


class Reads:
    """ScaleReads over the cluster's admin, with each read's source recorded."""

    def __init__(self, cluster: Cluster, bg: LoopThread) -> None:
        self.bg = bg  # the loop the reads and their informers run on
        self.kube = Kube(load(str(cluster.kubeconfig)))
        self.sources: list[str] = []
        self.reads = ScaleReads(self.kube, self.kube, on_read=self.sources.append)
        self.mapper = RESTMapper(self.kube)

    def mapping(self, api_version: str, kind: str) -> Mapping:
        return self.bg.run(self.mapper.mapping(api_version, kind))

    def read(self, api_version: str, kind: str, name: str) -> dict[str, Any]:
        return self.bg.run(self.reads.read(self.mapping(api_version, kind), NS, name))

    def watched(self, api_version: str, kind: str, name: str) -> dict[str, Any]:
        """The read once it comes from the watch (its informer has listed)."""
        got: dict[str, Any] = {}

        def from_watch() -> bool:
            got["scale"] = self.read(api_version, kind, name)
            return self.sources[-1] == "watch"

        wait_until(from_watch, timeout=30, what=f"{kind} {name} read from the watch")
        return got["scale"]


@pytest.fixture
def reads(cluster: Cluster, targets: None) -> Iterator[Reads]:
    with loop_thread() as bg:
        r = Reads(cluster, bg)
        try:
            yield r
        finally:
            bg.run(r.reads.aclose())
            bg.run(r.kube.aclose())


@pytest.mark.parametrize("ref", list(TARGETS), ids=[k for _, k, _ in TARGETS])
def test_a_watched_scale_is_the_scale_a_get_answers(reads: Reads, ref: tuple[str, str, str]) -> None:
    watched = reads.watched(*ref)
    path = reads.mapping(ref[0], ref[1]).scale_path(NS, ref[2])
    assert watched == reads.bg.run(reads.kube.get(path))


def test_a_target_not_in_the_cache_is_the_gets_not_found(reads: Reads) -> None:
    reads.watched("apps/v1", "Deployment", "d")
    with pytest.raises(NotFound, match=r'deployments\.apps "absent" not found'):
        reads.read("apps/v1", "Deployment", "absent")
    assert reads.sources[-1] == "get"


def test_the_read_after_our_write_sees_the_write_before_the_watch_delivers_it(reads: Reads) -> None:
    scale = reads.watched("apps/v1", "Deployment", "d")
    mapping = reads.mapping("apps/v1", "Deployment")
    path = mapping.scale_path(NS, "d")
    want = scale.get("spec", {}).get("replicas", 0) + 1
    informer = reads.reads._sources[("apps", "v1", "deployments")].informer
    assert informer is not None

    async def write_then_read() -> tuple[str, dict[str, Any]]:
        held: list[tuple[Any, Any]] = []
        apply = informer._index
        informer._index = lambda key, obj: held.append((key, obj))  # type: ignore[method-assign]
        try:  # the watch's events wait: the write is not in the cache
            answer = await reads.kube.put(path, {**scale, "spec": {"replicas": want}})
            reads.reads.wrote(path, answer)
            cached = informer.get(NS, "d")
            assert cached is not None
            return str(cached["metadata"]["resourceVersion"]), await reads.reads.read(mapping, NS, "d")
        finally:
            del informer._index
            for key, obj in held:
                apply(key, obj)

    cached_version, read = reads.bg.run(write_then_read())
    assert cached_version == scale["metadata"]["resourceVersion"]
    assert read["spec"]["replicas"] == want
    assert reads.sources[-1] == "get"
    # once the watch has delivered it, the watch answers again
    assert reads.watched("apps/v1", "Deployment", "d")["spec"]["replicas"] == want
