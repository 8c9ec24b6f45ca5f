"""A set of components started beside the control plane (the real node, Thanos): the
cluster calls its hooks at fixed points of bring-up and tear-down and knows nothing else of
it -- not its name, not its processes. A cluster's state file records each addon by its
import path (``module:Class``), so ``Cluster.load`` rebuilds them without a registry."""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from .host import ClusterHost


class Addon(Protocol):
    # the API server's address when not loopback (the real node's: where pods reach it)
    host: str | None
    # extra addresses the API server's serving certificate must carry
    cert_ips: tuple[str, ...]
    # the tool set it runs from (``tools_dir(node=...)``: the node's has the kubelet)
    needs_node_tools: bool
    # kwok's fake nodes are tainted, so real workloads land on this addon's node
    taints_fake_nodes: bool
    # folders under the cluster's directory removed with it (data, not logs)
    data_dirs: tuple[str, ...]

    def prepare(self, c: ClusterHost, ca: Any) -> None:
        """Before etcd starts: certificates from the cluster's CA, host preparation."""

    def apiserver_flags(self, c: ClusterHost) -> tuple[str, ...]: ...

    def start(self, c: ClusterHost) -> None:
        """After the control plane and its Prometheus are ready."""

    def stop(self, c: ClusterHost) -> None:
        """First on tear-down, before the control plane's processes are stopped."""

    def env_text(self, c: ClusterHost) -> str:
        """Lines for ``Cluster.env_text`` (comments), or nothing."""
        ...


def path_of(addon: Addon) -> str:
    cls = type(addon)
    return f"{cls.__module__}:{cls.__qualname__}"


def from_path(path: str) -> Addon:
    """The addon a state file names (a class taking no arguments)."""
    module, _, name = path.partition(":")
    made: Addon = getattr(importlib.import_module(module), name)()
    return made
