"""The list+watch cache against the real kube-apiserver: selection through the label index
must equal a full scan, through creates, relabels and deletes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.informer import Informer
from shared.kube.informer import namespace_index
from shared.kube.informer import without_managed_fields
from shared.selectors import Selector
from shared.selectors import parse
from tests.loopthread import LoopThread
from tests.loopthread import loop_thread
from tests.support import pod_manifest
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "informer"


def pod(name: str, labels: dict[str, str]) -> dict[str, object]:
    return pod_manifest(name, NS, labels)


def names(objs: list[dict[str, object]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)  # type: ignore[index]


SELECTORS = [
    "app=web", "app in (web,api)", "app=web,tier!=canary", "tier", "!tier", "app notin (web)",
    "app=web,tier=canary", "app in (web,api),tier in (backend)", "app=web,!tier", "app==api,tier",
]  # fmt: skip


@pytest.fixture
def bg() -> Iterator[LoopThread]:
    """The loop the informers run on; the test reads them through it."""
    with loop_thread() as thread:
        yield thread


def scan(bg: LoopThread, informer: Informer, selector: str) -> list[str]:
    s = parse(selector)
    return names(
        [
            o
            for o in bg.call(informer.items)
            if o["metadata"]["namespace"] == NS and s.matches(o["metadata"].get("labels") or {})
        ]
    )


def select(bg: LoopThread, informer: Informer, namespace: str | None, selector: str = "") -> list[str]:
    return names(bg.call(informer.select, namespace, parse(selector) if selector else None))


def test_select_through_the_label_index_equals_a_full_scan(cluster: Cluster, bg: LoopThread) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    items = [
        pod("web-1", {"app": "web"}),
        pod("web-2", {"app": "web", "tier": "canary"}),
        pod("api-1", {"app": "api", "tier": "backend"}),
        pod("other", {"team": "x"}),
    ]
    cluster.apply(items)
    kube = Kube(load(str(cluster.kubeconfig)))
    informer = bg.call(Informer(kube, "/api/v1/pods", transform=without_managed_fields).start)
    try:
        assert bg.run(informer.wait_synced(30))
        wait_until(lambda: len(select(bg, informer, NS)) == 4, what="4 pods cached")
        assert bg.run(kube.get(f"/api/v1/namespaces/{NS}/pods/web-1"))["metadata"]["managedFields"]
        assert not any("managedFields" in p["metadata"] for p in bg.call(informer.items))
        for sel in SELECTORS:
            assert select(bg, informer, NS, sel) == scan(bg, informer, sel), sel
        assert select(bg, informer, NS, "app=web") == ["web-1", "web-2"]
        assert bg.call(informer.select, NS, Selector(nothing=True)) == []
        unindexed = bg.call(Informer(kube, "/api/v1/pods", indexers={"namespace": namespace_index}).start)
        try:  # without the label index, every requirement is checked object by object
            assert bg.run(unindexed.wait_synced(30))
            for sel in SELECTORS:
                assert select(bg, unindexed, NS, sel) == scan(bg, informer, sel), sel
        finally:
            bg.run(unindexed.aclose())

        cluster.kubectl("-n", NS, "label", "pod", "web-1", "app=api", "--overwrite")
        wait_until(lambda: select(bg, informer, NS, "app=web") == ["web-2"], what="relabel seen")
        assert select(bg, informer, NS, "app=api") == ["api-1", "web-1"]

        cluster.kubectl("-n", NS, "delete", "pod", "web-2", "--grace-period=0", "--force")
        wait_until(lambda: select(bg, informer, NS, "app=web") == [], what="delete seen")
        for sel in SELECTORS:
            assert select(bg, informer, NS, sel) == scan(bg, informer, sel), sel
        assert select(bg, informer, "elsewhere", "app=api") == []
    finally:
        bg.run(informer.aclose())
        bg.run(kube.aclose())
        cluster.kubectl("delete", "namespace", NS, "--wait=false")


def test_select_across_namespaces_and_by_named_index(cluster: Cluster, bg: LoopThread) -> None:
    for ns in ("idx-a", "idx-b"):
        cluster.kubectl("create", "namespace", ns, check=False)
        cluster.kubectl("-n", ns, "create", "configmap", "cfg", "--from-literal=k=v")
        cluster.kubectl("-n", ns, "label", "configmap", "cfg", f"home={ns}")
    kube = Kube(load(str(cluster.kubeconfig)))
    informer = bg.call(Informer(kube, "/api/v1/configmaps").start)
    try:
        assert bg.run(informer.wait_synced(30))
        wait_until(lambda: len(select(bg, informer, None, "home")) == 2, what="both labelled configmaps")
        homes = bg.call(informer.select, None, parse("home"))
        assert sorted(o["metadata"]["namespace"] for o in homes) == ["idx-a", "idx-b"]
        assert names(bg.call(informer.by_index, "namespace", "idx-a")) == ["cfg", "kube-root-ca.crt"]
        assert names(bg.call(informer.by_index, "label", ("idx-b", "home", "idx-b"))) == ["cfg"]
    finally:
        bg.run(informer.aclose())
        bg.run(kube.aclose())


def test_a_list_is_read_a_page_at_a_time_and_the_watch_follows_it(cluster: Cluster, bg: LoopThread) -> None:
    ns = "informer-pages"
    cluster.kubectl("create", "namespace", ns, check=False)
    maps = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"m{i}", "namespace": ns}}
        for i in range(7)
    ]
    cluster.apply(maps)
    kube = Kube(load(str(cluster.kubeconfig)))
    asked: list[list[tuple[str, str]]] = []
    real_get = kube.get

    async def recording_get(path: str, query: list[tuple[str, str]] | None = None) -> object:
        asked.append(list(query or []))
        return await real_get(path, query)

    kube.get = recording_get  # type: ignore[method-assign]  # the real call, recorded
    informer = bg.call(Informer(kube, f"/api/v1/namespaces/{ns}/configmaps", page_size=3).start)
    try:
        assert bg.run(informer.wait_synced(30))
        cached = {k[1] for k in bg.call(list, informer.objects)}
        assert {f"m{i}" for i in range(7)} <= cached  # plus kube-root-ca.crt: 8 in 3 pages
        assert len(asked) == 3
        assert all(("limit", "3") in q for q in asked)
        assert [any(k == "continue" for k, _ in q) for q in asked] == [False, True, True]
        cluster.kubectl("-n", ns, "create", "configmap", "after-the-list")
        wait_until(
            lambda: bg.call(informer.get, ns, "after-the-list") is not None,
            what="the watch from the list's version",
        )
    finally:
        bg.run(informer.aclose())
        bg.run(kube.aclose())
        cluster.kubectl("delete", "namespace", ns, "--wait=false")


def test_a_watch_resumes_from_the_last_event_even_when_the_transform_drops_its_version(
    cluster: Cluster, bg: LoopThread
) -> None:
    """The controller's pod transform keeps no resourceVersion; re-watching from the list's
    version instead would replay every event since (or fail with 410 once it is compacted)."""
    ns = "informer-versions"
    cluster.kubectl("create", "namespace", ns, check=False)
    kube = Kube(load(str(cluster.kubeconfig)))
    watched_from: list[str] = []
    real_watch = kube.watch

    def recording_watch(path: str, resource_version: str, *args: object, **kwargs: object) -> object:
        watched_from.append(resource_version)
        return real_watch(path, resource_version, *args, **kwargs)  # type: ignore[arg-type]

    def versionless(obj: dict[str, object]) -> dict[str, object]:
        meta = dict(obj["metadata"])  # type: ignore[call-overload]
        meta.pop("resourceVersion", None)
        return {**obj, "metadata": meta}

    kube.watch = recording_watch  # type: ignore[method-assign]  # the real call, recorded
    informer = Informer(kube, f"/api/v1/namespaces/{ns}/configmaps", transform=versionless, watch_timeout=1)
    bg.call(informer.start)
    try:
        assert bg.run(informer.wait_synced(30))
        cluster.kubectl("-n", ns, "create", "configmap", "made-while-watching")
        wait_until(
            lambda: bg.call(informer.get, ns, "made-while-watching") is not None, what="the watch's event"
        )
        made = cluster.kubectl(
            "-n", ns, "get", "configmap", "made-while-watching", "-o", "jsonpath={.metadata.resourceVersion}"
        ).stdout
        wait_until(lambda: made in watched_from[1:], what="a re-watch from the event's version")
    finally:
        bg.run(informer.aclose())
        bg.run(kube.aclose())
        cluster.kubectl("delete", "namespace", ns, "--wait=false")
