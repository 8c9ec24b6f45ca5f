"""Read-your-writes against the real API server: after promhpa writes an HPA's status, the
HPA is not decided again until its informer has delivered that write (1.37 and later,
``StaleControllerConsistencyHPA``).

The delay is caused for real: the informer's watch goes through a loopback proxy that is
frozen (nothing forwarded, nothing closed), while the status write goes straight to the
API server -- a watch behind the writes, as a lagging watch cache is. The check is the one
``Reconciler.reconcile`` makes first (``_ensure_read_own_writes``), on a real informer and a
real write's resourceVersion; with the rule off (the gate, or a release before 1.37) the
same stale cache is decided on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from controller.engine.gates import resolve
from controller.engine.model import Settings
from controller.engine.versions import Release
from controller.live.consistency import ReadYourWrites
from controller.live.consistency import StaleReadError
from controller.live.monitor import ControllerMetrics
from controller.live.reconciler import Reconciler
from controller.live.writer import update_status
from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.informer import Informer
from shared.kube.informer import without_managed_fields
from shared.kube.resources import HPA
from tests.loopthread import LoopThread
from tests.loopthread import loop_thread
from tests.netproxy import Proxy
from tests.support import wait_until

pytestmark = pytest.mark.cluster
NS = "read-your-writes"


def hpa_manifest(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 5,
        },
    }


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[str]:
    cluster.kubectl("create", "namespace", NS, check=False)
    yield NS
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


@pytest.fixture
def proxy(cluster: Cluster) -> Iterator[Proxy]:
    p = Proxy(int(cluster.server.rsplit(":", 1)[1]))
    yield p
    p.close()


def checker(informer: Informer, release: Release, gates: dict[str, bool] | None = None) -> Any:
    """The reconciler's first step, on a real informer (the rest of a reconcile is not run)."""
    settings = Settings(release=release, feature_gates=resolve(release, gates or {}))
    r = SimpleNamespace(
        settings=settings, hpas=informer, own_writes=ReadYourWrites(), metrics=ControllerMetrics(), kind=HPA
    )
    r._reads_own_writes = lambda: Reconciler._reads_own_writes(r)  # type: ignore[arg-type]
    return r


def write_status(cluster: Cluster, name: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        kube = Kube(load(str(cluster.kubeconfig)))
        try:
            hpa = await kube.get(f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/{name}")
            written = await update_status(kube, hpa, {"currentReplicas": 1, "desiredReplicas": 3})
            assert written is not None
            return written
        finally:
            await kube.aclose()

    return asyncio.run(go())


@pytest.fixture
def bg() -> Iterator[LoopThread]:
    """The loop the informer runs on; the test reads it through this loop, as the reconciler does."""
    with loop_thread() as thread:
        yield thread


def stale_informer(cluster: Cluster, proxy: Proxy, name: str, bg: LoopThread) -> Informer:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa_manifest(name)))
    api = load(str(cluster.kubeconfig))
    api.configuration.host = f"https://127.0.0.1:{proxy.port}"
    informer = Informer(
        Kube(api),
        f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers",
        transform=without_managed_fields,
    )
    bg.call(informer.start)
    assert bg.run(informer.wait_synced(30))
    wait_until(lambda: bg.call(informer.get, NS, name) is not None, timeout=30, what="the HPA cached")
    proxy.freeze()  # from here the watch delivers nothing: the cache is behind the writes
    return informer


def skips(r: Any) -> float:
    return (
        r.metrics.registry.get_sample_value(
            "horizontal_pod_autoscaler_controller_stale_sync_skips_total",
            {"group": "autoscaling", "resource": "horizontalpodautoscalers"},
        )
        or 0.0
    )


def test_an_hpa_is_not_decided_until_the_watch_delivers_our_status_write(
    cluster: Cluster, namespace: str, proxy: Proxy, bg: LoopThread
) -> None:
    informer = stale_informer(cluster, proxy, "held", bg)
    try:
        r = checker(informer, Release(37))
        written = write_status(cluster, "held")
        r.own_writes.wrote_at(
            (NS, "held"), written["metadata"]["uid"], written["metadata"]["resourceVersion"]
        )
        with pytest.raises(StaleReadError, match="is not as new as written version"):
            bg.call(Reconciler._ensure_read_own_writes, r, (NS, "held"))
        assert skips(r) == 1
        assert (
            bg.call(informer.get, NS, "held")["status"].get("desiredReplicas") != 3
        )  # decided on, it would be stale
        proxy.thaw()  # the watch heals (re-established from its last resourceVersion)
        wait_until(
            lambda: (bg.call(informer.get, NS, "held") or {}).get("status", {}).get("desiredReplicas") == 3,
            timeout=120,
            what="the write delivered by the watch",
        )
        bg.call(Reconciler._ensure_read_own_writes, r, (NS, "held"))
        assert len(r.own_writes) == 0  # caught up: forgotten
        assert skips(r) == 1
    finally:
        bg.run(informer.aclose())
        bg.run(informer.kube.aclose())


@pytest.mark.parametrize(
    ("release", "gates"),
    [(Release(36), {}), (Release(37), {"StaleControllerConsistencyHPA": False})],
    ids=["before-1.37", "gate-off"],
)
def test_without_the_rule_a_stale_cache_is_decided_on(
    cluster: Cluster, namespace: str, proxy: Proxy, release: Release, gates: dict[str, bool], bg: LoopThread
) -> None:
    name = f"decided-{release.minor}-{len(gates)}"
    informer = stale_informer(cluster, proxy, name, bg)
    try:
        r = checker(informer, release, gates)
        written = write_status(cluster, name)
        if Reconciler._reads_own_writes(r):  # type: ignore[arg-type]
            r.own_writes.wrote_at(
                (NS, name), written["metadata"]["uid"], written["metadata"]["resourceVersion"]
            )
        bg.call(Reconciler._ensure_read_own_writes, r, (NS, name))
        assert skips(r) == 0
    finally:
        proxy.thaw()
        bg.run(informer.aclose())
        bg.run(informer.kube.aclose())
