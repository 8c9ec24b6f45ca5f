"""The live-test layer: what a test on the real control plane starts, reads and waits for.

A module asks the ``live`` fixture for its components (``live.adapter(rules)``,
``live.controller(*flags)``) and gets them stopped at the module's end, newest first, by one
owner; its fixtures then say what they set up, not how to take it down. The reads every such
test makes (a target's replicas, an HPA's conditions, a raw GET) live here once, so that two
tests asking the same question ask it the same way.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster import Cluster
from localcluster.prometheus import Exporter
from localcluster.prometheus import PrometheusProcess
from localcluster.promhpa import AdapterProcess
from localcluster.promhpa import adapter_token as adapter_token
from localcluster.promhpa import grant_forwarding as grant_forwarding
from localcluster.promhpa import register_and_start_adapter
from localcluster.promhpa import start_adapter
from localcluster.promhpa import start_controller_process
from localcluster.promhpa import stop_adapter
from localcluster.promhpa import stop_process
from localcluster.tools import wait_until


@dataclass(frozen=True)
class Controller:
    """A running ``python -m controller run`` and the file its output goes to."""

    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@contextlib.contextmanager
def running_controller(
    kubeconfig: Path,
    log: Path,
    *flags: str,
    prefix: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[Controller]:
    """A controller for one test (console logs, unless ``flags`` choose), stopped after it;
    its log's tail is printed when the test fails, which is when someone reads it."""
    if not any(f.startswith("--log-format") for f in flags):
        flags = (*flags, "--log-format=console")
    c = Controller(start_controller_process(kubeconfig, log, *flags, prefix=prefix, env=env), log)
    try:
        yield c
    except BaseException:
        print(f"--- {log.name} ---\n{c.tail()}")
        raise
    finally:
        stop_process(c.proc)


@contextlib.contextmanager
def running_adapter(
    cluster: Cluster, prometheus: PrometheusProcess, folder: Path, rules: str, *flags: str
) -> Iterator[AdapterProcess]:
    """A registered adapter for a shorter life than the module's (one parameter of a fixture)."""
    a = register_and_start_adapter(cluster, prometheus, folder, rules, *flags)
    try:
        yield a
    finally:
        stop_adapter(a)


class Live:
    """One test module's real components on top of the session's cluster and the module's
    exporter and Prometheus; everything started through it stops when the module ends."""

    def __init__(
        self,
        cluster: Cluster,
        exporter: Exporter,
        prometheus: PrometheusProcess,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> None:
        self.cluster = cluster
        self.exporter = exporter
        self.prometheus = prometheus
        self._tmp = tmp_path_factory
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Live:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def folder(self, name: str) -> Path:
        return self._tmp.mktemp(name)

    def publish(self, samples: Mapping[str, float], scraped: str, count: int = 1) -> None:
        """Sets the exporter's samples, then waits until Prometheus holds ``count`` series of
        the metric ``scraped``: an adapter started earlier would find nothing to discover."""
        for series, value in samples.items():
            self.exporter.set(series, value)
        wait_until(
            lambda: len(self.prometheus.query(scraped)) >= count, what=f"{count} series of {scraped} scraped"
        )

    def adapter(
        self, rules: str, *flags: str, cluster: Cluster | None = None, folder: Path | None = None
    ) -> AdapterProcess:
        """The adapter registered behind the aggregator as the chart registers it."""
        a = register_and_start_adapter(
            cluster or self.cluster, self.prometheus, folder or self.folder("adapter"), rules, *flags
        )
        self._stack.callback(stop_adapter, a)
        return a

    def local_adapter(self, rules: str, *flags: str, prometheus_url: str | None = None) -> AdapterProcess:
        """An adapter on loopback only, reading the cluster as its admin: for tests that ask it
        directly and need no aggregator in between (``prometheus_url`` may be a proxy)."""
        a = start_adapter(self.folder("adapter"), prometheus_url or self.prometheus.url, rules,
                          f"--kubeconfig={self.cluster.kubeconfig}", *flags)  # fmt: skip
        self._stack.callback(stop_adapter, a)
        return a

    def controller(
        self, *flags: str, name: str = "controller", env: Mapping[str, str] | None = None
    ) -> Controller:
        log = self.folder(name) / f"{name}.log"
        return self._stack.enter_context(running_controller(self.cluster.kubeconfig, log, *flags, env=env))

    def on_exit(self, stop: Callable[[], object]) -> None:
        """Anything else the module started, stopped in turn with the rest."""
        self._stack.callback(stop)


@pytest.fixture(scope="module")
def live(
    cluster: Cluster,
    exporter: Exporter,
    prometheus: PrometheusProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Live]:
    with Live(cluster, exporter, prometheus, tmp_path_factory) as layer:
        yield layer


def get_json(cluster: Cluster, path: str) -> Any:
    return json.loads(cluster.kubectl("get", "--raw", path).stdout)


def try_get(cluster: Cluster, path: str, kubeconfig: Path | None = None) -> tuple[int, Any]:
    """A raw GET that may be refused: kubectl's exit code (0 on success) and the JSON body,
    or kubectl's message when there is none."""
    out = cluster.kubectl("get", "--raw", path, check=False, kubeconfig=kubeconfig)
    return (0, json.loads(out.stdout)) if out.returncode == 0 else (out.returncode, out.stderr)


def scale_replicas(cluster: Cluster, namespace: str, name: str, resource: str = "deployments") -> int:
    """The target's replicas as the controller reads them: its scale subresource."""
    return int(
        get_json(cluster, f"/apis/apps/v1/namespaces/{namespace}/{resource}/{name}/scale")["spec"]["replicas"]
    )


def hpa(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(
        get_json(cluster, f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}")
    )


def hpa_conditions(cluster: Cluster, namespace: str, name: str) -> dict[str, tuple[str, str]]:
    """An HPA's conditions by type: (status, reason)."""
    status = hpa(cluster, namespace, name).get("status", {})
    return {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}
