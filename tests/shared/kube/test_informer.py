"""The list+watch cache against the real kube-apiserver: selection through the label index
must equal a full scan, through creates, relabels and deletes."""

from __future__ import annotations

import pytest

from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.informer import Informer
from shared.kube.informer import namespace_index
from shared.kube.informer import without_managed_fields
from shared.selectors import Selector
from shared.selectors import parse
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


def scan(informer: Informer, selector: str) -> list[str]:
    s = parse(selector)
    return names(
        [
            o
            for o in informer.items()
            if o["metadata"]["namespace"] == NS and s.matches(o["metadata"].get("labels") or {})
        ]
    )


def test_select_through_the_label_index_equals_a_full_scan(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    items = [
        pod("web-1", {"app": "web"}),
        pod("web-2", {"app": "web", "tier": "canary"}),
        pod("api-1", {"app": "api", "tier": "backend"}),
        pod("other", {"team": "x"}),
    ]
    cluster.apply(items)
    kube = Kube(load(str(cluster.kubeconfig)))
    informer = Informer(kube, "/api/v1/pods", transform=without_managed_fields).start()
    try:
        assert informer.synced.wait(30)
        wait_until(lambda: len(informer.select(NS)) == 4, what="4 pods cached")
        assert kube.get_sync(f"/api/v1/namespaces/{NS}/pods/web-1")["metadata"]["managedFields"]
        assert not any("managedFields" in p["metadata"] for p in informer.items())
        for sel in SELECTORS:
            assert names(informer.select(NS, parse(sel))) == scan(informer, sel), sel
        assert names(informer.select(NS, parse("app=web"))) == ["web-1", "web-2"]
        assert informer.select(NS, Selector(nothing=True)) == []
        unindexed = Informer(kube, "/api/v1/pods", indexers={"namespace": namespace_index}).start()
        try:  # without the label index, every requirement is checked object by object
            assert unindexed.synced.wait(30)
            for sel in SELECTORS:
                assert names(unindexed.select(NS, parse(sel))) == scan(informer, sel), sel
        finally:
            unindexed.stop()

        cluster.kubectl("-n", NS, "label", "pod", "web-1", "app=api", "--overwrite")
        wait_until(lambda: names(informer.select(NS, parse("app=web"))) == ["web-2"], what="relabel seen")
        assert names(informer.select(NS, parse("app=api"))) == ["api-1", "web-1"]

        cluster.kubectl("-n", NS, "delete", "pod", "web-2", "--grace-period=0", "--force")
        wait_until(lambda: informer.select(NS, parse("app=web")) == [], what="delete seen")
        for sel in SELECTORS:
            assert names(informer.select(NS, parse(sel))) == scan(informer, sel), sel
        assert informer.select("elsewhere", parse("app=api")) == []
    finally:
        informer.stop()
        cluster.kubectl("delete", "namespace", NS, "--wait=false")


def test_select_across_namespaces_and_by_named_index(cluster: Cluster) -> None:
    for ns in ("idx-a", "idx-b"):
        cluster.kubectl("create", "namespace", ns, check=False)
        cluster.kubectl("-n", ns, "create", "configmap", "cfg", "--from-literal=k=v")
        cluster.kubectl("-n", ns, "label", "configmap", "cfg", f"home={ns}")
    kube = Kube(load(str(cluster.kubeconfig)))
    informer = Informer(kube, "/api/v1/configmaps").start()
    try:
        assert informer.synced.wait(30)
        wait_until(lambda: len(informer.select(None, parse("home"))) == 2, what="both labelled configmaps")
        assert sorted(o["metadata"]["namespace"] for o in informer.select(None, parse("home"))) == [
            "idx-a",
            "idx-b",
        ]
        assert names(informer.by_index("namespace", "idx-a")) == ["cfg", "kube-root-ca.crt"]
        assert names(informer.by_index("label", ("idx-b", "home", "idx-b"))) == ["cfg"]
    finally:
        informer.stop()


def test_a_list_is_read_a_page_at_a_time_and_the_watch_follows_it(cluster: Cluster) -> None:
    ns = "informer-pages"
    cluster.kubectl("create", "namespace", ns, check=False)
    maps = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"m{i}", "namespace": ns}}
        for i in range(7)
    ]
    cluster.apply(maps)
    kube = Kube(load(str(cluster.kubeconfig)))
    asked: list[list[tuple[str, str]]] = []
    real_get = kube.get_sync

    def recording_get(path: str, query: list[tuple[str, str]] | None = None) -> object:
        asked.append(list(query or []))
        return real_get(path, query)

    kube.get_sync = recording_get  # type: ignore[method-assign]  # the real call, recorded
    informer = Informer(kube, f"/api/v1/namespaces/{ns}/configmaps", page_size=3)
    informer.start()
    try:
        assert informer.synced.wait(30)
        cached = {k[1] for k in informer.objects}
        assert {f"m{i}" for i in range(7)} <= cached  # plus kube-root-ca.crt: 8 in 3 pages
        assert len(asked) == 3
        assert all(("limit", "3") in q for q in asked)
        assert [any(k == "continue" for k, _ in q) for q in asked] == [False, True, True]
        cluster.kubectl("-n", ns, "create", "configmap", "after-the-list")
        wait_until(
            lambda: (ns, "after-the-list") in informer.objects, what="the watch from the list's version"
        )
    finally:
        informer.stop()
        cluster.kubectl("delete", "namespace", ns, "--wait=false")


def test_a_watch_resumes_from_the_last_event_even_when_the_transform_drops_its_version(
    cluster: Cluster,
) -> None:
    """The controller's pod transform keeps no resourceVersion; re-watching from the list's
    version instead would replay every event since (or fail with 410 once it is compacted)."""
    ns = "informer-versions"
    cluster.kubectl("create", "namespace", ns, check=False)
    kube = Kube(load(str(cluster.kubeconfig)))
    watched_from: list[str] = []
    real_watch = kube.watch_sync

    def recording_watch(path: str, resource_version: str, *args: object, **kwargs: object) -> object:
        watched_from.append(resource_version)
        return real_watch(path, resource_version, *args, **kwargs)  # type: ignore[arg-type]

    def versionless(obj: dict[str, object]) -> dict[str, object]:
        meta = dict(obj["metadata"])  # type: ignore[call-overload]
        meta.pop("resourceVersion", None)
        return {**obj, "metadata": meta}

    kube.watch_sync = recording_watch  # type: ignore[method-assign]  # the real call, recorded
    informer = Informer(kube, f"/api/v1/namespaces/{ns}/configmaps", transform=versionless, watch_timeout=1)
    informer.start()
    try:
        assert informer.synced.wait(30)
        cluster.kubectl("-n", ns, "create", "configmap", "made-while-watching")
        wait_until(lambda: (ns, "made-while-watching") in informer.objects, what="the watch's event")
        made = cluster.kubectl(
            "-n", ns, "get", "configmap", "made-while-watching", "-o", "jsonpath={.metadata.resourceVersion}"
        ).stdout
        wait_until(lambda: made in watched_from[1:], what="a re-watch from the event's version")
    finally:
        informer.stop()
        cluster.kubectl("delete", "namespace", ns, "--wait=false")
