"""A real Thanos setup on 127.0.0.1: two Prometheus replicas scraping the same targets,
each with a Thanos sidecar, and a Thanos Querier over both that deduplicates on the
``replica`` label -- the smallest shape of the "highly available Prometheus behind Thanos"
that clusters run. Tests start it with ``ThanosStack``; ``make cluster THANOS=1`` starts
the same processes (``plan``) beside the control plane (``FederatedThanos``, a cluster
addon), its replicas federating everything from the cluster's Prometheus.

Each replica carries ``external_labels: {cluster: local, replica: rN}``; without
deduplication the Querier returns every series twice (once per replica), so a sum over it
doubles -- which is what the tests check the adapter never serves.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .host import ClusterHost
from .supervisor import Component
from .tools import Binaries, cache_bin, free_port, log, terminate, wait_http, wait_until

REPLICA_LABEL = "replica"
REPLICAS = 2


def thanos_path() -> Path:
    """Where hack/build-tools.sh puts Thanos (it may not be built yet)."""
    return Path(Binaries(cache_bin()).thanos)


def scrape_target(port: int) -> str:
    """scrape_configs for replicas that scrape one target (a test's exporter)."""
    return f"- job_name: test\n  honor_labels: true\n  static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"


def federate(prometheus_port: int) -> str:
    """scrape_configs for replicas that copy every series of another Prometheus."""
    return (
        "- job_name: federate\n  honor_labels: true\n  metrics_path: /federate\n"
        "  params: {'match[]': ['{__name__=~\".+\"}']}\n"
        f"  static_configs: [{{targets: ['127.0.0.1:{prometheus_port}']}}]\n"
    )


def plan(
    thanos: str, prometheus: str, directory: Path, scrape_configs: str, ports: dict[str, int]
) -> list[Component]:
    """The processes, in start order; writes the replicas' configuration files. ``ports``
    gets a free port for each name it lacks (callers persist it)."""
    for i in range(REPLICAS):
        for kind in ("prometheus", "sidecar-grpc", "sidecar-http"):
            ports.setdefault(f"thanos-{kind}-{i}", free_port())
    for kind in ("query-http", "query-grpc"):
        ports.setdefault(f"thanos-{kind}", free_port())
    out: list[Component] = []
    for i in range(REPLICAS):
        d = directory / f"thanos-prometheus-{i}"
        d.mkdir(parents=True, exist_ok=True)
        labels = json.dumps({"cluster": "local", REPLICA_LABEL: f"r{i}"})
        (d / "prometheus.yml").write_text(
            f"global: {{scrape_interval: 1s, evaluation_interval: 1s, external_labels: {labels}}}\n"
            "scrape_configs:\n" + scrape_configs
        )
        prom = f"http://127.0.0.1:{ports[f'thanos-prometheus-{i}']}"
        out.append(
            Component(
                f"thanos-prometheus-{i}",
                [
                    prometheus,
                    f"--config.file={d / 'prometheus.yml'}",
                    f"--storage.tsdb.path={d / 'data'}",
                    f"--web.listen-address=127.0.0.1:{ports[f'thanos-prometheus-{i}']}",
                    # the sidecar requires equal block durations (it would upload blocks)
                    "--storage.tsdb.min-block-duration=2h",
                    "--storage.tsdb.max-block-duration=2h",
                ],
                f"{prom}/-/ready",
            )
        )
        out.append(
            Component(
                f"thanos-sidecar-{i}",
                [
                    thanos,
                    "sidecar",
                    f"--prometheus.url={prom}",
                    f"--tsdb.path={d / 'data'}",
                    f"--grpc-address=127.0.0.1:{ports[f'thanos-sidecar-grpc-{i}']}",
                    f"--http-address=127.0.0.1:{ports[f'thanos-sidecar-http-{i}']}",
                    "--log.level=warn",
                ],
                f"http://127.0.0.1:{ports[f'thanos-sidecar-http-{i}']}/-/ready",
            )
        )
    endpoints = {
        "endpoints": [{"address": f"127.0.0.1:{ports[f'thanos-sidecar-grpc-{i}']}"} for i in range(REPLICAS)]
    }
    out.append(
        Component(
            "thanos-query",
            [
                thanos,
                "query",
                f"--http-address=127.0.0.1:{ports['thanos-query-http']}",
                f"--grpc-address=127.0.0.1:{ports['thanos-query-grpc']}",
                f"--endpoint.sd-config={json.dumps(endpoints)}",
                f"--query.replica-label={REPLICA_LABEL}",
                "--log.level=warn",
            ],
            f"http://127.0.0.1:{ports['thanos-query-http']}/-/ready",
        )
    )
    return out


def stores(query_url: str) -> list[Any]:
    """The StoreAPI endpoints the Querier currently uses."""
    with urllib.request.urlopen(f"{query_url}/api/v1/stores", timeout=5) as r:
        return [s for group in json.loads(r.read())["data"].values() for s in group or []]


@dataclass
class ThanosStack:
    """The plan's processes owned by a test (stopped by ``stop``)."""

    prometheus_binary: str
    directory: Path
    target_port: int
    thanos: str = field(default_factory=lambda: str(thanos_path()))
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The Querier's Prometheus-compatible HTTP API."""
        return f"http://127.0.0.1:{self.ports['thanos-query-http']}"

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[f'thanos-prometheus-{i}']}"

    def start(self) -> None:
        components = plan(
            self.thanos, self.prometheus_binary, self.directory, scrape_target(self.target_port), self.ports
        )
        try:
            for c in components:
                log = open(self.directory / f"{c.name}.log", "ab")  # noqa: SIM115 - owned by the child
                self.procs[c.name] = subprocess.Popen(c.argv, stdout=log, stderr=subprocess.STDOUT)
                log.close()
                wait_http(c.ready, what=c.name, timeout=60)
            wait_until(
                lambda: len(stores(self.url)) == REPLICAS, timeout=60, what="the Querier sees both sidecars"
            )
        except BaseException:
            self.stop()
            raise

    def query(self, promql: str, **params: str) -> list[Any]:
        """An instant query against the Querier (``dedup="false"`` shows both replicas)."""
        from prometheus_api_client import PrometheusConnect

        prom = PrometheusConnect(self.url, disable_ssl=True, timeout=10)
        return list(prom.custom_query(promql, params=params or None))

    def stop(self) -> None:
        for p in reversed(list(self.procs.values())):
            terminate(p, timeout=20)
        self.procs.clear()


