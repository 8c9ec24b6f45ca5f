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
    "prefixed_rules",
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


def prefixed_rules(prefix: str) -> str:
    """The rule file the live tests share, for series named ``<prefix>_*``: every such
    series with namespace and pod labels as a Pods metric, ``<prefix>_service_rps`` per
    Service, ``<prefix>_queue_depth`` as an External metric by queue, and CPU from
    ``<prefix>_container_cpu_cores``. A 1s resource window: within the CPU initialization
    period upstream drops samples whose window began before the pod became Ready, and test
    pods became Ready seconds ago."""
    p = prefix
    return f"""
rules:
- seriesQuery: '{{__name__=~"^{p}_.*",namespace!="",pod!=""}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}
  name: {{matches: "^{p}_(.*)$", as: "${{1}}"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
- seriesQuery: '{{__name__="{p}_service_rps",namespace!="",service!=""}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}, service: {{resource: service}}}}
  name: {{matches: "^{p}_(.*)$", as: "${{1}}"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{{__name__="{p}_queue_depth"}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum({p}_container_cpu_cores{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    nodeQuery: 'sum({p}_node_cpu_cores{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
    resources:
      overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}, node: {{resource: node}}}}
    containerLabel: container
  window: 1s
"""
