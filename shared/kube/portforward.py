"""Synchronous reads and a port-forward for command-line tools (``why``). Reads go through
``Kube`` like every other request; the port-forward is the API server's
``pods/portforward`` over the WebSocket the kubernetes client opens, so a pod's port is
reached from wherever the kubeconfig reaches the API server -- outside the cluster too."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .client import Kube, load
from .errors import KubeError
from .resources import LEASE, POD


def read(kubeconfig: str | None, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A Lease (``kind`` "lease") or Pod ("pod") as a plain document; ``KubeError`` names
    the status, or 0 when the API server did not answer within 15 s."""
    resource = {"lease": LEASE, "pod": POD}[kind]
    return asyncio.run(_get(Kube(load(kubeconfig)), resource.path(namespace, name)))


async def _get(kube: Kube, path: str) -> dict[str, Any]:
    try:
        return dict(await kube.get(path, timeout=15))
    finally:
        await kube.aclose()


@contextmanager
def port_forward(kubeconfig: str | None, namespace: str, pod: str, port: int) -> Iterator[socket.socket]:
    """A connected socket to ``port`` of the pod, through the API server, closed on exit."""
    from kubernetes import client as k8s
    from kubernetes.stream import portforward

    api = load(kubeconfig)
    try:
        forward = portforward(
            k8s.CoreV1Api(api).connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
        )
    except Exception as e:  # the client raises ApiException or a WebSocket error
        raise KubeError(
            getattr(e, "status", 0) or 0, str(e), request=f"port-forward {namespace}/{pod}"
        ) from None
    try:
        yield forward.socket(port)
    finally:
        forward.close()
