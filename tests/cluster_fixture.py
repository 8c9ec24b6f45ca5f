"""The real control plane for tests that need Kubernetes, started once per session.

A cluster that is not built or cannot start fails the tests that need it, with the reason
(``tests.support.missing``: skipped only for someone who set ``PROMHPA_ALLOW_SKIPS=1``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import localcluster
from tests.support import missing


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[localcluster.Cluster]:
    if not localcluster.tools_cached():
        missing(
            "the local control plane is not built: run `make cluster-tools` once (a cold build takes "
            "about 12 minutes) to enable the cluster tests"
        )
    c = localcluster.Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.up()
    except localcluster.ClusterError as e:
        missing(f"the local control plane did not start: {e}")
    try:
        yield c
    finally:
        c.down()
