"""The live controller's metrics (``controller.live.monitor``) and per-HPA records."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from types import SimpleNamespace

from prometheus_client import generate_latest

from controller.engine import Decision
from controller.engine import decide
from controller.engine import parse_snapshot
from controller.live.hpa_records import HpaRecords
from controller.live.monitor import ControllerMetrics
from controller.live.second_writer import Writers
from tests.controller.engine.builders import pod_metrics
from tests.controller.engine.builders import snapshot

KEY = ("ns", "web")


def decision(usage: str, current: int = 3) -> Decision:
    pods = [pod_metrics(f"web-{i}", usage) for i in range(current)]
    return decide(parse_snapshot(snapshot(current=current, pod_metrics_=pods)))


def exposition(m: ControllerMetrics) -> str:
    return generate_latest(m.registry).decode()


def test_a_reconcile_sets_the_hpas_proposal_recommendation_and_limiting_step() -> None:
    m = ControllerMetrics()
    series = m.observe_reconcile(KEY, decision("1"), 0.01, set())
    text = exposition(m)
    proposed = 'metric="Resource cpu",metric_index="0",name="web",namespace="ns"} 6.0'
    assert f"promhpa_controller_metric_proposed_replicas{{{proposed}" in text
    assert 'promhpa_controller_recommended_replicas{name="web",namespace="ns"} 6.0' in text
    assert {s[0] for s in series} == {"proposed", "recommended", "limiting"}


def test_a_step_the_next_reconcile_does_not_set_is_removed() -> None:
    m = ControllerMetrics()
    first = m.observe_reconcile(KEY, decision("1"), 0.01, set())  # limiting step: none
    second = m.observe_reconcile(KEY, decision("500m"), 0.01, first)  # within tolerance
    text = exposition(m)
    assert 'step="tolerance"' in text
    assert 'step="none"' not in text
    assert ("limiting", "ns", "web", "none") in first - second


def test_forgetting_an_hpa_leaves_none_of_its_series() -> None:
    m = ControllerMetrics()
    series = m.observe_reconcile(KEY, decision("1"), 0.01, set())
    m.second_writer.labels(*KEY).set(1)
    m.shadow_differs.labels(*KEY).set(0)
    m.forget(KEY, series)
    assert 'name="web"' not in exposition(m)


def test_forgetting_an_hpa_that_set_nothing_is_harmless() -> None:
    m = ControllerMetrics()
    m.forget(KEY, set())
    assert 'name="web"' not in exposition(m)


def test_records_list_only_passive_hpas_in_key_order() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC)
    records = HpaRecords()
    records.of(("b", "x")).writers = Writers(evidence="kcm")  # seen, not passive
    records.of(("z", "y")).writers = Writers(evidence="kcm", passive_since=since)
    records.of(("c", "c"))  # never seen by the guard
    records.of(("a", "y")).writers = Writers(passive_since=since)
    assert [k for k, _ in records.passive()] == [("a", "y"), ("z", "y")]


def test_a_popped_record_is_gone_with_its_history() -> None:
    records = HpaRecords()
    records.of(KEY).history = decision("1").history
    assert records.history(KEY) is not None
    popped = records.pop(KEY)
    assert popped is not None
    assert popped.history is not None
    assert records.history(KEY) is None
    assert records.pop(KEY) is None


def test_upstreams_desired_replicas_series_is_set_under_its_own_label_names() -> None:
    m = ControllerMetrics()
    m.observe_reconcile(KEY, decision("1"), 0.01, set())
    text = exposition(m)
    assert 'horizontal_pod_autoscaler_controller_desired_replicas{hpa_name="web",namespace="ns"} 6.0' in text
    m.forget(KEY, set())
    assert "horizontal_pod_autoscaler_controller_desired_replicas{" not in exposition(m)


def test_the_count_of_hpas_is_read_from_the_hpa_cache_when_scraped() -> None:
    m = ControllerMetrics()
    hpas = SimpleNamespace(objects={("ns", "a"): {}, ("ns", "b"): {}}, age=lambda: 1.0)
    m.watch_informers({"hpas": hpas})  # type: ignore[dict-item]
    assert "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 2.0" in exposition(m)
    hpas.objects[("ns", "c")] = {}
    assert "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 3.0" in exposition(m)


def test_stale_sync_skips_are_counted_under_upstreams_name_and_labels() -> None:
    m = ControllerMetrics()
    m.stale_sync_skips.labels("autoscaling", "horizontalpodautoscalers").inc()
    assert (
        'horizontal_pod_autoscaler_controller_stale_sync_skips_total{group="autoscaling",'
        'resource="horizontalpodautoscalers"} 1.0'
    ) in exposition(m)
