"""kwok's fake nodes: what a node object must carry for kwok to run pods on it, and the
configuration files kwok is started with."""

from __future__ import annotations

import json
from pathlib import Path

from .tools import FORWARDED_POD_PORT


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


def write_options(directory: Path) -> Path:
    """More pods started at once than kwok's default 4: a benchmark's 100,000 pods are
    started in minutes, not a quarter of an hour."""
    path = directory / "kwok-options.yaml"
    options = {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
               # a configuration given replaces kwok's defaults: the debugging handlers
               # (logs, port-forward) are on again here, as they are without one
               "options": {"podPlayStageParallelism": 16, "nodePlayStageParallelism": 4,
                           "enableDebuggingHandlers": True, "enableProfilingHandler": False,
                           "enablePodsOnNodeSyncListPager": True,
                           # the fake nodes' heartbeat: kwok renews each node's Lease every
                           # 10 s; its stage patches the node's status only every 10 minutes,
                           # past the 300 s grace, which alone let the nodes go NotReady
                           "nodeLeaseDurationSeconds": 40, "nodeLeaseParallelism": 4}}  # fmt: skip
    path.write_text(json.dumps(options))
    return path


def write_node_stage(directory: Path) -> Path:
    """Our own stage for a node that is not Ready: Ready again, at 127.0.0.1 with kwok's
    server as its kubelet. kwok's stock one writes only the addresses a node lacks, and
    with no Hostname to add it wrote an empty list over the InternalIP whenever a node
    came back from NotReady (after an API server restart): the API server then found no
    address to port-forward to."""
    path = directory / "kwok-node-initialize.yaml"
    template = "\n".join([
        "{{ $now := Now }}",
        "conditions:",
        "{{ range NodeConditions }}",
        "- lastHeartbeatTime: {{ $now | Quote }}",
        "  lastTransitionTime: {{ $now | Quote }}",
        "  message: {{ .message | Quote }}",
        "  reason: {{ .reason | Quote }}",
        "  status: {{ .status | Quote }}",
        "  type: {{ .type | Quote }}",
        "{{ end }}",
        "addresses:",
        "- address: {{ NodeIP | Quote }}",
        "  type: InternalIP",
        "daemonEndpoints:",
        "  kubeletEndpoint:",
        "    Port: {{ NodePort }}",
        "allocatable:",
        "{{ YAML .status.allocatable 1 }}",
        "capacity:",
        "{{ YAML .status.capacity 1 }}",
        "nodeInfo:",
        "  architecture: amd64",
        "  operatingSystem: linux",
        '  kubeletVersion: {{ printf "kwok-%s" Version }}',
        '  kubeProxyVersion: {{ printf "kwok-%s" Version }}',
        '  containerRuntimeVersion: {{ printf "kwok-%s" Version }}',
        '  kernelVersion: {{ printf "kwok-%s" Version }}',
        "phase: Running",
    ])  # fmt: skip
    stage = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": "node-initialize"},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Node"},
            "selector": {"matchExpressions": [{
                "key": '.status.conditions.[] | select( .type == "Ready" ) | .status',
                "operator": "NotIn", "values": ["True"]}]},
            "next": {"statusTemplate": template},
        },
    }  # fmt: skip
    path.write_text(json.dumps(stage))
    return path


def write_port_forward(directory: Path, forwarded_port: int) -> Path:
    """kwok's kubelet server answers the API server's port-forward to any pod's
    FORWARDED_POD_PORT (the chart's controller port) by connecting to 127.0.0.1 at the
    ``forwarded`` port: a process listening there is that pod's endpoint, reached the
    way a user outside a cluster reaches one (``kubectl port-forward``, ``why``)."""
    path = directory / "kwok-port-forward.yaml"
    forward = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterPortForward",
        "metadata": {"name": "loopback"},
        "spec": {"forwards": [{"ports": [FORWARDED_POD_PORT],
                               "target": {"address": "127.0.0.1", "port": forwarded_port}}]},
    }  # fmt: skip
    path.write_text(json.dumps(forward))
    return path
