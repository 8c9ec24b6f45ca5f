"""scaleTargetRef -> the resource whose ``scale`` subresource to use, through API discovery.

Any kind with a scale subresource works (Deployments, StatefulSets, ReplicaSets, custom
resources). Discovery answers are cached and refreshed when a kind is not found, so a CRD
installed after start is picked up on its first HPA.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from shared.kube import Kube, KubeError


@dataclass(frozen=True)
class Mapping:
    group: str
    version: str
    resource: str
    namespaced: bool

    def scale_path(self, namespace: str, name: str) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        ns = f"/namespaces/{namespace}" if self.namespaced else ""
        return f"{base}{ns}/{self.resource}/{name}/scale"


class RESTMapper:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._cache: dict[tuple[str, str, str], Mapping] = {}
        self._lock = threading.Lock()

    def _discover(self, group: str, version: str) -> None:
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        listing = self.kube.get_sync(path)
        names = {r["name"] for r in listing.get("resources", [])}
        with self._lock:
            for r in listing.get("resources", []):
                if "/" not in r["name"] and f"{r['name']}/scale" in names:
                    self._cache[(group, version, r["kind"])] = Mapping(
                        group, version, r["name"], r["namespaced"]
                    )

    def mapping(self, api_version: str, kind: str) -> Mapping:
        """The scalable resource for apiVersion+kind; KubeError if there is none."""
        group, _, version = api_version.rpartition("/")
        key = (group, version, kind)
        if key not in self._cache:
            self._discover(group, version)
        found = self._cache.get(key)
        if found is None:
            raise KubeError(404, f'no matches for kind "{kind}" in group "{group}" with a scale subresource')
        return found

    def resource_for(self, api_version: str, kind: str) -> str:
        """Plural resource for any kind (described objects of Object metrics need no scale)."""
        group, _, version = api_version.rpartition("/")
        path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        try:
            for r in self.kube.get_sync(path).get("resources", []):
                if r["kind"] == kind and "/" not in r["name"]:
                    return str(r["name"])
        except KubeError:
            pass
        return kind.lower() + "s"
