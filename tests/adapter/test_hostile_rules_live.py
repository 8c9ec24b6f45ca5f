"""Hostile MetricRules on the real control plane: thousands of generated queries, long,
deep, wide and broken, written by namespace editors into their own MetricRules, while a
team in another namespace reads its metric every 250 ms.

The adapter (a real process, watching the real kube-apiserver, judging in its workers,
querying a real Prometheus) must answer every read within a second, never restart, and
bring every hostile rule to a verdict (Invalid, or served) within 5 s of its last edit."""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kubernetes
import pytest

from localcluster import Cluster
from tests.live import Live
from tests.support import AdapterProcess
from tests.support import external_rules
from tests.support import install_metric_rule_crds
from tests.support import wait_until

pytestmark = pytest.mark.cluster
GROUP, VERSION, PLURAL = "promhpa.io", "v1alpha1", "metricrules"
READER = "reader"
NAMESPACES = [f"hostile-{i}" for i in range(5)]
RULES_PER_NAMESPACE = 20  # within the adapter's cap of 50
QUERIES = 5_000
MOST = 16_384  # what the CRD admits in spec.query


def hostile(rng: random.Random) -> str:
    """One generated query: long, deep, wide, expensive or broken, at most MOST characters."""
    n = rng.randint(1, 9000)
    shapes = [
        lambda: "+".join(["x"] * n),  # the chain that crashes promql-parser past ~5,000
        lambda: "abs(" * (n // 3) + "x" + ")" * (n // 3),  # the nesting that crashes it past ~1,000
        lambda: "(" * n + "x" + ")" * n,
        lambda: "-" * n + "x",
        lambda: "sum by (" + ",".join(f"l{i}" for i in range(n)) + ") (x)",
        lambda: 'x{pod=~"' + "a|" * n + '"}',
        lambda: " or ".join(f"m{i}" for i in range(n)),
        lambda: "max_over_time(" * 20 + "rate(x[1m])" + "[10m:1s])" * 20,
        lambda: f"max_over_time(x[{rng.randint(2, 9000)}h])",
        lambda: f"x offset {rng.randint(7, 100_000)}h",
        lambda: "".join(
            rng.choice("({[]})+-*/^\"'`#=~!, \nxsumby0123456789") for _ in range(rng.randint(1, 4000))
        ),
        lambda: "info(x)",
        lambda: 'x{a="1" or b="2"}',
        lambda: "(" + "+".join(["x"] * 30) + ")+" * (n // 100) + "x",
        lambda: f"sum(rate(jobs_total[{rng.randint(1, 10)}m]))",  # a valid one: served
    ]
    return rng.choice(shapes)()[:MOST] or "x"


def rule(ns: str, i: int, query: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "MetricRule",
        "metadata": {"name": f"r{i}", "namespace": ns},
        "spec": {"metric": f"hostile_{i}", "query": query},
    }


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[kubernetes.client.CustomObjectsApi]:
    client = kubernetes.config.new_client_from_config(str(cluster.kubeconfig))
    client.configuration.connection_pool_maxsize = 8
    yield kubernetes.client.CustomObjectsApi(client)
    client.close()


@pytest.fixture(scope="module")
def adapter(live: Live) -> Iterator[AdapterProcess]:
    cluster = live.cluster
    install_metric_rule_crds(cluster)
    for ns in [READER, *NAMESPACES]:
        cluster.kubectl("create", "namespace", ns, check=False)
    live.publish({f'orders_waiting{{namespace="{READER}"}}': 42}, "orders_waiting")
    yield live.local_adapter(external_rules("orders_waiting", by=""), "--team-rules", "--query-cache-ttl=0s")
    for ns in [READER, *NAMESPACES]:
        cluster.kubectl("-n", ns, "delete", "metricrules", "--all", check=False)


class Reader(threading.Thread):
    """Asks for the reader namespace's metric every 250 ms until stopped."""

    def __init__(self, adapter: AdapterProcess) -> None:
        super().__init__(daemon=True)
        self.adapter, self.stopped = adapter, threading.Event()
        self.latencies: list[float] = []
        self.failures: list[tuple[int, Any]] = []

    def run(self) -> None:
        path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{READER}/orders"
        while not self.stopped.is_set():
            t0 = time.monotonic()
            try:
                code, body = self.adapter.get(path)
            except OSError as e:
                code, body = 0, str(e)
            self.latencies.append(time.monotonic() - t0)
            if code != 200 or [i["value"] for i in body["items"]] != ["42"]:
                self.failures.append((code, body))
            self.stopped.wait(max(0.0, 0.25 - (time.monotonic() - t0)))


def verdicts(api: kubernetes.client.CustomObjectsApi) -> dict[tuple[str, str], tuple[int, str]]:
    """Each hostile rule's generation, and its Accepted reason once it speaks of that generation."""
    out = {}
    for ns in NAMESPACES:
        for obj in api.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]:
            meta, status = obj["metadata"], obj.get("status") or {}
            accepted = next((c for c in status.get("conditions", []) if c["type"] == "Accepted"), {})
            current = accepted.get("observedGeneration") == meta["generation"]
            out[(ns, meta["name"])] = (meta["generation"], accepted.get("reason", "") if current else "")
    return out


def test_hostile_rules_never_stall_crash_or_slow_another_namespaces_reads(
    cluster: Cluster, adapter: AdapterProcess, api: kubernetes.client.CustomObjectsApi
) -> None:
    cluster.apply(
        [
            {
                **rule(READER, 0, "sum(orders_waiting)"),
                "spec": {"metric": "orders", "query": "sum(orders_waiting)"},
            }
        ],
    )
    wait_until(
        lambda: adapter.get(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{READER}/orders")[0] == 200,
        timeout=10,
        what="the reader's rule",
    )
    pid = adapter.proc.pid
    rng = random.Random(41)
    reader = Reader(adapter)
    reader.start()
    slots = [(ns, i) for ns in NAMESPACES for i in range(RULES_PER_NAMESPACE)]
    created: set[tuple[str, int]] = set()
    lock = threading.Lock()

    def write(ns: str, i: int, query: str) -> None:
        with lock:
            new = (ns, i) not in created
            created.add((ns, i))
        if new:
            api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, rule(ns, i, query))
        else:
            api.patch_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, f"r{i}", {"spec": {"query": query}}
            )

    t0 = time.monotonic()
    # edits in rounds, one per object, so no object is written twice at once
    work = [(slots[k % len(slots)], hostile(rng)) for k in range(QUERIES)]
    with ThreadPoolExecutor(4) as pool:
        for start in range(0, QUERIES, len(slots)):
            list(pool.map(lambda w: write(*w[0], w[1]), work[start : start + len(slots)]))
    wrote = time.monotonic() - t0
    last_edit = time.monotonic()
    deadline = last_edit + 5.0
    final = verdicts(api)
    while any(not reason for _, reason in final.values()) and time.monotonic() < deadline:
        time.sleep(0.25)
        final = verdicts(api)
    settled = time.monotonic() - last_edit
    time.sleep(1.0)  # one more second of reads after the storm
    reader.stopped.set()
    reader.join(timeout=5)

    reasons = statistics.multimode([r for _, r in final.values()])
    print(
        f"{QUERIES} hostile writes in {wrote:.1f}s; verdicts {settled:.2f}s after the last edit; "
        f"{len(reader.latencies)} reads, slowest {max(reader.latencies):.3f}s, "
        f"median {statistics.median(reader.latencies) * 1000:.1f} ms; most common verdict {reasons}"
    )
    assert reader.failures == [], reader.failures[:3]
    assert max(reader.latencies) < 1.0
    assert len(reader.latencies) > wrote * 3  # it kept reading the whole time
    assert adapter.proc.poll() is None, adapter.log.read_text()[-3000:]
    assert adapter.proc.pid == pid
    late = {k: v for k, v in final.items() if v[1] not in ("Invalid", "Served")}
    assert not late, f"{len(late)} rules without a verdict 5 s after the last edit: {list(late.items())[:5]}"
    assert len(final) == len(slots)
