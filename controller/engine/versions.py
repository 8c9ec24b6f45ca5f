"""The Kubernetes releases promhpa decides as (1.33 to 1.38), and every rule that differs.

A cluster's own kube-controller-manager decides by its release's code: switching to
promhpa, or running it in shadow beside the incumbent, must not change behaviour without
an upgrade. Each difference below was read from ``pkg/controller/podautoscaler`` of the
newest patch of each minor (v1.33.13, v1.34.4, v1.35.4, v1.36.3, v1.37.2, and 1.38's first
published build, v1.38.0-beta.0) and is held
equal to that code by the differential test; the gates' defaults per minor live in
``gates``.

| from | what changes |
|---|---|
| 1.34 | a memory usage in ``currentMetrics`` is written BinarySI (``Mi``), as metrics-server does |
| 1.34 | pod-level requests (PodLevelResources gate) are a utilization's denominator |
| 1.34 | an External AverageValue sum that overflows is capped, and its replicas at MaxInt32 |
| 1.34 | a conflicting scale write is retried (five attempts, each after a fresh GET) |
| 1.35 | an Object/External Value proposal is capped at MaxInt32; an External Value sum too |
| 1.35 | a ContainerResource container missing from a pod is an error (before: request 0) |
| 1.36 | the ScaledToZero condition: a target the HPA scaled to zero scales up from zero |
| 1.37 | AmbiguousSelector names at most two HPAs ("e.g."); the Object metric error's wording |
| 1.37 | ``status.observedGeneration`` (HPAGeneration gate); a condition's ``observedGeneration`` |
| 1.37 | an added HPA, or one whose spec changed, is reconciled at once (before: after a sync period) |
| 1.37 | an HPA is not decided until its last status write has been observed (read-your-writes) |
| 1.38 | replica counts saturate at the int32 bounds (ceilToInt32) instead of Go's conversion |
| 1.38 | utilization and usage sums are exact; the utilization percentage is clamped to int32 |
| 1.38 | pods in phase Succeeded are ignored like Failed ones (terminal pods) |
| 1.38 | pod-level requests exclude the pod's overhead |
| 1.38 | restartable init containers are read before the containers (which one a missing request names) |
| 1.38 | Object/External AverageValue from zero replicas: no division by zero |
| 1.38 | an Object AverageValue metric is described "KIND metric NAME" (before: "external metric ...") |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUPPORTED_MINORS = (33, 34, 35, 36, 37, 38)
OLDEST, NEWEST = SUPPORTED_MINORS[0], SUPPORTED_MINORS[-1]
# A snapshot without ``controller.kubernetesVersion`` decides as the release the snapshot
# format's defaults are documented for (specs/hpa-snapshot.md: v1.37.2's), so a snapshot
# written before 1.38 was supported keeps its answer; every snapshot promhpa writes names
# its release.
SNAPSHOT_DEFAULT = 37
# the patch each minor's rules were read from (and the differential test runs)
REFERENCE_PATCH = {
    33: "v1.33.13",
    34: "v1.34.4",
    35: "v1.35.4",
    36: "v1.36.3",
    37: "v1.37.2",
    38: "v1.38.0-beta.0",
}

# "1.35", "v1.35", "v1.35.4", "v1.35.4-eks-1a2b", "kube=1.35" (kcm's --emulated-version)
_VERSION = re.compile(r"^(?:kube=)?v?1\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


class VersionError(ValueError):
    """A Kubernetes version promhpa cannot read."""


@dataclass(frozen=True, order=True)
class Release:
    """One Kubernetes minor's controller rules; the properties name each difference."""

    minor: int = NEWEST

    def __str__(self) -> str:
        return f"1.{self.minor}"

    @property
    def memory_binary_si(self) -> bool:
        return self.minor >= 34

    @property
    def reads_pod_level_requests(self) -> bool:
        return self.minor >= 34

    @property
    def caps_external_average(self) -> bool:
        return self.minor >= 34

    @property
    def retries_scale_conflict(self) -> bool:
        """The live controller retries a conflicting scale write after a fresh GET."""
        return self.minor >= 34

    @property
    def caps_usage_ratio(self) -> bool:
        """Object/External Value: ratio x ready pods capped at MaxInt32, the External sum at MaxInt64."""
        return self.minor >= 35

    @property
    def missing_container_is_error(self) -> bool:
        return self.minor >= 35

    @property
    def scales_from_zero(self) -> bool:
        """The ScaledToZero condition and the scale-from-zero path it opens."""
        return self.minor >= 36

    @property
    def names_two_claimants(self) -> bool:
        """AmbiguousSelector: "controlled by more than one HPA (e.g. [a b])"."""
        return self.minor >= 37

    @property
    def has_condition_generation(self) -> bool:
        """A condition's observedGeneration field (the API has it from 1.37)."""
        return self.minor >= 37

    @property
    def enqueues_immediately(self) -> bool:
        """The live controller's cadence: an added HPA or a spec change is reconciled at
        once (1.37); before, every add and update waits for the sync period."""
        return self.minor >= 37

    @property
    def reads_own_writes(self) -> bool:
        """The live controller does not decide an HPA whose last status write it has not yet
        observed (StaleControllerConsistencyHPA, beta and on from 1.37)."""
        return self.minor >= 37

    @property
    def saturates_int32(self) -> bool:
        """A replica count past the int32 bounds is the bound (ceilToInt32), in every path, the
        scale-up Percent policy included; before, Go's float-to-int32 conversion decided."""
        return self.minor >= 38

    @property
    def exact_sums(self) -> bool:
        """Utilization and usage totals are summed exactly (before: int64 that wraps), and the
        utilization percentage is clamped to int32 (before: truncated to its low 32 bits)."""
        return self.minor >= 38

    @property
    def ignores_succeeded_pods(self) -> bool:
        """Pods in phase Succeeded are ignored like Failed ones (terminal pods)."""
        return self.minor >= 38

    @property
    def pod_level_excludes_overhead(self) -> bool:
        return self.minor >= 38

    @property
    def sidecars_first(self) -> bool:
        """Requests are read from restartable init containers before the containers, so a
        missing request can name a sidecar where 1.37 named a container."""
        return self.minor >= 38

    @property
    def per_pod_from_zero(self) -> bool:
        """Object/External AverageValue with zero current replicas: the desired count is
        total/target and the reported average 0, with no division by zero."""
        return self.minor >= 38

    @property
    def object_average_says_kind(self) -> bool:
        """An Object AverageValue metric is described as "KIND metric NAME" (1.37 and before:
        "external metric NAME(SELECTOR)")."""
        return self.minor >= 38

    @property
    def object_error_wording(self) -> str:
        """How an Object metric fetch error reads: "new" (1.37) or 1.33-1.36's jumbled one."""
        return "new" if self.minor >= 37 else "old"


