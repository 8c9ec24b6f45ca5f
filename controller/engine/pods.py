"""Which pods count, and what they request.

Grouping decides how each pod selected by the target's scale enters the arithmetic:
ignored (being deleted, or Failed; from 1.38 Succeeded too), unready (Pending; and for
CPU, pods still warming up), missing (no metric) or ready. The CPU rules exist because a
starting JVM or a cache warm-up burns CPU that says nothing about steady-state load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shared.quantity import Quantity

from .model import Container, Pod

ZERO_TIME = datetime.min.replace(tzinfo=None)


@dataclass(frozen=True)
class PodSample:
    """One pod's metric, in milli-units, with when and over what window it was measured."""

    value: int
    timestamp: datetime | None = None
    window: timedelta = timedelta(0)


@dataclass
class PodGroups:
    ready_count: int = 0
    ready: list[str] = field(default_factory=list)
    unready: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)


def _before(a: datetime | None, b: datetime | None) -> bool:
    """Go's a.Before(b), where an unset time is the zero time (earlier than everything)."""
    if a is None:
        return b is not None
    if b is None:
        return False
    return a < b


def group_pods(
    pods: list[Pod],
    metrics: Mapping[str, PodSample],
    resource: str,
    cpu_initialization_period: timedelta,
    initial_readiness_delay: timedelta,
    now: datetime,
    ignore_succeeded: bool = True,
) -> PodGroups:
    """``ignore_succeeded`` (1.38): a Succeeded pod is terminal like a Failed one."""
    g = PodGroups()
    for pod in pods:
        if pod.deleted or pod.phase == "Failed" or (ignore_succeeded and pod.phase == "Succeeded"):
            g.ignored.add(pod.name)
            continue
        if pod.phase == "Pending":
            g.unready.add(pod.name)
            continue
        sample = metrics.get(pod.name)
        if sample is None:
            g.missing.add(pod.name)
            continue
        if resource == "cpu":
            cond = pod.ready_condition
            if cond is None or pod.start_time is None:
                unready = True
            else:
                status, transition = cond
                if pod.start_time + cpu_initialization_period > now:
                    # Still initialising: drop the sample if unready, or if it was (partly)
                    # measured before the pod last became ready.
                    ready_since = transition + sample.window if transition is not None else None
                    unready = status == "False" or _before(sample.timestamp, ready_since)
                else:
                    # Past initialisation: drop only pods that have never been ready.
                    never_ready = transition is None or pod.start_time + initial_readiness_delay > transition
                    unready = status == "False" and never_ready
            if unready:
                g.unready.add(pod.name)
                continue
        g.ready_count += 1
        g.ready.append(pod.name)
    return g


class RequestError(ValueError):
    """A pod lacks the request a utilization target is relative to."""


def _sum_requests(containers: tuple[Container, ...], resource: str) -> int | None:
    total = 0
    found = False
    for c in containers:
        q = c.requests.get(resource)
        if q is not None:
            total += q.milli_value()
            found = True
    return total if found else None


def _aggregate_container_requests(pod: Pod, resource: str) -> int | None:
    """resourcehelpers.AggregateContainerRequests for one resource (in milli-units).

    Regular containers and sidecars run together; each classic init container runs alone
    (beside the sidecars started before it), so the pod needs the larger of the two.
    """
    running = _sum_requests(pod.containers + pod.sidecars, resource)
    peak = running
    for init in pod.init_containers:
        q = init.requests.get(resource)
        if q is not None:
            peak = max(peak or 0, q.milli_value())
    return peak


def pod_level_requests_set(pod: Pod) -> bool:
    return bool(pod.pod_requests) and any(k in ("cpu", "memory") for k in pod.pod_requests or {})


@dataclass(frozen=True)
class RequestRules:
    """What a release reads as a pod's request: pod-level requests (1.34 and later, with the
    PodLevelResources gate), whether a ContainerResource container a pod lacks is an
    error (1.35 and later) or a request of 0, whether pod-level requests leave out the
    pod's overhead (1.38), and whether sidecars are read before the containers (1.38)."""

    pod_level: bool = True
    missing_container_is_error: bool = True
    exclude_overhead: bool = True
    sidecars_first: bool = True


def pod_request(pod: Pod, container: str, resource: str, rules: RequestRules | None = None) -> int:
    """The request (milli-units) a utilization is measured against, as upstream computes it."""
    rules = rules or RequestRules()
    if rules.pod_level and container == "" and pod_level_requests_set(pod):
        requests: dict[str, int] = {}
        agg = _aggregate_container_requests(pod, resource)
        if agg is not None:
            requests[resource] = agg
        pod_q: Mapping[str, Quantity] = pod.pod_requests or {}
        if resource in pod_q and resource in ("cpu", "memory"):
            requests[resource] = pod_q[resource].milli_value()
        if not rules.exclude_overhead and resource in requests and pod.overhead and resource in pod.overhead:
            requests[resource] += pod.overhead[resource].milli_value()
        if resource not in requests:
            raise RequestError(f"missing pod-level request for {resource} in Pod {pod.name}")
        return requests[resource]
    total = 0
    for c in pod.sidecars + pod.containers if rules.sidecars_first else pod.containers + pod.sidecars:
        if container in ("", c.name):
            q = c.requests.get(resource)
            if q is None:
                raise RequestError(f"missing request for {resource} in container {c.name} of Pod {pod.name}")
            total += q.milli_value()
        if container == c.name:
            return total
    if container and rules.missing_container_is_error:
        raise RequestError(f"container {container} not found in Pod {pod.name}")
    return total


def calculate_requests(
    pods: list[Pod], container: str, resource: str, rules: RequestRules | None = None
) -> dict[str, int]:
    return {pod.name: pod_request(pod, container, resource, rules) for pod in pods}


def ready_pod_count(pods: list[Pod]) -> int:
    """Pods that are Running and Ready: the multiplier for Object/External Value targets."""
    return sum(1 for p in pods if p.phase == "Running" and p.ready)
