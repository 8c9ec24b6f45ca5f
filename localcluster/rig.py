"""A control plane, an exporter and a Prometheus scraping it, and what a script starts on
them, taken down newest first: the set-up the demo and the benchmarks share.

    with Rig(Cluster(work / "cluster"), work) as rig:
        rig.publish('queue_depth{namespace="x",queue="q"}', 0)
        adapter = rig.adapter(RULES)
        ...
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from .cluster import Cluster
from .prometheus import Exporter, PrometheusProcess, prometheus_path
from .promhpa import AdapterProcess, register_and_start_adapter, stop_adapter
from .tools import wait_until


class Rig:
    def __init__(self, cluster: Cluster, work: Path) -> None:
        self.cluster, self.work = cluster, work
        self.exporter = Exporter()
        self._prometheus: PrometheusProcess | None = None
        self._stack = contextlib.ExitStack()
        # the control plane goes last: what runs on it is stopped first
        self._stack.callback(cluster.down, quiet=True)
        self._stack.callback(self.exporter.close)

    def __enter__(self) -> Rig:
        try:
            self.cluster.up()
            prometheus = PrometheusProcess(str(prometheus_path()), self.work, self.exporter.port)
            self._stack.callback(prometheus.stop)
            prometheus.start()
            self._prometheus = prometheus
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def prometheus(self) -> PrometheusProcess:
        if self._prometheus is None:
            raise RuntimeError("the rig is not up: use it in a `with` block")
        return self._prometheus

    def publish(self, series: str, value: float, timeout: float = 60) -> None:
        """Exports one sample and waits until Prometheus has scraped its metric: an adapter
        started before that would find nothing to serve."""
        self.exporter.set(series, value)
        metric = series.split("{", 1)[0]
        wait_until(lambda: self.prometheus.query(metric) != [], timeout=timeout, what=f"{metric} scraped")

    def adapter(self, rules: str, *flags: str) -> AdapterProcess:
        """promhpa's adapter registered behind the aggregator, stopped with the rig."""
        a = register_and_start_adapter(self.cluster, self.prometheus, self.work, rules, *flags)
        self._stack.callback(stop_adapter, a)
        return a

    def on_exit(self, stop: Callable[[], object]) -> None:
        """Anything else the script started, stopped in turn with the rest."""
        self._stack.callback(stop)
