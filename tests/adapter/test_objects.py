"""Object names for ``*`` + ``labelSelector`` against the real kube-apiserver: a selection is
kept while it cannot have changed, and follows every change that can change it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from collections.abc import Sequence

import pytest

from adapter.serving.objects import ObjectCache
from localcluster import Cluster
from rules.naming import PODS
from shared.kube.client import Kube
from shared.kube.client import load
from shared.selectors import parse
from tests.loopthread import LoopThread
from tests.loopthread import loop_thread
from tests.support import pod_manifest
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "objects-kept"
ELSEWHERE = "objects-elsewhere"


def pod(name: str, labels: dict[str, str]) -> dict[str, object]:
    return pod_manifest(name, NS, labels)


@pytest.fixture
def objects(cluster: Cluster) -> Iterator[ObjectCache]:
    cluster.kubectl("create", "namespace", NS, check=False)
    items = [pod("web-1", {"app": "web"}), pod("web-2", {"app": "web"}), pod("api-1", {"app": "api"})]
    cluster.apply(items)
    kube = Kube(load(str(cluster.kubeconfig)))
    cache = ObjectCache(kube)
    with loop_thread() as bg:
        BG.append(bg)  # the loop its informers run on, as the adapter's serving loop
        try:
            yield cache
        finally:
            BG.clear()
            bg.run(cache.aclose())
            bg.run(kube.aclose())
    for ns in (NS, ELSEWHERE):
        cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


BG: list[LoopThread] = []


def names(cache: ObjectCache, selector: str) -> Sequence[str]:
    return BG[0].run(cache.names(NS, PODS, parse(selector)))


def web(cache: ObjectCache) -> Sequence[str]:
    return names(cache, "app=web")


def resource_version(cache: ObjectCache, name: str) -> str:
    obj = BG[0].call(cache._informers[PODS].get, NS, name)
    assert obj is not None
    return str(obj["metadata"]["resourceVersion"])


def test_a_selection_is_kept_until_an_object_or_its_labels_change(
    cluster: Cluster, objects: ObjectCache
) -> None:
    wait_until(lambda: list(web(objects)) == ["web-1", "web-2"], what="both web pods listed")
    kept = web(objects)
    assert web(objects) is kept  # nothing changed: the same answer, not selected again

    # a change that no selection can see (an annotation) keeps it, and so does a change in
    # another namespace (pods come and go all over a cluster)
    informer = objects._informers[PODS]
    before = informer.selection_generation(NS)
    version = resource_version(objects, "web-1")
    cluster.kubectl("-n", NS, "annotate", "pod", "web-1", "note=x")
    wait_until(lambda: resource_version(objects, "web-1") != version, what="the annotation seen")
    cluster.kubectl("create", "namespace", ELSEWHERE, check=False)
    other = pod_manifest("web-9", ELSEWHERE, {"app": "web"})
    elsewhere = {"apiVersion": "v1", "kind": "List", "items": [other]}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(elsewhere))
    wait_until(lambda: informer.get(ELSEWHERE, "web-9") is not None, what="the other namespace's pod seen")
    assert informer.selection_generation(NS) == before
    assert web(objects) is kept

    # a relabel, a new pod and a deletion each change the answer
    cluster.kubectl("-n", NS, "label", "pod", "web-1", "app=api", "--overwrite")
    wait_until(lambda: list(web(objects)) == ["web-2"], what="the relabel seen")
    new = {"apiVersion": "v1", "kind": "List", "items": [pod("web-3", {"app": "web"})]}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(new))
    wait_until(lambda: list(web(objects)) == ["web-2", "web-3"], what="the new pod seen")
    cluster.kubectl("-n", NS, "delete", "pod", "web-2", "--grace-period=0", "--force")
    wait_until(lambda: list(web(objects)) == ["web-3"], what="the deletion seen")
    assert list(names(objects, "app=api")) == ["api-1", "web-1"]
