"""Test-side access to the real components (``localcluster``): the same helpers, plus the
pytest policy for a Prometheus that is not built yet (skip locally, fail under CI)."""

from __future__ import annotations

import os

import pytest

from localcluster import ROOT, free_port
from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import (
    AdapterProcess,
    cpu_deployment,
    register_and_start_adapter,
    start_adapter,
    start_controller_process,
    stop_adapter,
    stop_process,
)
from localcluster.tools import wait_http, wait_until

__all__ = [
    "ROOT",
    "AdapterProcess",
    "Exporter",
    "PrometheusProcess",
    "cpu_deployment",
    "free_port",
    "prometheus_binary",
    "register_and_start_adapter",
    "start_adapter",
    "start_controller_process",
    "stop_adapter",
    "stop_process",
    "wait_http",
    "wait_until",
]


def prometheus_binary() -> str:
    path = prometheus_path()
    if not path.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Prometheus is not installed: run `make cluster-tools`", pytrace=False)
        pytest.skip("Prometheus is not installed: run `make cluster-tools` to enable the adapter tests")
    return str(path)
