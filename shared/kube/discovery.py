"""Kinds to resources through API discovery (client-go's RESTMapper, for what we need).

* ``mapping``: scaleTargetRef -> the resource whose ``scale`` subresource to use. Any kind
  with a scale subresource works (Deployments, StatefulSets, ReplicaSets, custom
  resources).
* ``resource_for``: any kind -> its plural (an Object metric's described object), the
  well-known table first.
* ``preferred_version``: which version of an API group the server prefers (the custom
  metrics API is v1beta2 or only v1beta1, depending on who serves it).

Answers are cached and refreshed when a kind or group is not found, so a CRD installed or
an APIService registered after start is picked up on first use.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .client import Kube
from .errors import KubeError, NotFound
from .resources import GroupVersion, GroupVersionError, by_kind, resource_path


@dataclass(frozen=True)
class Mapping:
    group: str
    version: str
    resource: str
    namespaced: bool

    def scale_path(self, namespace: str, name: str) -> str:
        ns = namespace if self.namespaced else None
        return resource_path(self.group, self.version, self.resource, ns, name) + "/scale"


class RESTMapper:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._cache: dict[tuple[str, str, str], Mapping] = {}
        self._versions: dict[str, str] = {}
        self._lock = threading.Lock()

    def _discover(self, group: str, version: str) -> None:
        listing = self.kube.get_sync(GroupVersion(group, version).path)
        names = {r["name"] for r in listing.get("resources", [])}
        with self._lock:
            for r in listing.get("resources", []):
                if "/" not in r["name"] and f"{r['name']}/scale" in names:
                    self._cache[(group, version, r["kind"])] = Mapping(
                        group, version, r["name"], r["namespaced"]
                    )

    def cached_mapping(self, api_version: str, kind: str) -> Mapping | None:
        """The scalable resource already discovered, without I/O (None: ask ``mapping``)."""
        try:
            gv = GroupVersion.parse(api_version)
        except GroupVersionError:
            return None
        with self._lock:
            return self._cache.get((gv.group, gv.version, kind))

    def mapping(self, api_version: str, kind: str) -> Mapping:
        """The scalable resource for apiVersion+kind; NotFound naming both if there is none."""
        gv = _group_version(api_version)
        key = (gv.group, gv.version, kind)
        if key not in self._cache:
            try:
                self._discover(gv.group, gv.version)
            except NotFound:
                raise NotFound(
                    404, f'no matches for kind "{kind}" in version "{gv}": the API server does not serve {gv}'
                ) from None
        found = self._cache.get(key)
        if found is None:
            raise NotFound(404, f'no matches for kind "{kind}" in version "{gv}" with a scale subresource')
        return found

    def resource_for(self, api_version: str, kind: str) -> str:
        """Plural resource for any kind (described objects of Object metrics need no scale)."""
        known = self.cached_resource(api_version, kind)
        if known is not None:
            return known
        gv = _group_version(api_version)
        try:
            for r in self.kube.get_sync(gv.path).get("resources", []):
                if r["kind"] == kind and "/" not in r["name"]:
                    return str(r["name"])
        except KubeError:
            pass
        return kind.lower() + "s"

    def cached_version(self, group: str) -> str | None:
        """The preferred version already learned, without I/O (None: ask ``preferred_version``)."""
        with self._lock:
            return self._versions.get(group)

    def cached_resource(self, api_version: str, kind: str) -> str | None:
        """The plural of a well-known kind, without I/O (None: ask ``resource_for``)."""
        try:
            gv = GroupVersion.parse(api_version)
        except GroupVersionError:
            return None
        known = by_kind(gv.group, kind)
        return known.plural if known is not None else None

    def preferred_version(self, group: str, refresh: bool = False) -> str:
        """The version of ``group`` the API server prefers; NotFound if it serves none."""
        with self._lock:
            cached = self._versions.get(group)
        if cached is not None and not refresh:
            return cached
        version = str(self.kube.get_sync(f"/apis/{group}")["preferredVersion"]["version"])
        with self._lock:
            self._versions[group] = version
        return version


def served_resources(kube: Kube) -> tuple[dict[str, set[str]], list[str]]:
    """Every resource the API server serves, as group -> plural names (core is ""), and
    the group-versions that did not answer (an aggregated API whose server is down).

    check-config asks this once to prove a rule file's resource names against a real
    cluster, custom resources included; a resource in any served version counts.
    """
    served: dict[str, set[str]] = {}
    failed: list[str] = []
    versions = [("", v) for v in kube.get_sync("/api").get("versions", ["v1"])]
    for g in kube.get_sync("/apis").get("groups", []):
        versions += [(g["name"], v["version"]) for v in g.get("versions", [])]
    for group, version in versions:
        gv = GroupVersion(group, version)
        try:
            listing = kube.get_sync(gv.path)
        except KubeError:
            failed.append(str(gv))
            continue
        names = served.setdefault(group, set())
        names.update(r["name"] for r in listing.get("resources", []) if "/" not in r["name"])
    return served, failed


def _group_version(api_version: str) -> GroupVersion:
    try:
        return GroupVersion.parse(api_version)
    except GroupVersionError as e:
        raise NotFound(404, str(e)) from None