class FederatedThanos:
    """``plan`` beside a cluster (a ``Cluster`` addon): two replicas federating the
    cluster's Prometheus, their sidecars, and a Querier."""

    host: str | None = None
    cert_ips: tuple[str, ...] = ()
    needs_node_tools: bool = False
    taints_fake_nodes: bool = False
    data_dirs: tuple[str, ...] = tuple(f"thanos-prometheus-{i}" for i in range(REPLICAS))

    def prepare(self, c: ClusterHost, ca: object) -> None:
        pass

    def apiserver_flags(self, c: ClusterHost) -> tuple[str, ...]:
        return ()

    def start(self, c: ClusterHost) -> None:
        assert c.bins is not None
        for component in plan(
            c.bins.thanos, c.bins.prometheus, c.dir, federate(c.ports["prometheus"]), c.ports
        ):
            log(f"{component.name} ({component.ready.rsplit('/-/', 1)[0]})")
            c.start_component(component)
        query = f"http://127.0.0.1:{c.ports['thanos-query-http']}"
        c.wait_ready("thanos-query", lambda: len(stores(query)) == REPLICAS)

    def stop(self, c: ClusterHost) -> None:
        pass  # its processes are the cluster's, stopped with the rest

    def env_text(self, c: ClusterHost) -> str:
        if "thanos-query-http" not in c.ports:
            return ""
        return f"# thanos query: http://127.0.0.1:{c.ports['thanos-query-http']} (dedup on replica)\n"
