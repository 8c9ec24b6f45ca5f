"""A scale write that conflicts, against the real API server: from 1.34 upstream retries
it after a fresh GET (client-go's RetryOnConflict); before, the conflict is the failed
rescale. The conflict is real: the scale PUT carries a resourceVersion the Deployment has
moved past."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from controller.engine.versions import Release
from controller.live.reconciler import Reconciler
from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.errors import Conflict
from tests.support import cpu_deployment

pytestmark = [pytest.mark.cluster]
NS = "scale-conflict"


def stale_scale(cluster: Cluster, name: str) -> tuple[str, dict[str, Any]]:
    """The Deployment's scale, then a change to the Deployment that makes it stale."""
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(cpu_deployment(NS, name)))
    path = f"/apis/apps/v1/namespaces/{NS}/deployments/{name}/scale"
    scale = json.loads(cluster.kubectl("get", "--raw", path).stdout)
    cluster.kubectl("-n", NS, "annotate", "deployment", name, "touched=yes", "--overwrite")
    return path, scale


def write(cluster: Cluster, path: str, scale: dict[str, Any], release: Release) -> None:
    async def go() -> None:
        kube = Kube(load(str(cluster.kubeconfig)))
        try:
            wanted = {**scale, "spec": {**scale["spec"], "replicas": 3}}
            await Reconciler._write_scale(SimpleNamespace(kube=kube, scales=None), path, wanted, 3, release)  # type: ignore[arg-type]
        finally:
            await kube.aclose()

    asyncio.run(go())


def replicas(cluster: Cluster, name: str) -> int:
    out = cluster.kubectl("-n", NS, "get", "deployment", name, "-o", "jsonpath={.spec.replicas}").stdout
    return int(out)


def test_from_1_34_a_conflicting_scale_write_is_retried_after_a_fresh_get(cluster: Cluster) -> None:
    path, scale = stale_scale(cluster, "retried")
    write(cluster, path, scale, Release(34))
    assert replicas(cluster, "retried") == 3


def test_before_1_34_a_conflicting_scale_write_fails(cluster: Cluster) -> None:
    path, scale = stale_scale(cluster, "failed")
    with pytest.raises(Conflict):
        write(cluster, path, scale, Release(33))
    assert replicas(cluster, "failed") == 1
