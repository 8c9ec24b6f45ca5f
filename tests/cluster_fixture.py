"""The real control plane for tests that need Kubernetes, started once per session.

Under CI=true a cluster that cannot start fails the run with the reason; elsewhere, tests
that need it skip with a message saying how to enable them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import localcluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[localcluster.Cluster]:
    in_ci = os.environ.get("CI") == "true"
    if not in_ci and not localcluster.tools_cached():
        pytest.skip(
            "the local control plane is not built: run `make cluster-tools` once (a cold build takes "
            "25-45 minutes) to enable the cluster tests"
        )
    c = localcluster.Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.up()
    except localcluster.ClusterError as e:
        if in_ci:
            pytest.fail(f"the local control plane did not start: {e}", pytrace=False)
        pytest.skip(f"the local control plane did not start: {e}")
    try:
        yield c
    finally:
        c.down()
