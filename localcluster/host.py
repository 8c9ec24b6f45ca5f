"""What a set of components started beside the control plane (an ``addon``) needs of the
cluster that supervises it: its folder, ports and binaries, kubectl, and the process
supervision (start, wait, stop). Named as a protocol so that ``node`` and ``thanos`` depend
on this and not on ``cluster``, which starts them: no import cycle, type-only ones included."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .supervisor import Component
from .tools import Binaries


class ClusterHost(Protocol):
    dir: Path
    ports: dict[str, int]
    pids: dict[str, int]
    bins: Binaries | None
    k8s_version: str

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def pki(self) -> Path: ...

    @property
    def server(self) -> str: ...

    # kubectl against the cluster (``Cluster.kubectl``, ``Cluster.apply``: their keywords)
    @property
    def apply(self) -> Callable[..., None]: ...

    @property
    def kubectl(self) -> Callable[..., subprocess.CompletedProcess[str]]: ...

    def start_process(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None: ...

    def start_component(self, c: Component) -> None: ...

    def wait_ready(self, name: str, check: Callable[[], bool], timeout: float = 90) -> None: ...

    def stop_process(self, name: str, quiet: bool = False) -> None: ...

    def alive(self, name: str) -> bool: ...

    def http_ok(self, url: str) -> bool: ...
