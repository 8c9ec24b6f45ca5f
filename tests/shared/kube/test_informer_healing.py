"""Informers that never die silently, against the real kube-apiserver.

Two failures: an unexpected exception inside the informer (a bug in a transform: injected,
since a bug is the one failure a test cannot cause for real), and a watch that stops
delivering without a word (caused for real: the path to the API server goes through a
loopback proxy that is frozen, a partition in which no one closes the connection).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.informer import Informer
from shared.kube.informer import without_managed_fields
from tests.loopthread import loop_thread
from tests.netproxy import Proxy
from tests.support import pod_manifest
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "informer-healing"


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[str]:
    cluster.kubectl("create", "namespace", NS, check=False)
    yield NS
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def create_pod(cluster: Cluster, name: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod_manifest(name, NS, {"heal": "yes"})))


def proxied_kube(cluster: Cluster, proxy: Proxy) -> Kube:
    """A client whose every request goes through ``proxy`` (TLS end to end, as before)."""
    api = load(str(cluster.kubeconfig))
    api.configuration.host = f"https://127.0.0.1:{proxy.port}"
    return Kube(api)


def test_an_unexpected_exception_is_logged_with_its_traceback_and_the_informer_recovers(
    cluster: Cluster, namespace: str
) -> None:
    failed_once = threading.Event()

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["metadata"]["name"] == "boom" and not failed_once.is_set():
            failed_once.set()
            raise RuntimeError("a bug in a transform")
        return without_managed_fields(obj)

    kube = Kube(load(str(cluster.kubeconfig)))
    informer = Informer(kube, f"/api/v1/namespaces/{NS}/pods", transform=transform)
    with structlog.testing.capture_logs() as logs, loop_thread() as bg:
        bg.call(informer.start)
        try:
            assert bg.run(informer.wait_synced(30))
            create_pod(cluster, "boom")  # its watch event raises in the informer's task
            wait_until(
                lambda: bg.call(informer.get, NS, "boom") is not None,
                timeout=30,
                what="boom cached after all",
            )
            create_pod(cluster, "after")  # and the informer goes on watching
            wait_until(lambda: bg.call(informer.get, NS, "after") is not None, timeout=30, what="a later pod")
        finally:
            bg.run(informer.aclose())
            bg.run(kube.aclose())
    assert failed_once.is_set()
    assert informer.failures == 1, [e for e in logs if e.get("log_level") in ("warning", "error")]
    (failure,) = [e for e in logs if e["event"] == "informer failed unexpectedly; re-listing"]
    assert isinstance(failure["exc_info"], RuntimeError)
    assert failure["log_level"] == "error"


def test_a_watch_that_goes_quiet_is_dropped_and_the_age_shows_it_until_it_heals(
    cluster: Cluster, namespace: str
) -> None:
    proxy = Proxy(int(cluster.server.rsplit(":", 1)[1]))
    kube = proxied_kube(cluster, proxy)
    informer = Informer(kube, f"/api/v1/namespaces/{NS}/pods", watch_idle_timeout=1.0)
    with loop_thread() as bg:
        bg.call(informer.start)
        try:
            assert bg.run(informer.wait_synced(30))
            assert (informer.age() or 0) < 2
            proxy.freeze()  # the watch's connection stays open; nothing comes through
            # the age grows while cut off: what a reader of /healthz or the age gauge would see
            wait_until(lambda: (informer.age() or 0) > 3, timeout=10, what="an age over 3 s while cut off")
            create_pod(cluster, "during-partition")  # straight to the API server, not through the proxy
            assert bg.call(informer.get, NS, "during-partition") is None
            proxy.thaw()  # the partition heals (its connections are reset)
            wait_until(
                lambda: bg.call(informer.get, NS, "during-partition") is not None,
                timeout=30,
                what="the re-list",
            )
            assert (informer.age() or 99) < 2
        finally:
            bg.run(informer.aclose())
            bg.run(kube.aclose())
            proxy.close()


def test_waiters_for_the_first_list_time_out_while_the_loop_keeps_serving(
    cluster: Cluster, namespace: str
) -> None:
    """While an informer cannot list, a thousand waiters on its loop each give up at their own
    timeout, hold no thread, and the loop goes on answering; once the list comes, a waiter is
    answered at once."""
    proxy = Proxy(int(cluster.server.rsplit(":", 1)[1]))
    proxy.freeze()  # the first list never comes back
    kube = proxied_kube(cluster, proxy)

    async def scenario() -> tuple[list[bool], float, int, bool]:
        informer = Informer(kube, f"/api/v1/namespaces/{NS}/pods").start()
        try:
            await asyncio.sleep(0.5)  # its list is sent (the proxy's threads forward it) and held
            before = threading.active_count()
            waiters = [asyncio.create_task(informer.wait_synced(1.0)) for _ in range(1000)]
            await asyncio.sleep(0.2)
            during = threading.active_count() - before
            t0 = time.monotonic()
            await asyncio.sleep(0)  # the loop answers at once
            free = time.monotonic() - t0
            results = list(await asyncio.gather(*waiters))
            proxy.thaw()
            synced = await informer.wait_synced(30) and await informer.wait_synced(0.1)
            return results, free, during, synced
        finally:
            await informer.aclose()
            await kube.aclose()

    try:
        results, free, extra_threads, synced = asyncio.run(scenario())
        assert results == [False] * 1000  # not synced: each timed out
        assert extra_threads == 0
        assert free < 0.5
        assert synced
    finally:
        proxy.close()
