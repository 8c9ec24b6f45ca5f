"""Generate the CRD of promhpa's own HPA kind from the API server's autoscaling/v2 schema.

    python hack/hpa_crd.py --kubeconfig KUBECONFIG [--kubectl KUBECTL]   # writes the chart's file
    python hack/hpa_crd.py --openapi FILE                                # from a saved document

``horizontalpodautoscalers.autoscaling.promhpa.io`` (version v2, kind HorizontalPodAutoscaler,
short name phpa) takes autoscaling/v2's spec and status field for field, so a built-in HPA's
manifest becomes ours by changing its apiVersion alone. The schema is the API server's own
OpenAPI v3 document for autoscaling/v2 (``/openapi/v3/apis/autoscaling/v2``), with what a
CRD's structural schema cannot hold turned into what it can:

* references are inlined, and the strategic-merge-patch keys dropped (a CRD has no
  strategic merge patch);
* a resource.Quantity is left untyped (a number or a string, as the built-in kind decodes
  it; a structural schema cannot type a node that is either), its grammar checked by the
  admission webhook;
* the spec's ``required`` lists are left to the admission webhook, which names a missing
  field in the API server's words;
* the defaults the API server applies in code (SetDefaults_HorizontalPodAutoscaler:
  minReplicas 1, a CPU utilization metric at 80 %, and each behavior direction's rules)
  become schema defaults, so a stored object reads as a built-in one does;
* ``spec.controller`` is promhpa's own block: kube-controller-manager's HPA flags per object
  (controller/engine/knobs.py).

``tests/charts/test_hpa_crd.py`` regenerates it from the test cluster's API server and fails
on any drift, so a new Kubernetes field shows up as a failing test, not as a silent gap.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parent.parent / "charts" / "promhpa" / "crds" / "horizontalpodautoscalers.yaml"
GROUP, VERSION, PLURAL = "autoscaling.promhpa.io", "v2", "horizontalpodautoscalers"
OPENAPI_PATH = "/openapi/v3/apis/autoscaling/v2"
_PREFIX = "io.k8s.api.autoscaling.v2."
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# A resource.Quantity is a string or a number, decimals included (``tolerance: 0.05``), as
# the built-in kind decodes it. A structural schema types no node that is either, and CEL
# cannot be declared on an untyped one: it is left untyped here, and its grammar is the
# admission webhook's to check, in the decoder's words (controller.live.admission)
_QUANTITY = {"x-kubernetes-preserve-unknown-fields": True}
# what a CRD's structural schema does not accept (apiextensions' validation)
_DROPPED = {
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-unions",
    "$ref",
    "allOf",
}
_UP_RULES = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_DOWN_RULES = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
_CPU_80 = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]

_DURATION = {
    "type": "string",
    "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$",
}


def _controller_block() -> dict[str, Any]:
    def duration(what: str) -> dict[str, Any]:
        return {**_DURATION, "description": f"{what} A Go duration such as 30s or 5m."}

    return {
        "description": (
            "promhpa's own knobs: kube-controller-manager's HPA flags, for this object alone. "
            "Each one left out is the controller's value (kube-controller-manager's default), so "
            "an object without them decides exactly as a built-in HPA would."
        ),
        "type": "object",
        "properties": {
            "syncPeriod": {
                **duration("How often this object is reconciled (--horizontal-pod-autoscaler-sync-period)."),
                "x-kubernetes-validations": [
                    {"rule": "duration(self) >= duration('1s')", "message": "must be at least 1s"}
                ],
            },
            "tolerance": {
                "description": (
                    "The default tolerance of both directions (--horizontal-pod-autoscaler-tolerance); "
                    "spec.behavior.*.tolerance still wins where set."
                ),
                "type": "number",
                "minimum": 0,
            },
            "cpuInitializationPeriod": duration(
                "How long after a pod starts its CPU samples are distrusted "
                "(--horizontal-pod-autoscaler-cpu-initialization-period)."
            ),
            "initialReadinessDelay": duration(
                "How long after a pod starts a readiness change counts as its first "
                "(--horizontal-pod-autoscaler-initial-readiness-delay)."
            ),
            "downscaleStabilizationWindow": duration(
                "The default scale-down stabilization window "
                "(--horizontal-pod-autoscaler-downscale-stabilization)."
            ),
            "release": {
                "description": "The release whose rules decide, 1.33 to 1.38 (default: the cluster's).",
                "type": "string",
                "pattern": r"^v?1\.(3[3-8])(\.[0-9]+)?$",
            },
            "paused": {
                "description": "Hold the replica count (condition ScalingActive, reason ScalingPaused).",
                "type": "boolean",
            },
            "fallback": {
                "description": (
                    "What to propose while the metrics cannot be read (the shape of KEP-5679's proposed "
                    "field): Static proposes replicas once the failure has lasted failureDurationSeconds; "
                    "HoldHigher and HoldLower follow the last good proposal."
                ),
                "type": "object",
                "properties": {
                    "policy": {
                        "type": "string",
                        "enum": ["Static", "HoldHigher", "HoldLower"],
                        "default": "Static",
                    },
                    "replicas": {"type": "integer", "format": "int32", "minimum": 1},
                    "failureDurationSeconds": {"type": "integer", "format": "int32", "minimum": 0},
                    "maxStalenessSeconds": {"type": "integer", "format": "int32", "minimum": 1},
                },
                "x-kubernetes-validations": [
                    {
                        "rule": "(has(self.policy) && self.policy != 'Static') != has(self.replicas)",
                        "message": "replicas is required by the Static policy and taken by no other",
                        "fieldPath": ".replicas",
                    }
                ],
            },
        },
    }


def _inline(node: Any, schemas: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every reference inlined and the keys a CRD refuses dropped."""
    if isinstance(node, list):
        return [_inline(x, schemas, seen) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref") or next(
        (x.get("$ref") for x in node.get("allOf", []) if isinstance(x, dict) and "$ref" in x), None
    )
    out: dict[str, Any] = {}
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            raise ValueError(f"recursive schema at {name}")
        out = dict(_QUANTITY) if name == QUANTITY else _inline(schemas[name], schemas, (*seen, name))
    for key, value in node.items():
        if key in _DROPPED or key == "default":
            continue
        if key == "description" and "description" in out:
            continue  # the referenced type's own words, as kubectl explain shows the built-in's
        out[key] = _inline(value, schemas, seen)
    return out


