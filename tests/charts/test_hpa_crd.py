"""The CRD of promhpa's own HPA kind against the real API server's autoscaling/v2.

The chart's file must be what ``hack/hpa_crd.py`` makes of the running API server's schema
(a new upstream field is a failing test, not a silent gap); a built-in HPA's manifest must
become ours by its apiVersion alone and be stored as the built-in one is, defaults included;
``spec.controller``'s bad values are refused naming the field.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from localcluster import Cluster
from tests.support import ROOT

NS = "hpacrd"
CRD = ROOT / "charts" / "promhpa" / "crds" / "horizontalpodautoscalers.yaml"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hpa_crd", ROOT / "hack" / "hpa_crd.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def installed(cluster: Cluster) -> Iterator[Cluster]:
    cluster.kubectl("apply", "--server-side", "-f", str(CRD))
    crd = "crd/horizontalpodautoscalers.autoscaling.promhpa.io"
    cluster.kubectl("wait", "--for=condition=Established", crd, "--timeout=60s")
    cluster.kubectl("create", "namespace", NS, check=False)
    yield cluster
    # later tests' controllers reconcile every object of the kind they can see
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def manifest(api_version: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            **spec,
        },
    }


def create(cluster: Cluster, doc: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / f"{doc['metadata']['name']}.json"
    path.write_text(json.dumps(doc))
    return cluster.kubectl("create", "-f", str(path), "-o", "json", check=False)


def test_the_chart_crd_is_generated_from_the_api_servers_autoscaling_v2_schema(cluster: Cluster) -> None:
    hack = generator()
    openapi = json.loads(cluster.kubectl("get", "--raw", hack.OPENAPI_PATH).stdout)
    assert hack.render(openapi) == CRD.read_text(), (
        "the API server's autoscaling/v2 differs from the chart's CRD: run "
        "python hack/hpa_crd.py --kubeconfig KUBECONFIG --kubectl KUBECTL"
    )


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"minReplicas": 2, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
        {"behavior": {"scaleUp": {"selectPolicy": "Min"}, "scaleDown": {}}},
        {"metrics": [{"type": "External", "external": {"metric": {"name": "q"},
                                                        "target": {"type": "Value", "value": "1500m"}}}]},
    ],
    ids=["bare", "down-window", "partial-rules", "quantity"],
)  # fmt: skip
def test_a_builtin_manifest_becomes_ours_by_its_api_version_and_is_stored_alike(
    installed: Cluster, tmp_path: Path, spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    name = f"alike-{request.node.callspec.id}"
    builtin = create(installed, manifest("autoscaling/v2", name, **spec), tmp_path)
    ours = create(installed, manifest("autoscaling.promhpa.io/v2", name, **spec), tmp_path)
    assert (builtin.returncode, ours.returncode) == (0, 0), builtin.stderr + ours.stderr
    assert json.loads(ours.stdout)["spec"] == json.loads(builtin.stdout)["spec"]


@pytest.mark.parametrize(
    ("knobs", "field"),
    [
        ({"syncPeriod": "500ms"}, "spec.controller.syncPeriod"),
        ({"syncPeriod": "soon"}, "spec.controller.syncPeriod"),
        ({"tolerance": -0.1}, "spec.controller.tolerance"),
        ({"release": "1.31"}, "spec.controller.release"),
        ({"paused": "yes"}, "spec.controller.paused"),
        ({"fallback": {"policy": "Static"}}, "spec.controller.fallback.replicas"),
        ({"fallback": {"policy": "HoldHigher", "replicas": 2}}, "spec.controller.fallback.replicas"),
        ({"fallback": {"replicas": 0}}, "spec.controller.fallback.replicas"),
    ],
)
def test_a_bad_knob_is_refused_naming_its_field(
    installed: Cluster, tmp_path: Path, knobs: dict[str, Any], field: str
) -> None:
    out = create(installed, manifest("autoscaling.promhpa.io/v2", "bad", controller=knobs), tmp_path)
    assert out.returncode != 0
    assert field in out.stderr, out.stderr


def test_the_kind_is_phpa_with_a_status_subresource() -> None:
    crd = yaml.safe_load(CRD.read_text())
    names = crd["spec"]["names"]
    assert (crd["spec"]["group"], names["kind"], names["shortNames"]) == (
        "autoscaling.promhpa.io",
        "HorizontalPodAutoscaler",
        ["phpa"],
    )
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
