"""The token bucket behind --kube-api-qps / --kube-api-burst, on a clock the test moves."""

from __future__ import annotations

import pytest

from shared.kube.ratelimit import PerClient
from shared.kube.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_admits_its_burst_at_once() -> None:
    bucket = TokenBucket(qps=20, burst=30, clock=Clock())
    assert [bucket.reserve() for _ in range(30)] == [0.0] * 30


def test_past_the_burst_requests_are_spaced_at_the_rate() -> None:
    bucket = TokenBucket(qps=20, burst=30, clock=Clock())
    for _ in range(30):
        bucket.reserve()
    delays = [bucket.reserve() for _ in range(4)]
    assert delays == pytest.approx([0.05, 0.10, 0.15, 0.20])


def test_the_bucket_refills_with_time_up_to_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=5, clock=clock)
    for _ in range(5):
        bucket.reserve()
    clock.now += 100.0  # long idle: back to 5 tokens, not 1,000
    assert [bucket.reserve() for _ in range(5)] == [0.0] * 5
    assert bucket.reserve() == pytest.approx(0.1)


def test_over_any_window_admissions_stay_within_burst_plus_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=5, burst=10, clock=clock)
    due = []
    for _ in range(200):  # callers that each wait their turn, arriving all at once
        due.append(clock.now + bucket.reserve())
    for start in (0.0, 3.0, 10.0):
        within = [t for t in due if start <= t < start + 10.0]
        assert len(within) <= 10 + 5 * 10


def test_zero_qps_means_no_limit() -> None:
    bucket = TokenBucket(qps=0, burst=0, clock=Clock())
    assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_a_burst_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="burst of 0"):
        TokenBucket(qps=5, burst=0)


@pytest.mark.parametrize(
    ("path", "client"),
    [
        ("/apis/apps/v1/namespaces/a/deployments/web/scale", "scale"),
        ("/apis/argoproj.io/v1alpha1/namespaces/a/rollouts/r/scale", "scale"),
        ("/apis/autoscaling/v2/namespaces/a/horizontalpodautoscalers/h/status", "hpa"),
        ("/api/v1/namespaces/a/events", "hpa"),
        ("/apis/metrics.k8s.io/v1beta1/namespaces/a/pods", "metrics.k8s.io"),
        ("/apis/custom.metrics.k8s.io/v1beta2/namespaces/a/pods/*/rps", "custom.metrics.k8s.io"),
        ("/apis/external.metrics.k8s.io/v1beta1/namespaces/a/queue", "external.metrics.k8s.io"),
    ],
)
def test_each_request_goes_to_the_bucket_of_kube_controller_managers_client_for_it(
    path: str, client: str
) -> None:
    assert PerClient.client(path) == client


def test_clients_do_not_share_a_bucket() -> None:
    limits = PerClient(qps=1, burst=1)
    scale = "/apis/apps/v1/namespaces/a/deployments/web/scale"
    assert limits.bucket(scale).reserve() == 0.0
    assert limits.bucket("/apis/external.metrics.k8s.io/v1beta1/namespaces/a/q").reserve() == 0.0
    assert limits.bucket(scale).reserve() > 0.9  # its own bucket is empty now
