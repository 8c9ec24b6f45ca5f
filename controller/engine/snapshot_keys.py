"""The keys a snapshot may hold, at every level the engine reads (pure).

A misspelt ``stabilizationWindowSecond`` deep in an HPA's behavior is silently ignored by
any reader that only looks for the keys it knows, and the decision changes without a word.
``decide`` refuses such a key and names the nearest known one. The schema is closed where
Kubernetes' is closed and stable (the autoscaling/v2 HPA, ObjectMeta, Scale, the metrics
APIs' values, the snapshot's own blocks) and open where a real cluster's objects carry
fields the engine never reads and newer releases add (a pod's spec and status, labels,
annotations, managed fields).
"""

from __future__ import annotations

import difflib
from typing import Any

from .knobs import KEYS as KNOBS

OPEN: dict[str, Any] = {}  # any keys, not descended
SCALAR = None


def _obj(*keys: str, **nested: Any) -> dict[str, Any]:
    return {**dict.fromkeys(keys, SCALAR), **nested}


_META = _obj(
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    labels=OPEN,
    annotations=OPEN,
    ownerReferences=[OPEN],
    finalizers=[SCALAR],
    managedFields=[OPEN],
)
_SELECTOR = _obj(matchLabels=OPEN, matchExpressions=[_obj("key", "operator", values=[SCALAR])])
_METRIC_ID = _obj("name", selector=_SELECTOR)
_TARGET = _obj("type", "value", "averageValue", "averageUtilization")
_CURRENT = _obj("value", "averageValue", "averageUtilization")
_REF = _obj("apiVersion", "kind", "name")
_RULES = _obj(
    "stabilizationWindowSeconds",
    "selectPolicy",
    "tolerance",
    policies=[_obj("type", "value", "periodSeconds")],
)
_CONDITION = _obj(
    "type", "status", "lastTransitionTime", "lastProbeTime", "reason", "message", "observedGeneration"
)


def _sources(value: dict[str, Any], metric_key: str) -> dict[str, Any]:
    """autoscaling/v2's MetricSpec (``value``: the target) or MetricStatus (the current)."""
    return _obj(
        "type",
        object=_obj(describedObject=_REF, metric=_METRIC_ID, **{metric_key: value}),
        pods=_obj(metric=_METRIC_ID, **{metric_key: value}),
        resource=_obj("name", **{metric_key: value}),
        containerResource=_obj("name", "container", **{metric_key: value}),
        external=_obj(metric=_METRIC_ID, **{metric_key: value}),
    )


_HPA = _obj(
    "apiVersion",
    "kind",
    metadata=_META,
    spec=_obj(
        "minReplicas",
        "maxReplicas",
        scaleTargetRef=_REF,
        metrics=[_sources(_TARGET, "target")],
        behavior=_obj(scaleUp=_RULES, scaleDown=_RULES),
        # promhpa's own kind (autoscaling.promhpa.io/v2): the per-object knobs (``knobs``)
        controller=_obj(
            *(k for k in KNOBS if k != "fallback"),
            fallback=_obj("policy", "replicas", "failureDurationSeconds", "maxStalenessSeconds"),
        ),
    ),
    status=_obj(
        "observedGeneration",
        "lastScaleTime",
        "currentReplicas",
        "desiredReplicas",
        currentMetrics=[_sources(_CURRENT, "current")],
        conditions=[_CONDITION],
    ),
)
_EVENT = _obj("replicaChange", "timestamp", "outdated")

SNAPSHOT = _obj(
    "now",
    "name",
    "description",
    "scaleError",
    "scaleUpdateError",
    controller=_obj(
        "tolerance",
        "cpuInitializationPeriod",
        "initialReadinessDelay",
        "downscaleStabilizationWindow",
        "scaleUpLimitFactor",
        "scaleUpLimitMinimum",
        "kubernetesVersion",
        featureGates=OPEN,
    ),
    hpa=_HPA,
    scale=_obj(
        "apiVersion", "kind", metadata=_META, spec=_obj("replicas"), status=_obj("replicas", "selector")
    ),
    pods=[_obj("apiVersion", "kind", metadata=_META, spec=OPEN, status=OPEN)],
    podMetrics=[
        _obj(
            "apiVersion", "kind", "timestamp", "window", metadata=_META, containers=[_obj("name", usage=OPEN)]
        )
    ],
    customMetrics=[
        _obj(
            "apiVersion",
            "kind",
            "metricName",
            "timestamp",
            "windowSeconds",
            "value",
            describedObject=_obj(
                "apiVersion", "kind", "name", "namespace", "uid", "resourceVersion", "fieldPath"
            ),
            metric=_METRIC_ID,
            selector=OPEN,
            metadata=_META,
        )
    ],
    externalMetrics=[
        _obj(
            "apiVersion",
            "kind",
            "metricName",
            "timestamp",
            "window",
            "windowSeconds",
            "value",
            metricLabels=OPEN,
        )
    ],
    metricErrors=[_obj("source", "name", "message")],
    selectingHPAs=[SCALAR],
    history=_obj(
        recommendations=[_obj("replicas", "timestamp")],
        scaleUpEvents=[_EVENT],
        scaleDownEvents=[_EVENT],
        fallback=_obj("failingSince", "lastGood", "lastGoodAt"),
    ),
    expect=OPEN,
)


def unknown_keys(data: Any, schema: Any = SNAPSHOT, limit: int = 20) -> list[str]:
    """``path: unknown key (did you mean ...?)`` for each key the schema does not know, at
    every level, the first ``limit`` of them; values of the wrong type are left to the
    parser, which names them."""
    out: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(data, schema, "")]
    while stack and len(out) < limit:
        node, shape, path = stack.pop()
        if isinstance(shape, list) and isinstance(node, list):
            stack.extend((item, shape[0], f"{path}[{i}]") for i, item in reversed(list(enumerate(node))))
        elif isinstance(shape, dict) and shape is not OPEN and isinstance(node, dict):
            children = []
            for key in node:
                where = f"{path}.{key}" if path else str(key)
                if key in shape:
                    children.append((node[key], shape[key], where))
                    continue
                hint = difflib.get_close_matches(str(key), list(shape), n=1)
                extra = f" (did you mean {hint[0]!r}?)" if hint else f" (known: {', '.join(sorted(shape))})"
                out.append(f"{where}: unknown key{extra}")
            stack.extend(reversed(children))
    return out[:limit]
