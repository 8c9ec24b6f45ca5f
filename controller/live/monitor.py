"""The live controller's Prometheus metrics: upstream's HPA controller metric names (its
``monitor`` package) beside promhpa's own, and the per-HPA series each reconcile sets.

Kept apart from the reconciler, as upstream keeps ``monitor/`` apart from its controller:
the reconciler says what happened, this module says how it is counted, and which of an
HPA's series go when the HPA goes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from controller.engine import Decision
from controller.engine.limiting import limiting_step, proposals
from shared.kube.informer import Informer

Key = tuple[str, str]
# one explanatory series: its gauge ("proposed", "recommended", "limiting") and its labels
Series = tuple[str, ...]


class ControllerMetrics:
    """Upstream's metric names (subsystem horizontal_pod_autoscaler_controller) plus ours."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        p = "horizontal_pod_autoscaler_controller"
        self.reconciliations = Counter(
            f"{p}_reconciliations_total", "Reconciliations", ["action", "error"], registry=r
        )
        self.reconcile_seconds = Histogram(
            f"{p}_reconciliation_duration_seconds", "Reconciliation duration", ["action", "error"], registry=r
        )
        self.computations = Counter(
            f"{p}_metric_computation_total",
            "Metric computations",
            ["action", "error", "metric_type"],
            registry=r,
        )
        self.computation_seconds = Histogram(
            f"{p}_metric_computation_duration_seconds",
            "Metric computation duration",
            ["action", "error", "metric_type"],
            registry=r,
        )
        # client-go's workqueue metric, as kube-controller-manager exposes it for its HPA
        # queue (its buckets too): from when a key is due to when a worker takes it
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=tuple(10.0**k for k in range(-8, 2)),  # 10 ns .. 10 s, as client-go's
            registry=r,
        )
        self.sync_lag = Histogram(
            "promhpa_controller_sync_lag_seconds",
            "From when an HPA is due to be reconciled to when a worker takes it (finer buckets than "
            "workqueue_queue_duration_seconds)",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120),
            registry=r,
        )
        # upstream's own series, under its names: the count of HPAs, each one's desired
        # replicas (label hpa_name, as upstream's), and syncs skipped for a stale cache
        self.num_hpas = Gauge(
            f"{p}_num_horizontal_pod_autoscalers", "Current number of controlled HPA objects.", registry=r
        )
        self.upstream_desired = Gauge(
            f"{p}_desired_replicas",
            "Current desired replica count for HPA objects.",
            ["namespace", "hpa_name"],
            registry=r,
        )
        self.stale_sync_skips = Counter(
            f"{p}_stale_sync_skips",
            "Total number of HPA syncs skipped due to a stale watch cache.",
            ["group", "resource"],
            registry=r,
        )
        self.second_writer = Gauge(
            "promhpa_controller_second_writer",
            "1 while another controller writes this HPA and promhpa writes nothing to it",
            ["namespace", "name"],
            registry=r,
        )
        self.desired = Gauge(
            "promhpa_controller_desired_replicas",
            "Desired replicas per HPA",
            ["namespace", "name"],
            registry=r,
        )
        self.shadow_differs = Gauge(
            "promhpa_controller_shadow_differs",
            "Dry run: 1 while the HPA owner's decisions differ from ours (paired by time)",
            ["namespace", "name"],
            registry=r,
        )
        self.shadow_differs_since = Gauge(
            "promhpa_controller_shadow_differs_since_timestamp_seconds",
            "Dry run: when the current difference from the owner's decision began (0: none)",
            ["namespace", "name"],
            registry=r,
        )
        self.proposed = Gauge(
            "promhpa_controller_metric_proposed_replicas",
            "The replicas each metric of an HPA proposed at its last reconcile (absent: it failed)",
            ["namespace", "name", "metric_index", "metric"],
            registry=r,
        )
        self.recommended = Gauge(
            "promhpa_controller_recommended_replicas",
            "The largest proposal of an HPA's metrics, before stabilization, policies and min/max",
            ["namespace", "name"],
            registry=r,
        )
        self.limiting = Gauge(
            "promhpa_controller_limiting_step",
            "1 for the step that set an HPA's replicas at its last reconcile: none, tolerance, "
            "stabilization, policy, min, max, metrics-failed, disabled or fallback",
            ["namespace", "name", "step"],
            registry=r,
        )
        self.shadow_comparisons = Counter(
            "promhpa_controller_shadow_comparisons_total",
            "Dry run: owner decisions compared with ours around them",
            ["result"],
            registry=r,
        )

        self.scale_reads = Counter(
            "promhpa_controller_scale_reads_total",
            "Targets' scales read by reconciles: from the watch of the target (watch) or by a GET of "
            "its scale subresource (get)",
            ["source"],
            registry=r,
        )

    def count_scale_read(self, source: str) -> None:
        self.scale_reads.labels(source).inc()

    def observe_queue_wait(self, seconds: float) -> None:
        self.queue_duration.labels("horizontalpodautoscaler").observe(seconds)
        self.sync_lag.observe(seconds)

    def watch_informers(self, informers: dict[str, Informer]) -> None:
        """Each informer's age -- seconds since the API server last answered it -- read when
        scraped: a frozen cache shows as a growing number, not as silence."""
        ages = Gauge(
            "promhpa_controller_informer_last_contact_age_seconds",
            "Seconds since the API server last answered an informer (list, watch or event)",
            ["informer"],
            registry=self.registry,
        )
        for name, informer in informers.items():
            ages.labels(name).set_function(_age_of(informer))
        hpas = informers.get("hpas")
        if hpas is not None:
            self.num_hpas.set_function(lambda: len(hpas.objects))

    def observe_reconcile(self, key: Key, d: Decision, seconds: float, before: set[Series]) -> set[Series]:
        """Count one reconcile and set the HPA's series; returns the explanatory series now
        set, so the next reconcile (or ``forget``) removes those it no longer sets."""
        self.reconciliations.labels(d.action, d.error).inc()
        self.reconcile_seconds.labels(d.action, d.error).observe(seconds)
        self.desired.labels(*key).set(d.desired_replicas)
        self.upstream_desired.labels(*key).set(d.desired_replicas)
        if d.metrics is not None:
            for o in d.metrics.outcomes:
                action = "none"
                if o.ok and d.current_replicas is not None:
                    action = (
                        "scale_up"
                        if o.replicas > d.current_replicas
                        else "scale_down"
                        if o.replicas < d.current_replicas
                        else "none"
                    )
                err = "none" if o.ok else o.error_kind
                self.computations.labels(action, err, o.spec.type).inc()
        return self._explain(key, d, before)

    def _explain(self, key: Key, d: Decision, before: set[Series]) -> set[Series]:
        """Each metric's proposal, the largest of them and the limiting step, as series; the
        ones this reconcile did not set (a metric that failed, the step before) go."""
        seen: set[Series] = set()
        for p in proposals(d):
            if p.replicas is not None:
                labels = ("proposed", *key, str(p.index), p.metric)
                self.proposed.labels(*labels[1:]).set(p.replicas)
                seen.add(labels)
        if d.metrics is not None and not d.metrics.failed:
            self.recommended.labels(*key).set(max(d.metrics.replicas, 0))
            seen.add(("recommended", *key))
        step = ("limiting", *key, limiting_step(d))
        self.limiting.labels(*step[1:]).set(1)
        seen.add(step)
        for old in before - seen:
            self._remove(old)
        return seen

    def _remove(self, labels: Series) -> None:
        gauge = {"proposed": self.proposed, "recommended": self.recommended}.get(labels[0], self.limiting)
        with contextlib.suppress(KeyError):
            gauge.remove(*labels[1:])

    def forget(self, key: Key, series: set[Series]) -> None:
        """A deleted HPA leaves no series behind: its explanations, desired replicas,
        second-writer and shadow gauges."""
        for labels in series:
            self._remove(labels)
        for gauge in (
            self.desired,
            self.upstream_desired,
            self.second_writer,
            self.shadow_differs,
            self.shadow_differs_since,
        ):
            with contextlib.suppress(KeyError):
                gauge.remove(*key)


def _age_of(informer: Informer) -> Callable[[], float]:
    return lambda: informer.age() or 0.0
