"""Rendering and installing charts/promhpa with the real helm binary the cluster tools build."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from localcluster import Binaries
from localcluster import Cluster
from localcluster import cache_bin
from tests.support import missing

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "promhpa"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))


def helm_binary() -> str:
    path = Binaries(cache_bin()).helm
    if not Path(path).exists():
        missing(f"helm is not built at {path}: run `make cluster-tools`")
    return path


# promhpa publishes no image: every render names one, as a user's must
IMAGE = ("--set=image.repository=promhpa/promhpa",)
RENDERS = ("template", "install", "upgrade", "lint")


def helm(
    *args: str, cluster: Cluster | None = None, check: bool = True, image: bool = True
) -> subprocess.CompletedProcess[str]:
    """The real helm; a render (template, install, upgrade, lint) names the image unless
    ``image=False``."""
    if image and args and args[0] in RENDERS:
        args = (*args, *IMAGE)
    env = {
        **os.environ,
        "HELM_CACHE_HOME": "/tmp/promhpa-helm/cache",
        "HELM_CONFIG_HOME": "/tmp/promhpa-helm/config",
    }
    if cluster is not None:
        env["KUBECONFIG"] = str(cluster.kubeconfig)
    out = subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if check and out.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{out.stderr}")
    return out


def render(*args: str, namespace: str = "promhpa", release: str = "r") -> list[dict[str, Any]]:
    """`helm template` output as a list of objects."""
    out = helm("template", release, str(CHART), "--namespace", namespace, *args)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def of_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind]


def as_list(docs: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


# Stand-ins for the cert-manager and prometheus-operator CRDs (their real definitions are
# not reachable from this machine): same groups, kinds and scope, an open schema. They let
# the kube-apiserver accept or reject the chart's objects of those kinds by apiVersion/kind.
def stand_in_crds() -> list[dict[str, Any]]:
    def crd(group: str, kind: str, plural: str) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {
                    "kind": kind,
                    "plural": plural,
                    "singular": kind.lower(),
                    "listKind": f"{kind}List",
                },
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                                },
                            }
                        },
                    }
                ],
            },
        }

    return [
        crd("cert-manager.io", "Certificate", "certificates"),
        crd("cert-manager.io", "Issuer", "issuers"),
        crd("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
    ]
