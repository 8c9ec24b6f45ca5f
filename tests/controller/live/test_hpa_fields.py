"""The controller's HPA cache drops the field sets of managedFields, and a status written
from that trimmed copy leaves the server's record of who owns which field intact."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from controller.live.hpa_fields import hpa_essentials
from controller.live.second_writer import FIELD_MANAGER
from controller.live.second_writer import status_writes
from controller.live.writer import update_status
from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load

NS = "hpa-fields"


def served_hpa() -> dict[str, Any]:
    entry = {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "autoscaling/v2",
             "time": "2026-11-26T01:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:maxReplicas": {}, "f:minReplicas": {}}}}  # fmt: skip
    status = {**entry, "manager": "kube-controller-manager", "subresource": "status",
              "time": "2026-11-26T02:00:00Z", "fieldsV1": {"f:status": {}}}  # fmt: skip
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "managedFields": [entry, status],
            "annotations": {"a": "b"},
        },
        "spec": {"maxReplicas": 4},
        "status": {"desiredReplicas": 2},
    }


def test_the_essentials_drop_only_the_field_sets() -> None:
    hpa = served_hpa()
    kept = hpa_essentials(hpa)
    assert all("fieldsV1" not in e for e in kept["metadata"]["managedFields"])
    assert [
        {k: v for k, v in e.items() if k != "fieldsV1"} for e in hpa["metadata"]["managedFields"]
    ] == kept["metadata"]["managedFields"]
    assert {k: v for k, v in kept.items() if k != "metadata"} == {
        k: v for k, v in hpa.items() if k != "metadata"
    }
    assert kept["metadata"]["annotations"] == {"a": "b"}


def test_the_second_writer_guard_reads_the_same_writes_from_the_essentials() -> None:
    hpa = served_hpa()
    assert status_writes(hpa_essentials(hpa)) == status_writes(hpa) != {}


@pytest.mark.cluster
def test_a_status_written_from_the_trimmed_copy_keeps_the_servers_managed_fields(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", NS, check=False)
    hpa = {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 4},
    }  # fmt: skip
    cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa))

    def served() -> dict[str, Any]:
        return json.loads(
            cluster.kubectl("-n", NS, "get", "hpa", "web", "-o", "json", "--show-managed-fields").stdout
        )  # type: ignore[no-any-return]

    before = served()

    async def write() -> dict[str, Any] | None:
        kube = Kube(load(str(cluster.kubeconfig)))
        try:
            return await update_status(
                kube, hpa_essentials(before), {"currentReplicas": 1, "desiredReplicas": 1}
            )
        finally:
            await kube.aclose()

    written = asyncio.run(write())
    assert written is not None
    after = served()
    assert written["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
    assert after["status"]["desiredReplicas"] == 1
    managers = {e["manager"]: e for e in after["metadata"]["managedFields"]}
    creator = next(e for e in before["metadata"]["managedFields"] if e.get("subresource") != "status")
    assert managers[creator["manager"]]["fieldsV1"] == creator["fieldsV1"]  # untouched
    assert managers[FIELD_MANAGER]["subresource"] == "status"
    assert "f:status" in managers[FIELD_MANAGER]["fieldsV1"]
