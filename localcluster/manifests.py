"""Objects the tests, benchmarks and demo apply: the adapter's registration (Service,
RBAC, APIServices) and kubeconfigs that act as a ServiceAccount."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from .cluster import Cluster

ADAPTER_APIS = (
    ("v1beta2", "custom.metrics.k8s.io", 100),
    ("v1beta1", "custom.metrics.k8s.io", 100),
    ("v1beta1", "external.metrics.k8s.io", 100),
)


def adapter_manifests(
    namespace: str, service: str, port: int, ca_bundle_pem: bytes, resource_metrics: bool = False
) -> list[dict[str, object]]:
    """What a cluster needs to reach an adapter running on this host, as a cluster would do it.

    Endpoints may not hold loopback addresses and there is no kube-proxy, so the Service is
    an ExternalName pointing at 127.0.0.1; the aggregator dials it on ``port`` and verifies
    the serving certificate against ``caBundle`` for ``<service>.<namespace>.svc``.
    """

    ca = base64.b64encode(ca_bundle_pem).decode()
    resource = [("v1", "metrics.k8s.io", 200), ("v1beta1", "metrics.k8s.io", 100)]
    apis = list(ADAPTER_APIS) + (resource if resource_metrics else [])
    objs: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": service, "namespace": namespace}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "type": "ExternalName",
                "externalName": "127.0.0.1",
                "ports": [{"port": port, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{service}:system:auth-delegator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{service}-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{service}-resource-reader"},
            "rules": [
                {
                    "apiGroups": ["", "apps", "batch"],
                    "verbs": ["get", "list", "watch"],
                    "resources": [
                        "pods",
                        "namespaces",
                        "nodes",
                        "services",
                        "deployments",
                        "statefulsets",
                        "replicasets",
                        "daemonsets",
                        "jobs",
                    ],
                },
                # MetricRules and ClusterMetricRules (--team-rules), as the chart grants
                {
                    "apiGroups": ["promhpa.io"],
                    "verbs": ["get", "list", "watch"],
                    "resources": ["metricrules", "clustermetricrules"],
                },
                {
                    "apiGroups": ["promhpa.io"],
                    "verbs": ["update"],
                    "resources": ["metricrules/status", "clustermetricrules/status"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{service}-resource-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{service}-resource-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
    ]
    for version, group, priority in apis:
        objs.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{group}"},
                "spec": {
                    "group": group,
                    "version": version,
                    "groupPriorityMinimum": priority,
                    "versionPriority": 200 if version == "v1beta2" else 100,
                    "caBundle": ca,
                    "service": {"name": service, "namespace": namespace, "port": port},
                },
            }
        )
    return objs


def service_account_kubeconfig(cluster: Cluster, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig that acts as a ServiceAccount (a bound token), so RBAC applies for real."""
    token = cluster.kubectl("-n", namespace, "create", "token", name, "--duration=2h").stdout.strip()
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": name,
                "clusters": [
                    {
                        "name": "local",
                        "cluster": {
                            "server": cluster.server,
                            "certificate-authority": str(cluster.pki / "ca.crt"),
                        },
                    }
                ],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": {"cluster": "local", "user": name}}],
            }
        )
    )
    path.chmod(0o600)
    return path
