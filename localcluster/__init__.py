"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver (aggregation layer,
RBAC), kube-controller-manager (its HPA controller disabled), kube-scheduler, kwok with
fake nodes, and Prometheus.

    python -m localcluster    up   [--dir .cluster]   start it and return; prints how to use it
    python -m localcluster    down [--dir .cluster]   stop exactly what `up` started, by PID
    python -m localcluster    status [--dir .cluster]

The same ``Cluster`` class backs the pytest fixture. Binaries come from hack/build-tools.sh
(built once, cached by version). Every process binds to 127.0.0.1 on a free port; state,
certificates, logs and PIDs live in the state directory. Only PIDs recorded in it are ever
signalled, and only while their command line is still the one we started.
"""

from .cluster import Cluster
from .manifests import adapter_manifests, service_account_kubeconfig
from .tools import ROOT, Binaries, ClusterError, cache_bin, free_port, tools_cached

__all__ = [
    "ROOT",
    "Binaries",
    "Cluster",
    "ClusterError",
    "adapter_manifests",
    "cache_bin",
    "free_port",
    "service_account_kubeconfig",
    "tools_cached",
]
