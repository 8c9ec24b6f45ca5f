"""The two caches every live read of the controller goes through -- HPAs and pods, each
cut to the fields a decision reads -- made in one place, so the running controller and
``snapshot`` observe an HPA through the very same objects."""

from __future__ import annotations

from shared.kube.client import Kube
from shared.kube.informer import Informer
from shared.kube.resources import HPA, POD, Resource

from .hpa_fields import hpa_essentials
from .pod_fields import pod_essentials


def hpa_informer(
    kube: Kube,
    namespace: str | None = None,
    hpa_selector: str = "",
    watch_idle_timeout: float = 90.0,
    kind: Resource = HPA,
) -> Informer:
    """An unstarted informer of the built-in HPAs, or of promhpa's own kind (``OWN_HPA``),
    those ``hpa_selector`` picks, in ``namespace`` (every namespace for None)."""
    return Informer(
        kube,
        kind.path(namespace),
        hpa_selector,
        transform=hpa_essentials,
        watch_idle_timeout=watch_idle_timeout,
    )


def pod_informer(kube: Kube, namespace: str | None = None, watch_idle_timeout: float = 90.0) -> Informer:
    """An unstarted informer of the pods in ``namespace`` (every namespace for None)."""
    return Informer(
        kube, POD.path(namespace), transform=pod_essentials, watch_idle_timeout=watch_idle_timeout
    )
