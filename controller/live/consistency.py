"""Read-your-writes: an HPA is not decided until the cache shows our last status write.

Kubernetes 1.37 (``StaleControllerConsistencyHPA``, beta and on) stopped kube-controller-
manager from deciding an HPA on a cache older than its own last status write: a reconcile
that read the HPA from a watch that had not yet delivered that write would decide on stale
status (conditions, ``lastScaleTime``, ``observedGeneration``) and could write it back. The
rule, as upstream's consistency store keeps it: after a status write, remember the
resourceVersion the API server returned; before a reconcile, compare it with the newest
resourceVersion the HPA informer has processed; if the informer is behind (or has processed
nothing yet), skip this sync and try again after the sync period. A resourceVersion that is
not a number is not compared (upstream continues rather than block). A deleted HPA, or one
the informer caught up with, is forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUP, RESOURCE = "autoscaling", "horizontalpodautoscalers"
Key = tuple[str, str]


class StaleReadError(Exception):
    """The HPA informer has not yet delivered this controller's last status write."""

    def __init__(self, key: Key, wrote: str, read: str) -> None:
        self.key, self.wrote, self.read = key, wrote, read
        seen = f"read version: {read} is not as new as" if read else "read version is not synced"
        super().__init__(
            f"{seen} written version: {wrote} for group resource {RESOURCE}.{GROUP}"
            f" (HPA {key[0]}/{key[1]}; retried after the sync period)"
        )


@dataclass
class _Written:
    uid: str
    resource_version: str


class ReadYourWrites:
    """The last status write per HPA, until the informer has shown it."""

    def __init__(self) -> None:
        self._written: dict[Key, _Written] = {}

    def wrote_at(self, key: Key, uid: str, resource_version: str) -> None:
        """A status write the API server accepted; a newer one than remembered replaces it."""
        if _number(resource_version) is None:
            return
        old = self._written.get(key)
        if old is None or old.uid != uid or _newer(resource_version, old.resource_version):
            self._written[key] = _Written(uid, resource_version)

    def clear(self, key: Key, uid: str = "") -> None:
        """Forget an HPA (any of its incarnations when ``uid`` is empty)."""
        old = self._written.get(key)
        if old is not None and (not uid or old.uid == uid):
            del self._written[key]

    def ensure_ready(self, key: Key, read_resource_version: str) -> None:
        """Raise ``StaleReadError`` while the informer (at ``read_resource_version``) is behind
        our last write to this HPA; once it is not, forget the write."""
        written = self._written.get(key)
        if written is None:
            return
        if not read_resource_version:
            raise StaleReadError(key, written.resource_version, "")
        read = _number(read_resource_version)
        if read is not None and _newer(written.resource_version, read_resource_version):
            raise StaleReadError(key, written.resource_version, read_resource_version)
        del self._written[key]

    def __len__(self) -> int:
        return len(self._written)


def _number(rv: str) -> int | None:
    return int(rv) if rv.isdigit() else None


def _newer(a: str, b: str) -> bool:
    """Whether resourceVersion ``a`` is newer than ``b`` (both numbers, as etcd's are)."""
    na, nb = _number(a), _number(b)
    return na is not None and nb is not None and na > nb
