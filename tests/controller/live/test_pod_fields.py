"""The controller's pod cache keeps only what the algorithm reads, and decides the same."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controller.engine.parse import parse_pod
from controller.engine.reader import _Reader
from controller.live.pod_fields import pod_essentials


def full_pod(**status: Any) -> dict[str, Any]:
    """A pod as the API returns it, with everything a real one carries."""
    container = {
        "name": "app",
        "image": "registry.example/app:1.2.3",
        "args": ["--port=8080", "--verbose"],
        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(20)],
        "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-abc",
            "namespace": "shop",
            "uid": "0f0f",
            "resourceVersion": "42",
            "labels": {"app": "web", "pod-template-hash": "7d9"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d9", "uid": "1a1a"}],
            "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}] * 5,
            "creationTimestamp": "2026-11-23T10:00:00Z",
            **status.pop("meta", {}),
        },
        "spec": {
            "containers": [
                container,
                {**container, "name": "proxy", "resources": {"requests": {"cpu": "50m"}}},
            ],
            "initContainers": [
                {"name": "migrate", "image": "m", "resources": {"requests": {"cpu": "1"}}},
                {
                    "name": "log-shipper",
                    "image": "s",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "100m"}},
                },
            ],
            "overhead": {"cpu": "10m"},
            "volumes": [{"name": "config", "configMap": {"name": "app"}}],
            "nodeName": "node-1",
            "tolerations": [{"key": "k", "operator": "Exists"}] * 3,
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-11-23T10:00:05Z",
            "podIP": "10.0.0.7",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-23T10:00:06Z"},
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2026-11-23T10:00:30Z",
                    "lastProbeTime": None,
                },
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-23T10:00:30Z"},
            ],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0, "image": "x" * 80}] * 2,
            **status,
        },
    }


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"phase": "Pending", "conditions": []},
        {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-23T10:01:00Z"}]},
        {"meta": {"deletionTimestamp": "2026-11-23T11:00:00Z"}},
    ],
    ids=["ready", "pending", "unready", "deleted"],
)
def test_the_engine_reads_the_same_pod_from_the_essentials(variant: dict[str, Any]) -> None:
    pod = full_pod(**copy.deepcopy(variant))
    assert parse_pod(_Reader(pod_essentials(pod))) == parse_pod(_Reader(pod))


def test_the_essentials_are_a_fraction_of_the_pod() -> None:
    pod = full_pod()
    assert len(json.dumps(pod_essentials(pod))) * 5 < len(json.dumps(pod))


def test_pod_level_requests_are_kept() -> None:
    pod = full_pod()
    pod["spec"]["resources"] = {"requests": {"cpu": "2"}}
    assert parse_pod(_Reader(pod_essentials(pod))) == parse_pod(_Reader(pod))


def test_pods_of_one_template_share_their_spec_and_labels() -> None:
    """Decoded separately (as from a list page or a watch event), two pods of one template
    keep one spec and one labels object between them, and each still reads as itself."""
    first, second = full_pod(), full_pod(meta={"name": "web-def"})
    a, b = (pod_essentials(json.loads(json.dumps(p))) for p in (first, second))
    assert a["spec"] is b["spec"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert parse_pod(_Reader(b)) == parse_pod(_Reader(second))


def test_a_pod_of_another_template_keeps_its_own_spec() -> None:
    other = full_pod()
    other["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
    a, b = pod_essentials(full_pod()), pod_essentials(other)
    assert a["spec"] is not b["spec"]
    assert parse_pod(_Reader(b)) == parse_pod(_Reader(other))
