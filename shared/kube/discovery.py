"""Kinds to resources through API discovery (client-go's RESTMapper, for what we need).

* ``mapping``: scaleTargetRef -> the resource whose ``scale`` subresource to use, by group
  and kind as kube-controller-manager maps it (Deployments, StatefulSets, ReplicaSets,
  custom resources; a kind without a scale subresource fails at the scale GET, as there).
* ``resource_for``: any kind -> its plural (an Object metric's described object), the
  well-known table first.
* ``preferred_version``: which version of an API group the server prefers (the custom
  metrics API is v1beta2 or only v1beta1, depending on who serves it).

Answers are cached and refreshed when a kind or group is not found, so a CRD installed or
an APIService registered after start is picked up on first use.
"""

from __future__ import annotations

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
        self._cache: dict[tuple[str, str], Mapping] = {}  # (group, kind) -> mapping
        self._versions: dict[str, str] = {}

    async def _discover(self, group: str) -> None:
        """Every kind the group serves, each at the first version serving it, the
        preferred version first: the version a scale GET goes to (client-go's scale client
        asks its RESTMapper for the group-resource's preferred version)."""
        if group:
            try:
                listing = await self.kube.get(f"/apis/{group}")
            except NotFound:
                return
            preferred = (listing.get("preferredVersion") or {}).get("version")
            versions = [str(v["version"]) for v in listing.get("versions", [])]
            versions.sort(key=lambda v: v != preferred)
        else:
            versions = [str(v) for v in (await self.kube.get("/api")).get("versions", ["v1"])]
        found: dict[tuple[str, str], Mapping] = {}
        for version in versions:
            try:
                resources = (await self.kube.get(GroupVersion(group, version).path)).get("resources", [])
            except KubeError:  # an aggregated version whose server is down: as discovery skips it
                continue
            for r in resources:
                if "/" not in r["name"]:
                    found.setdefault((group, r["kind"]), Mapping(group, version, r["name"], r["namespaced"]))
        self._cache.update(found)

    def cached_mapping(self, api_version: str, kind: str) -> Mapping | None:
        """The resource already discovered, without I/O (None: ask ``mapping``)."""
        try:
            gv = GroupVersion.parse(api_version)
        except GroupVersionError:
            return None
        return self._cache.get((gv.group, kind))

    async def mapping(self, api_version: str, kind: str) -> Mapping:
        """The resource of a scaleTargetRef's kind, as kube-controller-manager maps it:
        by group and kind in any served version (the reference's version is not used), and
        whether it has a scale subresource is the scale GET's answer, not discovery's.
        NotFound with client-go's NoKindMatchError text when the group serves no such kind."""
        gv = _group_version(api_version)
        key = (gv.group, kind)
        if key not in self._cache:
            await self._discover(gv.group)  # again on every miss: a CRD installed since is found
        found = self._cache.get(key)
        if found is None:
            raise NotFound(404, f'no matches for kind "{kind}" in group "{gv.group}"')
        return found

    async def resource_for(self, api_version: str, kind: str) -> str:
        """Plural resource for any kind (described objects of Object metrics need no scale)."""
        known = self.cached_resource(api_version, kind)
        if known is not None:
            return known
        gv = _group_version(api_version)
        try:
            for r in (await self.kube.get(gv.path)).get("resources", []):
                if r["kind"] == kind and "/" not in r["name"]:
                    return str(r["name"])
        except KubeError:
            pass
        return kind.lower() + "s"

    def cached_version(self, group: str) -> str | None:
        """The preferred version already learned, without I/O (None: ask ``preferred_version``)."""
        return self._versions.get(group)

    def cached_resource(self, api_version: str, kind: str) -> str | None:
        """The plural of a well-known kind, without I/O (None: ask ``resource_for``)."""
        try:
            gv = GroupVersion.parse(api_version)
        except GroupVersionError:
            return None
        known = by_kind(gv.group, kind)
        return known.plural if known is not None else None

    async def preferred_version(self, group: str, refresh: bool = False) -> str:
        """The version of ``group`` the API server prefers; NotFound if it serves none."""
        cached = self._versions.get(group)
        if cached is not None and not refresh:
            return cached
        version = str((await self.kube.get(f"/apis/{group}"))["preferredVersion"]["version"])
        self._versions[group] = version
        return version


async def served_resources(kube: Kube) -> tuple[dict[str, set[str]], list[str]]:
    """Every resource the API server serves, as group -> plural names (core is ""), and
    the group-versions that did not answer (an aggregated API whose server is down).

    check-config asks this once to prove a rule file's resource names against a real
    cluster, custom resources included; a resource in any served version counts.
    """
    served: dict[str, set[str]] = {}
    failed: list[str] = []
    versions = [("", v) for v in (await kube.get("/api")).get("versions", ["v1"])]
    for g in (await kube.get("/apis")).get("groups", []):
        versions += [(g["name"], v["version"]) for v in g.get("versions", [])]
    for group, version in versions:
        gv = GroupVersion(group, version)
        try:
            listing = await kube.get(gv.path)
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
