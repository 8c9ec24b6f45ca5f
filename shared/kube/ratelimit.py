"""Client-side limits on Kubernetes calls: client-go's token bucket (``--kube-api-qps``,
``--kube-api-burst``).

A bucket holds up to ``burst`` tokens and gains ``qps`` a second; each request takes one,
waiting for it when the bucket is empty. Requests are served in the order they asked
(each reserves the next token and sleeps until it is due), so a burst of reconciles
spreads out instead of hammering the API server: at 2,000 HPAs and no limit that was
about 400 requests a second. Every request is sent from the event loop, so a bucket is
plain state on it; ``qps <= 0`` means no limit.

kube-controller-manager applies ``--kube-api-qps`` to each client it builds, and its HPA
controller builds several, each with a bucket of its own: the HPA clientset (status writes,
events, discovery), the scale client, and one client per metrics API. ``PerClient`` gives
the same requests the same buckets, picked by path, so equal flags mean equal limits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"a burst of {burst} admits nothing: it must be at least 1 when qps > 0")
        self.qps, self.burst, self.clock = qps, burst, clock
        self._tokens = float(burst)
        self._at = clock()
        self.waited = 0.0  # seconds requests spent waiting for a token, in total (a metric)

    def reserve(self) -> float:
        """Take the next token: how many seconds until it is due (0: now)."""
        if self.qps <= 0:
            return 0.0
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now
        self._tokens -= 1.0
        delay = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        self.waited += delay
        return delay

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)

    def bucket(self, path: str) -> TokenBucket:
        """One bucket for every request (``PerClient``'s interface)."""
        return self


class PerClient:
    """kube-controller-manager's HPA clients, a bucket each, chosen by the request's path."""

    CLIENTS = ("hpa", "scale", "metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")

    def __init__(self, qps: float, burst: int) -> None:
        self.buckets = {name: TokenBucket(qps, burst) for name in self.CLIENTS}

    @staticmethod
    def client(path: str) -> str:
        """Which of kube-controller-manager's clients sends a request for ``path``."""
        if path.endswith("/scale"):
            return "scale"
        if path.startswith("/apis/"):
            group = path.split("/", 3)[2]
            if group in ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"):
                return group
        return "hpa"

    def bucket(self, path: str) -> TokenBucket:
        return self.buckets[self.client(path)]
