"""Synchronous reads and a port-forward for command-line tools (``why``): the API server's
``pods/portforward`` over the WebSocket the kubernetes client opens, so a pod's port is
reached from wherever the kubeconfig reaches the API server -- outside the cluster too."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .client import load
from .errors import KubeError


def read(kubeconfig: str | None, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A Lease (``kind`` "lease") or Pod ("pod") as a plain document."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    api = load(kubeconfig)
    call: Any = {
        "lease": k8s.CoordinationV1Api(api).read_namespaced_lease,
        "pod": k8s.CoreV1Api(api).read_namespaced_pod,
    }[kind]
    from urllib3.exceptions import HTTPError as TransportError

    try:
        return dict(json.loads(call(name, namespace, _preload_content=False, _request_timeout=15).data))
    except ApiException as e:
        raise KubeError(e.status or 0, str(e.reason), request=f"GET {kind} {namespace}/{name}") from None
    except (OSError, TransportError) as e:  # refused, unreachable, timed out
        reason = getattr(e, "reason", None) or e
        raise KubeError(0, str(reason), request=f"GET {kind} {namespace}/{name}") from None


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
