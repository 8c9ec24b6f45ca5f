"""Fuzzed paths and selectors: no request reads outside the namespace it was authorized for.

A recording proxy sits between the adapter and a real Prometheus and keeps every PromQL
query that reaches it. Thousands of generated requests (encodings, empty and doubly
encoded segments, cluster-scoped resources inside namespaces, hostile selector values) go
to the adapter one at a time, so each query is attributed to the request that caused it.
For each request the namespace the kube-apiserver would authorize is computed here, from
its documented rules (decode once, split on '/', ``namespaces/{ns}/...``), independently
of the adapter's code. Every query must then name exactly that namespace (or none, for a
cluster-scoped request), and Prometheus must accept it (a query that breaks out of a
quoted value is no longer the query we built).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import Recorder
from tests.support import every_kind_rules
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.slow

REQUESTS = int(os.environ.get("PROMHPA_FUZZ_REQUESTS", "10000"))
SEED = int(os.environ.get("PROMHPA_FUZZ_SEED", "20261123"))
CONFIG = every_kind_rules("fz", node_metric=True)


@pytest.fixture(scope="module")
def proxied(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AdapterProcess, Recorder]]:
    for ns in ("shop", "other", "kube-system"):
        exporter.set(f'fz_requests{{namespace="{ns}",pod="web-0"}}', 1)
        exporter.set(f'fz_ns_load{{namespace="{ns}"}}', 2)
        exporter.set(f'fz_queue{{namespace="{ns}",queue="orders"}}', 3)
        exporter.set(f'fz_cpu{{namespace="{ns}",pod="web-0",container="c"}}', 0.1)
    exporter.set('fz_node_load{node="n1"}', 4)
    exporter.set('fz_node_cpu{node="n1"}', 1)
    wait_until(lambda: len(prometheus.query("fz_queue")) == 3, what="first scrape")
    with Recorder(prometheus.url) as recorder:
        a = start_adapter(tmp_path_factory.mktemp("fuzz"), recorder.url, CONFIG, "--query-cache-ttl=0s")
        try:
            yield a, recorder
        finally:
            stop_adapter(a)


NAMESPACES = [
    "shop", "other", "", "%2500", "%252F", "sh%6Fp", "a%2Fb", "UPPER", "shop%0A", 'shop"', "%22%7D",
    "..", ".", "*", "namespaces", "kube-system", "shop%20", "%00", "sh\\op", "%5C%22",
]  # fmt: skip
RESOURCES = [
    "pods",
    "namespaces",
    "nodes",
    "services",
    "persistentvolumes",
    "metrics",
    "*",
    "status",
    "pods.v1",
]
NAMES = ["*", "web-0", "", "%2A", "web-0%22", "a%2Fb", "..", "n1", "shop", "other"]
METRICS = ["fz_requests", "fz_ns_load", "fz_node_load", "fz_queue", "", "fz_queue%22", "x%2Fy", "*"]
SELECTORS = [
    "queue=orders", "queue in (orders,x)", "queue!=x", 'queue=a"b', "a=b,c", "queue=~x", "namespace=other",
    "namespace in (shop,other)", "!namespace", "queue", "a%3Db", "queue notin (x)", "q=\\", "q=%22%7D",
    "namespace!=shop", "x=y,namespace=kube-system",
]  # fmt: skip
SHAPES = [
    "/apis/custom.metrics.k8s.io/{v}/namespaces/{ns}/{res}/{name}/{metric}",
    "/apis/custom.metrics.k8s.io/{v}/namespaces/{ns}/metrics/{metric}",
    "/apis/custom.metrics.k8s.io/{v}/{res}/{name}/{metric}",
    "/apis/custom.metrics.k8s.io/{v}/namespaces/{ns}/{metric}",
    "/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{metric}",
    "/apis/external.metrics.k8s.io/v1beta1/{metric}",
    "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods",
    "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{name}",
    "/apis/metrics.k8s.io/v1beta1/pods",
    "/apis/metrics.k8s.io/v1beta1/nodes/{name}",
]


def random_segment(rng: random.Random) -> str:
    alphabet = 'abc-./%"\\{}=~!,*\n\x00é'
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
    return urllib.parse.quote(text, safe="") if rng.random() < 0.5 else urllib.parse.quote(text, safe="%")


def generate(rng: random.Random) -> str:
    def pick(options):
        return options[rng.randrange(len(options))] if rng.random() < 0.9 else random_segment(rng)

    path = rng.choice(SHAPES).format(
        v=rng.choice(["v1beta1", "v1beta2"]),
        ns=pick(NAMESPACES),
        res=pick(RESOURCES),
        name=pick(NAMES),
        metric=pick(METRICS),
    )
    query = []
    for key in ("labelSelector", "metricLabelSelector"):
        if rng.random() < 0.3:
            query.append(f"{key}={urllib.parse.quote(pick(SELECTORS), safe='%')}")
    return path + ("?" + "&".join(query) if query else "")


def authorized_namespace(raw: str) -> str | None:
    """The kube-apiserver's reading (RequestInfoFactory): decode once, split, namespaces/{ns}.
    None when no query may follow: the apiserver refuses a bad escape outright."""
    path = raw.split("?", 1)[0]
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        return None
    try:
        decoded = urllib.parse.unquote(path, errors="strict")
    except UnicodeDecodeError:  # Go would keep the bytes; the adapter refuses them (400)
        return None
    parts = decoded.strip("/").split("/")
    return parts[4] if len(parts) > 5 and parts[3] == "namespaces" else ""


MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


BLOCK = re.compile(r'\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')


def selector_blocks(promql: str) -> list[list[tuple[str, str, str]]]:
    """The label matchers of each vector selector ``{...}`` in the query."""
    return [
        [(k, op, bytes(v, "utf-8").decode("unicode_escape")) for k, op, v in MATCHER.findall(block)]
        for block in BLOCK.findall(promql)
    ]


def confined(promql: str, namespace: str) -> bool:
    """Every vector selector carries namespace="<namespace>". Matchers are ANDed, so other
    matchers (a metricLabelSelector on namespace, say) can only narrow it further."""
    blocks = selector_blocks(promql)
    return bool(blocks) and all(("namespace", "=", namespace) in b for b in blocks)


def narrows_to_a_namespace(promql: str) -> bool:
    return any(
        k == "namespace" and op in ("=", "=~") and v for b in selector_blocks(promql) for k, op, v in b
    )


def test_fuzzed_requests_query_only_the_authorized_namespace(
    proxied: tuple[AdapterProcess, Recorder],
) -> None:
    adapter, recorder = proxied
    rng = random.Random(SEED)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", adapter.port, context=ctx, timeout=15)
    codes: dict[int, int] = {}
    violations: list[str] = []
    queried = 0
    recorder.take()
    for _ in range(REQUESTS):
        raw = generate(rng)
        conn.request("GET", raw)
        response = conn.getresponse()
        body = response.read()
        codes[response.status] = codes.get(response.status, 0) + 1
        if response.status >= 400:
            assert body.startswith(b"{"), (raw, body)
            status = json.loads(body)
            assert status["kind"] == "Status", raw
            assert status["code"] == response.status, raw
            assert response.status in (400, 404), (raw, status)
        queries = recorder.take()
        expected = authorized_namespace(raw)
        for promql, prom_code in queries:
            queried += 1
            if prom_code != 200:
                violations.append(f"{raw}: Prometheus refused {promql!r} ({prom_code})")
            if expected is None:
                violations.append(f"{raw}: an invalid URL reached Prometheus as {promql!r}")
            elif expected:
                if not confined(promql, expected):
                    violations.append(f"{raw}: authorized {expected!r}, queried {promql!r}")
            elif (
                narrows_to_a_namespace(promql)
                and "metricLabelSelector" not in raw
                and "labelSelector" not in raw
            ):
                violations.append(f"{raw}: cluster-scoped request narrowed to a namespace: {promql!r}")
    conn.close()
    print(f"{REQUESTS} requests, {queried} queries reached Prometheus, answers {dict(sorted(codes.items()))}")
    assert violations == []
    assert queried > REQUESTS // 20  # the generator does reach Prometheus, often
    assert codes.get(200, 0) > 0
