"""The metrics APIs' wire types and Kubernetes Status errors.

Responses carry ``kind``/``apiVersion`` so ``kubectl get --raw`` and the HPA controller read
them as any API server's. Values are milli-quantities (prometheus-adapter's
``int64(v*1000)``), which the HPA reads exactly; NaN and +-Inf never reach the wire.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from rules.config import GroupResource
from rules.naming import known
from shared.durations import format_time
from shared.kube.errors import status_body

CUSTOM = "custom.metrics.k8s.io"
EXTERNAL = "external.metrics.k8s.io"
RESOURCE = "metrics.k8s.io"
# each group's versions, preferred first: metrics.k8s.io/v1 (KEP-5207) is what kubectl top
# asks for first from 1.37; v1beta1 stays for the HPA controller and older clients
VERSIONS = {CUSTOM: ("v1beta2", "v1beta1"), EXTERNAL: ("v1beta1",), RESOURCE: ("v1", "v1beta1")}


@functools.lru_cache(maxsize=512)  # once per resource, not once per item of a 1,000-item answer
def kind_of(gr: GroupResource) -> str:
    found = known(gr)
    return found.kind if found else gr.resource[:1].upper() + gr.resource[1:].removesuffix("s")


@functools.lru_cache(maxsize=512)
def api_version_of(gr: GroupResource) -> str:
    found = known(gr)
    if found is not None:
        return found.api_version
    return f"{gr.group}/v1" if gr.group else "v1"


_SI = {0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def format_milli(milli: int) -> str:
    """Canonical DecimalSI text of a milli-value, in integer arithmetic.

    Equal to ``str(Quantity.from_milli(milli))`` (tested), without Decimal: building a
    1,000-pod answer spends most of its time here.
    """
    if milli % 1000:
        return f"{milli}m"
    n, exp = milli // 1000, 0
    while n and n % 1000 == 0 and exp < 18:
        n, exp = n // 1000, exp + 3
    return f"{n}{_SI[exp]}"


def milli_quantity(value: float) -> str | None:
    """int64(v*1000) milli, as prometheus-adapter; None for NaN/Inf (the sample is dropped)."""
    if not math.isfinite(value):
        return None
    milli = int(value * 1000)
    if not -(2**63) <= milli < 2**63:
        return None
    return format_milli(milli)


@functools.lru_cache(maxsize=4096)
def timestamp(ts: float) -> str:
    """Samples of one query share a timestamp; format it once."""
    return format_time(datetime.fromtimestamp(ts, UTC))


def item_builder(
    version: str, gr: GroupResource, namespace: str | None, metric: str, selector: dict[str, Any] | None
) -> Callable[[str, str, float], dict[str, Any]]:
    """MetricValue items of one answer: what all of them share is computed once (kind,
    apiVersion, the metric and its selector), so a 1,000-item answer costs little per item."""
    kind, api_version = kind_of(gr), api_version_of(gr)
    ns = {"namespace": namespace} if namespace else {}
    if version == "v1beta1":
        extra = {"selector": selector} if selector else {}

        def v1beta1(name: str, value: str, ts: float) -> dict[str, Any]:
            described = {"kind": kind, "name": name, "apiVersion": api_version, **ns}
            return {"describedObject": described, "metricName": metric, "timestamp": timestamp(ts),
                    "value": value, **extra}  # fmt: skip

        return v1beta1
    metric_obj = {"name": metric, **({"selector": selector} if selector else {})}

    def v1beta2(name: str, value: str, ts: float) -> dict[str, Any]:
        described = {"kind": kind, "name": name, "apiVersion": api_version, **ns}
        return {
            "describedObject": described,
            "metric": metric_obj,
            "timestamp": timestamp(ts),
            "value": value,
        }

    return v1beta2


def value_list(group: str, version: str, kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": f"{group}/{version}", "metadata": {}, "items": items}


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return status_body(code, reason, message, details)


def resource_list(group: str, version: str, resources: list[tuple[str, bool, str]]) -> dict[str, Any]:
    """An APIResourceList: (name, namespaced, kind) per served resource/metric."""
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}",
        "resources": [
            {"name": n, "singularName": "", "namespaced": ns, "kind": k, "verbs": ["get", "list"]}
            for n, ns, k in resources
        ],
    }


def group_entry(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in VERSIONS[group]]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}
