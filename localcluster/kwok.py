"""kwok's fake nodes: what a node object must carry for kwok to run pods on it."""

from __future__ import annotations


def fake_node(name: str, tainted: bool = False) -> dict[str, object]:
    """``tainted``: beside a real node, only pods that tolerate kwok's taint are placed on a
    fake node (a chart's Deployment must run on the real one)."""
    node: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        # room for the controller benchmark's 20,000 pods: at the kubelet default of 110 pods
        # per node, three nodes stop scheduling at 330 pods
        "status": {
            "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "8000"},
            "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "8000"},
        },
    }
    if tainted:
        node["spec"] = {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]}
    return node