def parse_minor(text: str) -> int:
    """The minor of a Kubernetes version string, in any form a user or /version gives;
    from kcm's list form (``kube=1.35,other=1.2``), the ``kube`` component's."""
    items = [i.strip() for i in text.split(",") if i.strip()]
    kube = [i for i in items if i.startswith("kube=") or "=" not in i]
    m = _VERSION.match(kube[0]) if len(kube) == 1 else None
    if not m:
        raise VersionError(
            f"{text!r} is not a Kubernetes version: use 1.MINOR or vMAJOR.MINOR.PATCH, e.g. 1.35 or v1.35.4"
        )
    return int(m.group(1))


def nearest(minor: int) -> tuple[Release, str | None]:
    """The supported release for a minor, and a warning when it is outside the range."""
    if minor < OLDEST:
        return Release(OLDEST), (
            f"Kubernetes 1.{minor} is older than the oldest release promhpa decides as (1.{OLDEST}); "
            f"deciding as 1.{OLDEST}"
        )
    if minor > NEWEST:
        return Release(NEWEST), (
            f"Kubernetes 1.{minor} is newer than the newest release promhpa decides as (1.{NEWEST}); "
            f"deciding as 1.{NEWEST}"
        )
    return Release(minor), None


def release(text: str) -> tuple[Release, str | None]:
    """``nearest(parse_minor(text))``."""
    return nearest(parse_minor(text))
