"""Ask the three metrics APIs what one HPA needs, as the snapshot records it.

Whoever serves them -- promhpa's adapter, metrics-server, another adapter -- the
controller reads metrics through the kube-apiserver's aggregation layer. A failed fetch is
recorded as a ``metricErrors`` entry, so the engine decides it exactly as upstream would
(a broken metric never lets the HPA scale down).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shared.kube.client import Kube
from shared.kube.discovery import RESTMapper
from shared.kube.errors import KubeError, NotFound
from shared.selectors import SelectorError, from_label_selector


def _selector_text(ls: dict[str, Any] | None) -> str:
    if not ls:
        return ""
    try:
        return str(from_label_selector(ls))
    except SelectorError:
        return ""


CUSTOM = "custom.metrics.k8s.io"


def answering(item: dict[str, Any], selector: dict[str, Any] | None) -> dict[str, Any]:
    """An External item as the snapshot records it: labels that satisfy the query's selector.

    Upstream counts every item the external metrics API returns for a query -- the server is
    the judge of what the selector selects -- while a snapshot ties items to a query by their
    ``metricLabels``. Servers that answer with no labels (KEDA: ``metricLabels: null``) would
    then answer nothing offline, and the HPA would fail where upstream's scales. So each item
    the server returned carries the labels the selector asks for (``matchLabels``, the first
    value of an ``In``, an empty value for ``Exists``), and loses any a ``NotIn`` or
    ``DoesNotExist`` forbids.
    """
    if not selector:
        return item
    labels = dict(item.get("metricLabels") or {})
    labels.update({str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()})
    for e in selector.get("matchExpressions") or []:
        key, op, values = str(e.get("key", "")), e.get("operator"), [str(v) for v in e.get("values") or []]
        if op == "In" and labels.get(key) not in values and values:
            labels[key] = values[0]
        elif op == "Exists" and key not in labels:
            labels[key] = ""
        elif (op == "NotIn" and labels.get(key) in values) or op == "DoesNotExist":
            labels.pop(key, None)
    return {**item, "metricLabels": labels}


async def _custom(
    kube: Kube, mapper: RESTMapper, path: str, query: list[tuple[str, str]], timeout: float
) -> list[dict[str, Any]]:
    """custom.metrics.k8s.io in the version its server prefers (v1beta2, or v1beta1 where
    only that is served), chosen through discovery as client-go's custom metrics client does."""
    # a thread (and discovery) only the first time: this runs for every metric of every HPA
    version = mapper.cached_version(CUSTOM) or await mapper.preferred_version(CUSTOM)
    try:
        body = await kube.get(f"/apis/{CUSTOM}/{version}{path}", query, timeout)
    except NotFound:  # the APIService may have changed hands: ask discovery once more
        fresh = await mapper.preferred_version(CUSTOM, True)
        if fresh == version:
            raise
        version = fresh
        body = await kube.get(f"/apis/{CUSTOM}/{version}{path}", query, timeout)
    if version != "v1beta1":
        return list(body.get("items", []))
    return [
        {**i, "metric": {"name": i.get("metricName", ""), "selector": i.get("selector")}}
        for i in body.get("items", [])
    ]


async def fetch(
    kube: Kube, mapper: RESTMapper, hpa: dict[str, Any], selector: str, timeout: float = 15.0
) -> dict[str, list[Any]]:
    """Every metric the HPA names; each read times out on its own (``--metrics-timeout``)."""
    ns = hpa["metadata"]["namespace"]
    metrics = hpa.get("spec", {}).get("metrics") or [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
    ]
    out: dict[str, list[Any]] = {
        "podMetrics": [],
        "customMetrics": [],
        "externalMetrics": [],
        "metricErrors": [],
    }
    pod_metrics_done = False
    for spec in metrics:
        kind = spec.get("type", "")
        source = (
            spec.get(
                {
                    "Resource": "resource",
                    "ContainerResource": "containerResource",
                    "Pods": "pods",
                    "Object": "object",
                    "External": "external",
                }.get(kind, ""),
                {},
            )
            or {}
        )
        name = source.get("name") or (source.get("metric") or {}).get("name", "")
        try:
            if kind in ("Resource", "ContainerResource"):
                if not pod_metrics_done:
                    body = await kube.get(
                        f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
                        [("labelSelector", selector)],
                        timeout,
                    )
                    out["podMetrics"] = list(body.get("items", []))
                    pod_metrics_done = True
            elif kind == "Pods":
                q = [("labelSelector", selector)]
                if msel := _selector_text((source.get("metric") or {}).get("selector")):
                    q.append(("metricLabelSelector", msel))
                out["customMetrics"] += await _custom(
                    kube, mapper, f"/namespaces/{ns}/pods/*/{quote(name)}", q, timeout
                )
            elif kind == "Object":
                d = source.get("describedObject") or {}
                q = []
                if msel := _selector_text((source.get("metric") or {}).get("selector")):
                    q.append(("metricLabelSelector", msel))
                if d.get("kind") == "Namespace":
                    path = f"/namespaces/{ns}/metrics/{quote(name)}"
                else:
                    resource = await _resource(mapper, d.get("apiVersion", "v1"), d.get("kind", ""))
                    path = f"/namespaces/{ns}/{resource}/{quote(d.get('name', ''))}/{quote(name)}"
                out["customMetrics"] += await _custom(kube, mapper, path, q, timeout)
            elif kind == "External":
                q = []
                metric_selector = (source.get("metric") or {}).get("selector")
                if sel := _selector_text(metric_selector):
                    q.append(("labelSelector", sel))
                body = await kube.get(
                    f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{quote(name)}", q, timeout
                )
                out["externalMetrics"] += [answering(i, metric_selector) for i in body.get("items", [])]
        except KubeError as e:
            message = e.message
            out["metricErrors"].append({"source": kind, "name": name, "message": message})
    return out


async def _resource(mapper: RESTMapper, api_version: str, kind: str) -> str:
    known = mapper.cached_resource(api_version, kind)  # well-known kinds need no thread
    if known is not None:
        return known
    return await mapper.resource_for(api_version, kind)
