"""The real node's tests: a cluster of its own per module, with a kubelet, containerd, runc,
the CNI plugins, kube-proxy and CoreDNS on this machine (``localcluster --real-node``).

They need root (network namespaces, cgroups, mounts, iptables); without it, or without the
node's binaries, they fail with that reason (``tests.support.missing``), never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import localcluster
from localcluster import node_host
from localcluster.node import RealNode
from tests.support import missing


def real_node_cluster(directory: Path) -> localcluster.Cluster:
    """A real-node cluster in ``directory``, up; the caller takes it down."""
    if os.geteuid() != 0:
        missing("the real node needs root (network namespaces, cgroups, mounts, iptables)")
    if not Path("/proc/sys/net/bridge").exists():
        missing("the real node needs the kernel's bridge netfilter (br_netfilter)")
    c = localcluster.Cluster(directory, addons=(RealNode(),))
    try:
        c.up()
    except localcluster.ClusterError as e:
        missing(f"the real node did not start: {e}")
    return c


@pytest.fixture(scope="module")
def host_before() -> node_host.HostState:
    """The host as it was before the module's node: what ``down`` must leave it as."""
    return node_host.snapshot()


@pytest.fixture(scope="module")
def real_cluster(
    host_before: node_host.HostState, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[localcluster.Cluster]:
    c = real_node_cluster(tmp_path_factory.mktemp("real-node"))
    try:
        yield c
    finally:
        c.down()
