"""Objects the tests, benchmarks and demo apply: the adapter's registration (Service,
RBAC, APIServices), HPAs and their metrics, RBAC for a ServiceAccount, and kubeconfigs that
act as a ServiceAccount."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .host import ClusterHost

RBAC = "rbac.authorization.k8s.io"

ADAPTER_APIS = (
    ("v1beta2", "custom.metrics.k8s.io", 100),
    ("v1beta1", "custom.metrics.k8s.io", 100),
    ("v1beta1", "external.metrics.k8s.io", 100),
)


def pods_metric(name: str, average: str) -> dict[str, Any]:
    """An HPA's Pods metric with an AverageValue target."""
    target = {"type": "AverageValue", "averageValue": average}
    return {"type": "Pods", "pods": {"metric": {"name": name}, "target": target}}


def external_metric(name: str, average: str, match_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An HPA's External metric with an AverageValue target, optionally narrowed by labels."""
    metric: dict[str, Any] = {"name": name}
    if match_labels:
        metric["selector"] = {"matchLabels": dict(match_labels)}
    target = {"type": "AverageValue", "averageValue": average}
    return {"type": "External", "external": {"metric": metric, "target": target}}


def object_metric(name: str, kind: str, object_name: str, value: str) -> dict[str, Any]:
    """An HPA's Object metric of a core/v1 object with a Value target."""
    described = {"apiVersion": "v1", "kind": kind, "name": object_name}
    target = {"type": "Value", "value": value}
    return {
        "type": "Object",
        "object": {"describedObject": described, "metric": {"name": name}, "target": target},
    }


def hpa_manifest(
    namespace: str,
    name: str,
    *metrics: dict[str, Any],
    labels: Mapping[str, str] | None = None,
    min_replicas: int = 1,
    max_replicas: int = 10,
) -> dict[str, Any]:
    """An autoscaling/v2 HPA on the Deployment of the same name."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": list(metrics),
        },
    }


Rule = tuple[list[str], list[str], list[str]] | dict[str, Any]


def cluster_role(name: str, *rules: Rule) -> dict[str, Any]:
    """A ClusterRole from (apiGroups, resources, verbs) rules, or rules as written (a
    ``nonResourceURLs`` rule, say)."""
    written = [
        r if isinstance(r, dict) else {"apiGroups": r[0], "resources": r[1], "verbs": r[2]} for r in rules
    ]
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": written}


def binding(
    name: str, role: str, namespace: str, account: str, *, role_kind: str = "ClusterRole", within: str = ""
) -> dict[str, Any]:
    """Binds ``role`` to the ServiceAccount ``namespace/account``: cluster-wide, or a
    RoleBinding ``within`` one namespace."""
    metadata = {"name": name, "namespace": within} if within else {"name": name}
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding" if within else "ClusterRoleBinding",
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


AUTH_READER = "extension-apiserver-authentication-reader"
READER_RULES = (
    (["", "apps", "batch"], ["pods", "namespaces", "nodes", "services", "deployments", "statefulsets",
                             "replicasets", "daemonsets", "jobs"], ["get", "list", "watch"]),
    # MetricRules and ClusterMetricRules (--team-rules), as the chart grants
    (["promhpa.io"], ["metricrules", "clustermetricrules"], ["get", "list", "watch"]),
    (["promhpa.io"], ["metricrules/status", "clustermetricrules/status"], ["update"]),
)  # fmt: skip


def adapter_manifests(
    namespace: str, service: str, port: int, ca_bundle_pem: bytes, resource_metrics: bool = False
) -> list[dict[str, Any]]:
    """What a cluster needs to reach an adapter running on this host, as a cluster would do it.

    Endpoints may not hold loopback addresses and there is no kube-proxy, so the Service is
    an ExternalName pointing at 127.0.0.1; the aggregator dials it on ``port`` and verifies
    the serving certificate against ``caBundle`` for ``<service>.<namespace>.svc``.
    """

    ca = base64.b64encode(ca_bundle_pem).decode()
    resource = [("v1", "metrics.k8s.io", 200), ("v1beta1", "metrics.k8s.io", 100)]
    apis = list(ADAPTER_APIS) + (resource if resource_metrics else [])
    objs: list[dict[str, Any]] = [
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
        binding(f"{service}:system:auth-delegator", "system:auth-delegator", namespace, service),
        binding(
            f"{service}-auth-reader", AUTH_READER, namespace, service, role_kind="Role", within="kube-system"
        ),
        cluster_role(f"{service}-resource-reader", *READER_RULES),
        binding(f"{service}-resource-reader", f"{service}-resource-reader", namespace, service),
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


def service_account_kubeconfig(cluster: ClusterHost, namespace: str, name: str, path: Path) -> Path:
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


def custom_resource_definition(group: str, kind: str, plural: str, scale: bool = True) -> dict[str, Any]:
    """A namespaced CRD serving v1 with any fields; with ``scale``, status and scale
    subresources at ``.spec.replicas``, ``.status.replicas`` and ``.status.selector``."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if scale:
        version["subresources"] = {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        }
    names = {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": "Namespaced", "versions": [version]},
    }
