"""Where a reconcile's scale comes from: a watch of the target's resource, or a GET.

Upstream GETs ``<target>/scale`` every sync: at 10,000 HPAs that is 667 requests a second
on the API server, half of what the HPA controller costs it. With ``--scale-reads=watch``
(the default) each resource HPAs target is watched (started on first use, one informer
per resource) and the Scale is worked out from the watched object as the API server
would (``scale_objects``). The GET stays wherever the cache could answer differently from
the server, so every failure upstream can meet still carries the server's own message:

* the target is not in the cache (not found, or not yet seen): GET;
* the cache has not listed yet, or its watch is broken and re-listing: GET;
* we may not list and watch the resource (SelfSubjectAccessReview, cluster-wide), or may
  not ``get`` its ``scale`` -- cluster-wide, else in the target's namespace: GET, whose
  403 is upstream's FailedGetScale message;
* a custom resource whose CRD we cannot read or whose version has no ``scale``
  subresource, or a resource that is neither built in nor a CRD (an aggregated API): GET;
* a value the conversion cannot be sure of (``scale_objects`` answers None): GET;
* right after our own write, until the watch has delivered it (or ``PENDING_SECONDS``):
  GET, so the next reconcile never decides on the replicas from before our write.

Permissions and CRDs are looked at again every ``recheck`` seconds, so a RoleBinding or a
CRD change takes effect without a restart.

What a watch cannot give: a GET reads the newest object; a watch delivers it a few
milliseconds later. A write by someone else in those milliseconds is seen one sync later,
as if the GET had been sent that much earlier.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from shared.kube.client import Kube
from shared.kube.discovery import Mapping
from shared.kube.errors import Forbidden, KubeError, NotFound
from shared.kube.informer import Informer, without_managed_fields
from shared.kube.resources import resource_path

from .scale_objects import BUILTIN, ScalePaths, builtin_essentials, builtin_scale, custom_scale

log = structlog.get_logger("controller")

SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PENDING_SECONDS = 5.0
RETRY_SECONDS = 5.0
MODES = ("watch", "get")
Resource = tuple[str, str, str]  # group, version, resource


@dataclass
class _Source:
    """One watched resource, and whether its cache may answer."""

    resource: Resource
    informer: Informer | None = None
    paths: ScalePaths | None = None  # a custom resource's; None for a built-in one
    why_get: str = "not looked at yet"  # "": the cache may answer
    get_everywhere: bool = False  # may get <resource>/scale in every namespace
    get_in: dict[str, tuple[bool, float]] = field(default_factory=dict)  # namespace -> (allowed, when)
    checked: float = float("-inf")
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class ScaleReads:
    kube: Kube  # the scale client: GETs, as upstream's
    watch_kube: Kube  # the informers', the access reviews' and the CRD reads'
    watch: bool = True  # False: always GET (``--scale-reads=get``)
    recheck: float = 60.0
    watch_idle_timeout: float = 90.0
    monotonic: Callable[[], float] = time.monotonic
    on_read: Callable[[str], None] | None = None  # counts each read by where it came from
    _sources: dict[Resource, _Source] = field(default_factory=dict)
    _pending: dict[str, tuple[str, float]] = field(default_factory=dict)  # scale path -> (rv, until)

    async def read(self, mapping: Mapping, namespace: str, name: str) -> dict[str, Any]:
        """The target's Scale; raises the GET's KubeError when there is no such Scale."""
        path = mapping.scale_path(namespace, name)
        if self.watch:
            scale = await self._from_cache(mapping, namespace, name, path)
            if scale is not None:
                self._count("watch")
                return scale
        self._count("get")
        scale = await self.kube.get(path)
        return scale if isinstance(scale, dict) else {}

    def wrote(self, path: str, answer: Any) -> None:
        """After our PUT of a scale: GET it until the watch shows this version."""
        meta = answer.get("metadata") if isinstance(answer, dict) else None
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if self.watch and rv:
            now = self.monotonic()
            if len(self._pending) > 1000:  # targets written and never read again (HPA deleted)
                self._pending = {p: v for p, v in self._pending.items() if v[1] > now}
            self._pending[path] = (str(rv), now + PENDING_SECONDS)

    def _count(self, source: str) -> None:
        if self.on_read is not None:
            self.on_read(source)

    async def aclose(self) -> None:
        for source in self._sources.values():
            if source.informer is not None:
                await source.informer.aclose()

    async def _from_cache(
        self, mapping: Mapping, namespace: str, name: str, path: str
    ) -> dict[str, Any] | None:
        resource = (mapping.group, mapping.version, mapping.resource)
        source = self._sources.get(resource)
        if source is None:
            source = self._sources[resource] = _Source(resource)
        if self.monotonic() - source.checked >= self.recheck:
            async with source.lock:
                if self.monotonic() - source.checked >= self.recheck:
                    await self._look(source)
        informer = source.informer
        if source.why_get or informer is None or not informer.synced.is_set() or informer.error:
            return None
        if not source.get_everywhere and (
            not mapping.namespaced or not await self._may_get_in(source, namespace)
        ):
            return None
        obj = informer.get(namespace if mapping.namespaced else "", name)
        if obj is None:
            return None
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        pending = self._pending.get(path)
        if pending is not None:
            if rv != pending[0] and self.monotonic() < pending[1]:
                return None
            del self._pending[path]
        if source.paths is not None:
            return custom_scale(source.paths, obj)
        return builtin_scale(BUILTIN[resource], obj)

    async def _look(self, source: _Source) -> None:
        """(Re)decide whether this resource's cache may answer, and start or stop its watch."""
        group, version, resource = source.resource
        why = ""
        try:
            if source.resource not in BUILTIN:
                source.paths, why = await self._crd_scale(group, version, resource)
            if not why and not await self._allowed("list", group, resource):
                why = f"not allowed to list {resource_label(source.resource)}"
            elif not why and not await self._allowed("watch", group, resource):
                why = f"not allowed to watch {resource_label(source.resource)}"
            source.get_everywhere = not why and await self._allowed("get", group, resource, "scale")
            source.get_in.clear()
        except KubeError as e:
            # a failed check (the API server busy, say) is no answer: keep what was decided,
            # and ask again in a few seconds rather than a minute (never-decided stays GET)
            log.warning(
                "scale reads: could not check access",
                resource=resource_label(source.resource),
                error=e.message,
            )
            source.checked = self.monotonic() - self.recheck + RETRY_SECONDS
            return
        source.checked = self.monotonic()
        if why and source.informer is not None:
            source.informer.stop()
            source.informer = None
        if not why and source.informer is None:
            source.informer = self._informer(source)
        if why != source.why_get:
            log.info(
                "scale reads",
                resource=resource_label(source.resource),
                source="GET" if why else "watch",
                reason=why or None,
            )
        source.why_get = why

    def _informer(self, source: _Source) -> Informer:
        group, version, resource = source.resource
        transform = without_managed_fields if source.paths is not None else builtin_essentials
        return Informer(
            self.watch_kube,
            resource_path(group, version, resource, None),
            transform=transform,
            indexers={},  # read by name only
            watch_idle_timeout=self.watch_idle_timeout,
        ).start()

    async def _crd_scale(self, group: str, version: str, resource: str) -> tuple[ScalePaths | None, str]:
        """The CRD's scale paths for this version, or why there are none to use."""
        try:
            crd = await self.watch_kube.get(f"{CRD_PATH}/{resource}.{group}")
        except (Forbidden, NotFound) as e:  # not allowed, or not a CRD (an aggregated API)
            return None, f"cannot read its CustomResourceDefinition: {e.message}"
        for v in (crd.get("spec") or {}).get("versions") or []:
            if v.get("name") == version:
                scale = (v.get("subresources") or {}).get("scale")
                if not isinstance(scale, dict):
                    return None, f"version {version} of its CustomResourceDefinition has no scale subresource"
                return (
                    ScalePaths(
                        str(scale.get("specReplicasPath", "")),
                        str(scale.get("statusReplicasPath", "")),
                        str(scale.get("labelSelectorPath") or ""),
                    ),
                    "",
                )
        return None, f"its CustomResourceDefinition has no version {version}"

    async def _may_get_in(self, source: _Source, namespace: str) -> bool:
        known = source.get_in.get(namespace)
        now = self.monotonic()
        if known is not None and now - known[1] < self.recheck:
            return known[0]
        group, _, resource = source.resource
        try:
            allowed = await self._allowed("get", group, resource, "scale", namespace)
        except KubeError:
            allowed = False  # the GET says what is wrong
        source.get_in[namespace] = (allowed, now)
        return allowed

    async def _allowed(
        self, verb: str, group: str, resource: str, sub: str = "", namespace: str = ""
    ) -> bool:
        attributes = {"verb": verb, "group": group, "resource": resource, "subresource": sub}
        if namespace:
            attributes["namespace"] = namespace
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        answer = await self.watch_kube.post(SSAR_PATH, review)
        return bool(((answer or {}).get("status") or {}).get("allowed"))


def resource_label(resource: Resource) -> str:
    group, version, name = resource
    return f"{name}.{version}.{group}" if group else f"{name}.{version}"
