"""On-demand discovery beside a relist, against a real Prometheus that stops answering.

A request for a metric the index does not hold looks it up in Prometheus. While a relist
runs, the lookup waits for it; it must then take the relist's answer -- found, not found,
or that backend's failure -- rather than ask the hung backend once more, so a request waits
for at most one of the backend's timeouts, not two.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from adapter.serving.registry import Registry
from promclient.promapi import PrometheusTimeout
from promclient.prometheus import Prometheus
from promclient.promsettings import PrometheusSettings
from rules.config import parse_config
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import freeze
from tests.support import prometheus_binary
from tests.support import wait_until

pytestmark = pytest.mark.slow
TIMEOUT = 2.0
RULES = """
externalRules:
- seriesQuery: '{__name__=~"^lookup_.*"}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
"""


@pytest.fixture(scope="module")
def hung(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    """A real Prometheus with one series, stopped (SIGSTOP: it accepts, never answers)."""
    exporter = Exporter()
    prom = PrometheusProcess(prometheus_binary(), tmp_path_factory.mktemp("prometheus-hung"), exporter.port)
    prom.start()
    exporter.set('lookup_indexed{queue="a"}', 1)
    wait_until(lambda: prom.query("lookup_indexed") != [], what="the series scraped")
    assert prom.proc is not None
    yield prom
    prom.proc.send_signal(signal.SIGCONT)
    prom.stop()
    exporter.close()


def test_a_lookup_that_waited_for_a_relist_takes_its_failure_instead_of_asking_again(
    hung: PrometheusProcess,
) -> None:
    async def go() -> tuple[float, BaseException | None]:
        registry = Registry(
            parse_config(RULES),
            Prometheus(PrometheusSettings(hung.url, timeout=TIMEOUT)),
            timedelta(minutes=5),
        )
        await registry.relist()
        assert registry.external_metrics() == ["lookup_indexed"]
        assert hung.proc is not None
        freeze(hung.proc.pid)
        try:
            relist = asyncio.ensure_future(registry.relist())
            # until the relist holds the lock (then it is waiting for the hung backend): a
            # fixed pause was not always enough on a loaded machine, and the lookup then asked
            # the backend itself while the relist, started later, was answered after SIGCONT
            while not registry._lock.locked():
                assert not relist.done(), f"the relist ended before the lookup: {relist.exception()!r}"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # its request sent
            start = time.monotonic()
            with pytest.raises(PrometheusTimeout):
                await registry.external("lookup_not_yet")
            took = time.monotonic() - start
            return took, (await asyncio.gather(relist, return_exceptions=True))[0]
        finally:
            hung.proc.send_signal(signal.SIGCONT)

    took, relisted = asyncio.run(go())
    assert isinstance(relisted, PrometheusTimeout)  # the only backend failed: the relist says so
    assert took < TIMEOUT + 0.5, took  # the relist's remaining wait only, not a second timeout
