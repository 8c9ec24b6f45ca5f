"""The HPA validation table: each invalid spec, refused by the real kube-apiserver and by
``validate_hpa``, with the same messages (field, kind of refusal, value, words).

Each case changes one thing in a valid HPA and is sent as a server-side dry run, so
nothing is stored. The control plane is the tests' (Kubernetes 1.37: HPAScaleToZero and
HPAConfigurableTolerance on). This is the table promhpa's own HPA kind is validated by.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from controller.replay.hpa_validation import validate_hpa
from localcluster import Cluster
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.errors import KubeError

pytestmark = pytest.mark.cluster

BASE: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Pods",
                "pods": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "10"}},
            },
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            },
        ],
        "behavior": {
            "scaleUp": {
                "selectPolicy": "Max",
                "stabilizationWindowSeconds": 0,
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}],
            }
        },
    },
}

OBJ = {
    "type": "Object",
    "object": {
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
        "metric": {"name": "rps"},
        "target": {"type": "Value", "value": "10"},
    },
}
EXT = {
    "type": "External",
    "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "5"}},
}
CRES = {
    "type": "ContainerResource",
    "containerResource": {
        "name": "cpu",
        "container": "app",
        "target": {"type": "Utilization", "averageUtilization": 50},
    },
}


def at(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = doc["spec"]
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    key: Any = int(last) if last.isdigit() else last
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return doc


DELETE = object()
CASES: list[tuple[str, str, Any]] = [
    ("max negative", "maxReplicas", -3),
    ("max zero", "maxReplicas", 0),
    ("min above max", "minReplicas", 20),
    ("min zero, no object or external", "minReplicas", 0),
    ("min negative", "minReplicas", -1),
    ("ref kind empty", "scaleTargetRef.kind", ""),
    ("ref name empty", "scaleTargetRef.name", ""),
    ("ref name with slash", "scaleTargetRef.name", "a/b"),
    ("ref apiVersion bad", "scaleTargetRef.apiVersion", "a/b/c"),
    ("ref apiVersion no group", "scaleTargetRef.apiVersion", "v1"),
    ("metric type unknown", "metrics.0.type", "Bogus"),
    ("metric type empty", "metrics.0.type", ""),
    ("pods source missing", "metrics.0.pods", DELETE),
    ("pods metric name empty", "metrics.0.pods.metric.name", ""),
    ("pods metric name with slash", "metrics.0.pods.metric.name", "a/b"),
    ("pods target utilization", "metrics.0.pods.target", {"type": "Utilization", "averageUtilization": 50}),
    ("pods averageValue negative", "metrics.0.pods.target.averageValue", "-1"),
    ("pods averageValue zero", "metrics.0.pods.target.averageValue", "0"),
    ("pods target type bogus", "metrics.0.pods.target.type", "Often"),
    ("resource name empty", "metrics.1.resource.name", ""),
    ("resource utilization zero", "metrics.1.resource.target.averageUtilization", 0),
    ("resource no target value", "metrics.1.resource.target", {"type": "Utilization"}),
    (
        "resource both targets",
        "metrics.1.resource.target",
        {"type": "Utilization", "averageUtilization": 5, "averageValue": "1"},
    ),
    (
        "two sources",
        "metrics.1.pods",
        {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "1"}},
    ),
    (
        "object without describedObject kind",
        "metrics.0",
        {**OBJ, "object": {**OBJ["object"], "describedObject": {"apiVersion": "v1", "name": "s"}}},
    ),
    (
        "object without target value",
        "metrics.0",
        {**OBJ, "object": {**OBJ["object"], "target": {"type": "Value"}}},
    ),
    (
        "object value negative",
        "metrics.0",
        {**OBJ, "object": {**OBJ["object"], "target": {"type": "Value", "value": "-2"}}},
    ),
    (
        "external without metric name",
        "metrics.0",
        {**EXT, "external": {**EXT["external"], "metric": {"name": ""}}},
    ),
    (
        "external both targets",
        "metrics.0",
        {
            **EXT,
            "external": {**EXT["external"], "target": {"type": "Value", "value": "1", "averageValue": "1"}},
        },
    ),
    (
        "external no target values",
        "metrics.0",
        {**EXT, "external": {**EXT["external"], "target": {"type": "Value"}}},
    ),
    (
        "containerResource without container",
        "metrics.1",
        {**CRES, "containerResource": {**CRES["containerResource"], "container": ""}},
    ),
    (
        "containerResource bad container",
        "metrics.1",
        {**CRES, "containerResource": {**CRES["containerResource"], "container": "Not_A_Label"}},
    ),
    (
        "containerResource bad name",
        "metrics.1",
        {**CRES, "containerResource": {**CRES["containerResource"], "name": "memory-bytes"}},
    ),
    ("selectPolicy bogus", "behavior.scaleUp.selectPolicy", "Sometimes"),
    ("policies empty", "behavior.scaleUp.policies", []),
    ("policy type bogus", "behavior.scaleUp.policies.0.type", "Rate"),
    ("policy value zero", "behavior.scaleUp.policies.0.value", 0),
    ("policy period zero", "behavior.scaleUp.policies.0.periodSeconds", 0),
    ("policy period too long", "behavior.scaleUp.policies.0.periodSeconds", 1801),
    ("window negative", "behavior.scaleUp.stabilizationWindowSeconds", -1),
    ("window too long", "behavior.scaleUp.stabilizationWindowSeconds", 3601),
    ("tolerance negative", "behavior.scaleUp.tolerance", "-0.1"),
    ("scaleDown policies empty", "behavior.scaleDown", {"policies": []}),
]


async def refusals(kube: Kube, docs: list[dict[str, Any]]) -> list[list[str]]:
    """What the API server says of each document created as a dry run ([] : accepted)."""
    out = []
    try:
        for doc in docs:
            try:
                await kube._send("POST", HPAS, doc, [("dryRun", "All")])
                out.append([])
            except KubeError as e:
                causes = (e.details or {}).get("causes") or []
                out.append([f"{c.get('field')}: {c.get('message')}" for c in causes] or [e.message])
    finally:
        await kube.aclose()
    return out


HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


def test_the_valid_spec_is_accepted_by_both(cluster: Cluster) -> None:
    assert asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), [BASE])) == [[]]
    assert validate_hpa(BASE) == []


def test_every_invalid_spec_is_refused_by_both_in_the_same_words(cluster: Cluster) -> None:
    docs = [at(BASE, path, value) for _, path, value in CASES]
    theirs = asyncio.run(refusals(Kube(load(str(cluster.kubeconfig))), docs))
    differ = {
        name: {"api server": sorted(api), "promhpa": sorted(validate_hpa(doc))}
        for (name, _, _), doc, api in zip(CASES, docs, theirs, strict=True)
        if sorted(api) != sorted(validate_hpa(doc))
    }
    assert all(theirs), [name for (name, _, _), api in zip(CASES, theirs, strict=True) if not api]
    assert differ == {}
