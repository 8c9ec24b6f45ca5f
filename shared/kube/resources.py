"""What Kubernetes resources are: the well-known table and group/version parsing (pure).

Both processes need to know, without asking the API, that ``pods`` are namespaced core/v1
``Pod`` objects (singular ``pod``) or that ``deployments`` live in ``apps/v1``: the adapter
to map Prometheus labels to resources and fill ``describedObject``, the controller to find
scale subresources. This is the one table; ``discovery.RESTMapper`` asks the API for
anything not in it (custom resources). ``GroupVersion.parse`` is the one reading of an
``apiVersion`` string, with apimachinery's rules (``schema.ParseGroupVersion``).
"""

from __future__ import annotations

from dataclasses import dataclass


class GroupVersionError(ValueError):
    """An apiVersion that is not "version" or "group/version"."""


@dataclass(frozen=True)
class GroupVersion:
    group: str
    version: str

    @classmethod
    def parse(cls, text: str) -> GroupVersion:
        """apimachinery's ParseGroupVersion: "" and "/" are the empty group version,
        "v1" the core group, "apps/v1" a group; more slashes are an error."""
        if text in ("", "/"):
            return cls("", "")
        parts = text.split("/")
        if len(parts) == 1:
            return cls("", parts[0])
        if len(parts) == 2:
            return cls(parts[0], parts[1])
        raise GroupVersionError(f'unexpected GroupVersion string: "{text}"')

    @property
    def path(self) -> str:
        """The API root: /api/v1 for the core group, /apis/{group}/{version} otherwise."""
        return f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"

    def __str__(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool

    @property
    def group_version(self) -> GroupVersion:
        return GroupVersion(self.group, self.version)

    @property
    def api_version(self) -> str:
        return str(self.group_version)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        return resource_path(self.group, self.version, self.plural, namespace, name)


def _r(gv: str, kind: str, plural: str, namespaced: bool = True) -> Resource:
    parsed = GroupVersion.parse(gv)
    return Resource(parsed.group, parsed.version, kind, plural, kind.lower(), namespaced)


WELL_KNOWN: tuple[Resource, ...] = (
    _r("v1", "Pod", "pods"),
    _r("v1", "Namespace", "namespaces", namespaced=False),
    _r("v1", "Node", "nodes", namespaced=False),
    _r("v1", "Service", "services"),
    _r("v1", "Endpoints", "endpoints"),
    _r("v1", "PersistentVolume", "persistentvolumes", namespaced=False),
    _r("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    _r("v1", "ReplicationController", "replicationcontrollers"),
    _r("v1", "ConfigMap", "configmaps"),
    _r("v1", "ServiceAccount", "serviceaccounts"),
    _r("v1", "Event", "events"),
    _r("v1", "Secret", "secrets"),
    _r("v1", "LimitRange", "limitranges"),
    _r("v1", "ResourceQuota", "resourcequotas"),
    _r("v1", "PodTemplate", "podtemplates"),
    _r("v1", "Binding", "bindings"),
    _r("v1", "ComponentStatus", "componentstatuses", namespaced=False),
    _r("apps/v1", "Deployment", "deployments"),
    _r("apps/v1", "StatefulSet", "statefulsets"),
    _r("apps/v1", "DaemonSet", "daemonsets"),
    _r("apps/v1", "ReplicaSet", "replicasets"),
    _r("batch/v1", "Job", "jobs"),
    _r("batch/v1", "CronJob", "cronjobs"),
    _r("networking.k8s.io/v1", "Ingress", "ingresses"),
    _r("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    _r("coordination.k8s.io/v1", "Lease", "leases"),
)
_BY_PLURAL = {r.plural: r for r in WELL_KNOWN}
_BY_SINGULAR = {r.singular: r for r in WELL_KNOWN}
_BY_KIND = {(r.group, r.kind): r for r in WELL_KNOWN}

POD, NAMESPACE, NODE = _BY_PLURAL["pods"], _BY_PLURAL["namespaces"], _BY_PLURAL["nodes"]
HPA, LEASE = _BY_PLURAL["horizontalpodautoscalers"], _BY_PLURAL["leases"]
# promhpa's own HPA kind (its CRD is the chart's): outside the table, whose plural names the
# built-in one
OWN_HPA = _r("autoscaling.promhpa.io/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers")


def by_plural(plural: str, group: str | None = None) -> Resource | None:
    """A well-known resource by plural name (and group, when given)."""
    r = _BY_PLURAL.get(plural)
    return r if r is not None and (group is None or r.group == group) else None


def by_singular(singular: str) -> Resource | None:
    return _BY_SINGULAR.get(singular)


def by_kind(group: str, kind: str) -> Resource | None:
    return _BY_KIND.get((group, kind))


def resource_path(
    group: str, version: str, plural: str, namespace: str | None = None, name: str | None = None
) -> str:
    base = GroupVersion(group, version).path
    path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return f"{path}/{name}" if name else path
