"""What runs *in* the real node's cluster, as users have it: Prometheus as a Deployment
(``monitoring/prometheus-operated``, the address the README's install command names)
scraping annotated pods through Kubernetes service discovery and the kubelet's
``/metrics/cadvisor``, and the demo app as real containers serving real HTTP.

The demo: ``shop`` serves requests and counts them; ``load`` sends 10 requests/s per
replica to shop's Service (its replica count is the knob); ``worker`` is a second target.
Two MetricRules of the demo's namespace serve what the HPAs read: the Pods metric
``requests_per_second`` (each shop pod's rate) and the External metric
``shop_requests_per_second`` (their sum). ``shop`` scales on the first, ``worker`` on the second.
"""

from __future__ import annotations

import json
from typing import Any

from .images import DEMO_IMAGE, PROMETHEUS_IMAGE
from .manifests import external_metric, hpa_manifest, pods_metric
from .node_host import NODE_NAME

MONITORING = "monitoring"
PROMETHEUS_SERVICE = "prometheus-operated"
PROMETHEUS_URL = f"http://{PROMETHEUS_SERVICE}.{MONITORING}.svc:9090"
DEMO = "demo"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# what the kubelet enforces on every container here (and the chart asks of its own)
LOCKED_DOWN = {
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}

SCRAPE = {
    "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
    "scrape_configs": [
        {
            "job_name": "kubernetes-pods",
            "kubernetes_sd_configs": [{"role": "pod"}],
            "relabel_configs": [
                {
                    "source_labels": ["__meta_kubernetes_pod_annotation_prometheus_io_scrape"],
                    "action": "keep",
                    "regex": "true",
                },
                {
                    "source_labels": ["__address__", "__meta_kubernetes_pod_annotation_prometheus_io_port"],
                    "regex": "([^:]+)(?::\\d+)?;(\\d+)",
                    "replacement": "$1:$2",
                    "target_label": "__address__",
                },
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
            ],
        },
        {
            # the real node's kubelet (kwok's fake nodes have none a pod can reach)
            "job_name": "kubelet-cadvisor",
            "scheme": "https",
            "metrics_path": "/metrics/cadvisor",
            "kubernetes_sd_configs": [{"role": "node"}],
            "tls_config": {"ca_file": f"{SA_DIR}/ca.crt"},
            "authorization": {"credentials_file": f"{SA_DIR}/token"},
            "relabel_configs": [
                {"source_labels": ["__meta_kubernetes_node_name"], "action": "keep", "regex": NODE_NAME},
            ],
        },
    ],
}


def _meta(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {"app": name}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _deployment(
    name: str, namespace: str, image: str, args: list[str], replicas: int = 1, **extra: Any
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "args": args, "securityContext": LOCKED_DOWN}
    container.update(extra.pop("container", {}))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": extra.pop("annotations", {})},
                "spec": {"containers": [container], "terminationGracePeriodSeconds": 5, **extra},
            },
        },
    }


def _service(name: str, namespace: str, port: int, target: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace),
        "spec": {"selector": {"app": name}, "ports": [{"port": port, "targetPort": target}]},
    }


def prometheus() -> list[dict[str, Any]]:
    """Prometheus in ``monitoring``: its config, its identity (reading pods and nodes, and
    the kubelet's metrics), its Deployment and the Service the adapter's URL names."""
    rbac = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta("prometheus"),
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["pods", "nodes", "services", "endpoints"],
                    "verbs": ["get", "list", "watch"],
                },
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("prometheus"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "prometheus"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": MONITORING}],
        },
    ]
    deployment = _deployment(
        "prometheus",
        MONITORING,
        PROMETHEUS_IMAGE,
        [
            "--config.file=/etc/prometheus/prometheus.yml",
            "--storage.tsdb.path=/prometheus",
            "--storage.tsdb.retention.time=2h",
            "--web.listen-address=:9090",
        ],
        serviceAccountName="prometheus",
        volumes=[{"name": "config", "configMap": {"name": "prometheus"}}, {"name": "data", "emptyDir": {}}],
        container={
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/prometheus"},
                {"name": "data", "mountPath": "/prometheus"},
            ],
            "readinessProbe": {"httpGet": {"path": "/-/ready", "port": 9090}, "periodSeconds": 2},
        },
    )
    service = _service(PROMETHEUS_SERVICE, MONITORING, 9090, 9090)
    service["spec"]["selector"] = {"app": "prometheus"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("prometheus", MONITORING)},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("prometheus", MONITORING),
            "data": {"prometheus.yml": json.dumps(SCRAPE, indent=1)},
        },
        *rbac,
        deployment,
        service,
    ]


def demo_app() -> list[dict[str, Any]]:
    """The demo's namespace, its three Deployments and shop's Service (no HPA yet)."""
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}
    serve = {
        "annotations": scrape,
        "container": {
            "ports": [{"containerPort": 8080}],
            "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}},
            "readinessProbe": {"httpGet": {"path": "/metrics", "port": 8080}, "periodSeconds": 2},
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEMO}},
        _deployment("shop", DEMO, DEMO_IMAGE, ["serve"], **json.loads(json.dumps(serve))),
        _service("shop", DEMO, 80, 8080),
        _deployment("worker", DEMO, DEMO_IMAGE, ["serve"], **json.loads(json.dumps(serve))),
        _deployment(
            "load",
            DEMO,
            DEMO_IMAGE,
            ["load", f"http://shop.{DEMO}.svc/"],
            replicas=0,
            container={"env": [{"name": "LOAD_RPS", "value": "10"}]},
        ),
    ]


def demo_autoscaling() -> list[dict[str, Any]]:
    """The demo namespace's MetricRules and the two HPAs reading them (10 requests/s a pod)."""
    rules = [
        {
            "apiVersion": "promhpa.io/v1alpha1",
            "kind": "MetricRule",
            "metadata": _meta("requests", DEMO),
            "spec": {
                "seriesQuery": "demo_http_requests_total",
                "resources": {
                    "overrides": {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
                },
                "name": {"matches": "^demo_http_requests_total$", "as": "requests_per_second"},
                "metricsQuery": "sum(rate(<<.Series>>{<<.LabelMatchers>>}[30s])) by (<<.GroupBy>>)",
            },
        },
        {
            "apiVersion": "promhpa.io/v1alpha1",
            "kind": "MetricRule",
            "metadata": _meta("shop-requests", DEMO),
            "spec": {
                "metric": "shop_requests_per_second",
                "query": 'sum(rate(demo_http_requests_total{pod=~"shop-.*"}[30s]))',
            },
        },
    ]
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 15}}
    shop = hpa_manifest(DEMO, "shop", pods_metric("requests_per_second", "10"), max_replicas=6)
    worker = hpa_manifest(DEMO, "worker", external_metric("shop_requests_per_second", "10"), max_replicas=6)
    for hpa in (shop, worker):
        hpa["spec"]["behavior"] = behavior
    return [*rules, shop, worker]