def _unrequired(node: Any) -> Any:
    """The spec without ``required``: the admission webhook names a missing field in the API
    server's words, where the schema would add a note of its own (CEL rules not checked)."""
    if isinstance(node, list):
        return [_unrequired(x) for x in node]
    if not isinstance(node, dict):
        return node
    return {k: _unrequired(v) for k, v in node.items() if k != "required"}


def _with_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_HorizontalPodAutoscaler as schema defaults (the API server applies them in code)."""
    props = spec["properties"]
    props["minReplicas"]["default"] = 1
    props["metrics"]["default"] = _CPU_80
    behavior = props["behavior"]["properties"]
    for direction, rules in (("scaleUp", _UP_RULES), ("scaleDown", _DOWN_RULES)):
        schema = copy.deepcopy(behavior[direction])
        schema["default"] = rules
        for key, value in rules.items():
            schema["properties"][key]["default"] = value
        behavior[direction] = schema
    props["controller"] = _controller_block()
    return spec


def crd(openapi: dict[str, Any]) -> dict[str, Any]:
    """The CRD from the API server's autoscaling/v2 OpenAPI v3 document."""
    schemas = openapi["components"]["schemas"]
    hpa = schemas[_PREFIX + "HorizontalPodAutoscaler"]
    spec = _with_defaults(_unrequired(_inline(hpa["properties"]["spec"], schemas)))
    status = _inline(hpa["properties"]["status"], schemas)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}", "annotations": {"promhpa.io/crd-version": VERSION}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": "HorizontalPodAutoscaler",
                "listKind": "HorizontalPodAutoscalerList",
                "plural": PLURAL,
                "singular": "horizontalpodautoscaler",
                "shortNames": ["phpa"],
                "categories": ["promhpa"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _columns(),
                    "schema": {
                        "openAPIV3Schema": {
                            "description": (
                                "An HPA of promhpa's own: autoscaling/v2's spec and status, acted on by "
                                "promhpa's controller only (docs/own-kind.md)."
                            ),
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                            "required": ["spec"],
                        }
                    },
                }
            ],
        },
    }


def _columns() -> list[dict[str, Any]]:
    """kubectl get hpa's columns, as near as a JSONPath comes (REFERENCE names the target's
    name, TARGETS the first metric's current value)."""
    return [
        {"name": "Reference", "type": "string", "jsonPath": ".spec.scaleTargetRef.name"},
        {"name": "Targets", "type": "string", "jsonPath": ".status.currentMetrics[*].*.current.*"},
        {"name": "MinPods", "type": "integer", "jsonPath": ".spec.minReplicas"},
        {"name": "MaxPods", "type": "integer", "jsonPath": ".spec.maxReplicas"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


HEADER = """\
# promhpa's own HPA kind (autoscaling.promhpa.io/v2): autoscaling/v2's spec and status, with
# spec.controller beside them. Generated by hack/hpa_crd.py from the API server's schema: do
# not edit. Helm installs what is in crds/ once and never upgrades it: docs/upgrade.md.
"""


class _Plain(yaml.SafeDumper):
    """No anchors: a default repeated in the schema is written out each time."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(openapi: dict[str, Any]) -> str:
    return HEADER + yaml.dump(crd(openapi), Dumper=_Plain, sort_keys=False, width=110, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kubeconfig", help="a cluster whose API server serves autoscaling/v2")
    p.add_argument("--kubectl", default="kubectl")
    p.add_argument("--openapi", type=Path, help="a saved /openapi/v3/apis/autoscaling/v2 document")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    if args.openapi is not None:
        openapi = json.loads(args.openapi.read_text())
    elif args.kubeconfig:
        raw = subprocess.run(
            [
                args.kubectl,
                "--kubeconfig",
                args.kubeconfig,
                "get",
                "--raw",
                OPENAPI_PATH,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        openapi = json.loads(raw)
    else:
        p.error("give --kubeconfig or --openapi")
    args.out.write_text(render(openapi))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
