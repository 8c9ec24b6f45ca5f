"""promhpa's adapter and prometheus-adapter v0.12.0, side by side, in one run.

    make bench-adapter      (or: python -m benchmarks.side_by_side [--rounds 3] [--requests 3000]
                             [--seconds 4])

Both adapters run as real processes against the same Prometheus, the same rule file and the
same Kubernetes objects (a real kube-apiserver with kwok pods), with the same kubeconfig,
and are called the way the aggregator calls them: a front-proxy client certificate plus
``X-Remote-User``/``X-Remote-Group``, each request authorized by a SubjectAccessReview
behind (both cache those answers). They take turns, path by path, for several rounds; the
table shows the median round. For every path it also sends the PromQL promhpa builds for
those requests straight to Prometheus, at the same concurrency: the floor neither adapter
can beat. ``distinct`` requests differ in a ``metricLabelSelector``/``labelSelector`` that
matches the same series, so no cache (ours or Prometheus') can answer them; ``repeated``
requests are identical. CPU is each adapter's own process (user + system) per request.

The measured calls come from a Go client (``benchmarks/loadgen``, built by
``hack/build-tools.sh bench``), as the aggregator's do: a Python client spent about as much
CPU per request as the adapter it measured, on the same two cores, and so bounded the rate
of whichever side needed CPU most.

Each phase first opens its connections with uncounted calls and then measures on them, as
the aggregator keeps its connections to an adapter open (a fresh TLS handshake per
connection in every phase was a tenth to a third of the CPU per request on the small
paths, for both adapters). Everything is on 127.0.0.1 and bounded: each phase stops after
its request count or its seconds, whichever comes first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

import localcluster
from benchmarks import profiles
from benchmarks.bench_controller import py_spy
from benchmarks.doc_tables import invocation, update_figures, update_section
from localcluster.manifests import adapter_manifests
from localcluster.prometheus import Exporter, PrometheusProcess, prometheus_path
from localcluster.promhpa import stop_process
from localcluster.tools import ROOT, Binaries, cache_bin, free_port, wait_until
from rules.config import GroupResource, parse_config
from rules.queries import ObjectQuery, container_query, custom_query, external_query
from shared.selectors import parse as parse_selector
from shared.tls import self_signed

NODES = ("kwok-node-0", "kwok-node-1", "kwok-node-2")
# prometheus-adapter's Kubernetes client (custom-metrics-apiserver's --client-qps/--client-burst)
# raised far past any rate measured here; promhpa's adapter reads through informers and has no
# such limit (its --client-qps is accepted and ignored).
RAISED_LIMITS = ("--client-qps=10000", "--client-burst=20000")
RAISED_NAME = "prometheus-adapter raised"
GOAL = 0.5  # promhpa's CPU per request at most this times prometheus-adapter's (limits raised)
DOCS = ROOT / "docs" / "adapter.md"
LIMITS = {"prometheus-adapter": "defaults (qps 5, burst 10)", RAISED_NAME: "qps 10000, burst 20000"}
HEADER = (
    "| path | requests | conc | promhpa req/s | p50 ms | p99 ms | CPU ms/req "
    "| prometheus-adapter client limits | req/s | p50 ms | p99 ms | CPU ms/req "
    "| req/s ratio | p99 ratio | raw Prometheus req/s | promhpa / raw |"
)
SERVICE, SERVICE_NS = "bench-adapter", "promhpa-bench"
PHASE_SECONDS = 4.0  # a phase's bound in time beside its request count
SEQUENCE = itertools.count()  # distinct requests stay distinct across rounds and adapters
QUEUES = 200
RULES = """
rules:
- seriesQuery: '{__name__="bench_load",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^bench_(.*)$", as: "${1}"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="bench_queue_depth",namespace!=""}'
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
resourceRules:
  cpu:
    containerQuery: 'sum(bench_container_cpu{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(bench_container_cpu{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum(bench_container_memory{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(bench_container_memory{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  window: 1m
"""


@dataclass(frozen=True)
class Workload:
    """One benchmarked path: the request for the i-th call, and the PromQL it costs."""

    name: str
    url: Callable[[int], str]
    promql: Callable[[int], str]
    items: int  # items every answer must carry


@dataclass
class Served:
    name: str
    port: int
    pid: int
    proc: subprocess.Popen[bytes]


def pods_of(namespace: str, n: int) -> list[str]:
    return sorted(f"web-{i}" for i in range(n))


def paths(distinct: bool) -> list[Workload]:
    config = parse_config(RULES)
    custom, external = config.rules[0], config.external_rules[0]
    rr = config.resource_rules
    assert rr is not None
    assert rr.cpu is not None
    pods = GroupResource("", "pods")

    def slot(i: int) -> str:  # matches every series, differs per request
        return f"slot notin (x{i})" if distinct else "slot notin (x)"  # prometheus-adapter refuses !=

    def pods_path(ns: str, n: int) -> Workload:
        return Workload(
            f"pods/* {n} pods",
            lambda i: (
                f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/load?"
                + urllib.parse.urlencode({"labelSelector": "app=web", "metricLabelSelector": slot(i)})
            ),
            lambda i: custom_query(
                custom, "bench_load", ObjectQuery(pods, ns, tuple(pods_of(ns, n)), parse_selector(slot(i)))
            )[0],
            n,
        )

    def queue(i: int) -> str:
        return f"queue=q{i % QUEUES},shard notin (x{i})" if distinct else "queue=q1"

    return [
        pods_path("b100", 100),
        pods_path("b1k", 1000),
        Workload(
            "one object",
            lambda i: (
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/b100/pods/web-7/load?"
                + urllib.parse.urlencode({"metricLabelSelector": slot(i)})
            ),
            lambda i: custom_query(
                custom, "bench_load", ObjectQuery(pods, "b100", ("web-7",), parse_selector(slot(i)))
            )[0],
            1,
        ),
        Workload(
            "external",
            lambda i: (
                "/apis/external.metrics.k8s.io/v1beta1/namespaces/bench/bench_queue_depth?"
                + urllib.parse.urlencode({"labelSelector": queue(i)})
            ),
            lambda i: external_query(external, "bench_queue_depth", "bench", parse_selector(queue(i))),
            1,
        ),
        Workload(
            "metrics.k8s.io pods",
            lambda i: (
                "/apis/metrics.k8s.io/v1beta1/namespaces/b100/pods?"
                + urllib.parse.urlencode({"labelSelector": f"app=web,tier!=t{i}" if distinct else "app=web"})
            ),
            lambda i: container_query(rr.cpu, "b100", pods_of("b100", 100))[0],  # type: ignore[arg-type]
            100,
        ),
    ]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(
    call: Callable[[aiohttp.ClientSession, int], Awaitable[None]],
    session: aiohttp.ClientSession,
    requests: int,
    concurrency: int,
    seconds: float,
) -> tuple[float, list[float]]:
    """(seconds, latencies) of up to ``requests`` calls, ``concurrency`` at a time, none
    started after ``seconds`` (a slow path ends by time, a fast one by count)."""
    latencies: list[float] = []
    counter = (next(SEQUENCE) for _ in range(requests))  # never the same request twice in a run
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        for i in counter:
            t0 = time.perf_counter()
            if t0 > deadline:
                return
            await call(session, i)
            latencies.append(time.perf_counter() - t0)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start, latencies


def _adapter_call(
    base: str, path: Workload, headers: dict[str, str]
) -> Callable[[aiohttp.ClientSession, int], Awaitable[None]]:
    async def call(session: aiohttp.ClientSession, i: int) -> None:
        async with session.get(base + path.url(i), headers=headers) as r:
            body = await r.read()
            if r.status != 200:
                raise RuntimeError(f"{base}{path.url(i)}: {r.status} {body[:300]!r}")
            items = json.loads(body).get("items")
            if items is not None and len(items) != path.items:
                raise RuntimeError(f"{path.name}: {len(items)} items, wanted {path.items}")

    return call


async def load(
    base: str,
    path: Workload,
    requests: int,
    concurrency: int,
    ssl_ctx: ssl.SSLContext | None,
    headers: dict[str, str],
) -> tuple[float, list[float]]:
    """(seconds, latencies) of ``requests`` calls on fresh connections (probes)."""
    connector = aiohttp.TCPConnector(ssl=ssl_ctx if ssl_ctx is not None else False, limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        return await _drive(_adapter_call(base, path, headers), session, requests, concurrency, 600)


def raw_prometheus(url: str, path: Workload, requests: int, concurrency: int, seconds: float) -> float:
    """Requests per second of the same PromQL sent straight to Prometheus (warm connections,
    like the adapters'), asked as promhpa asks (no gzip): the cheapest form of the same query."""
    got = drive_loadgen(
        {
            "base": url,
            "method": "POST",
            "postPath": "/api/v1/query",
            "warm": [
                urllib.parse.urlencode({"query": path.promql(next(SEQUENCE))}) for _ in range(2 * concurrency)
            ],
            "requests": [
                urllib.parse.urlencode({"query": path.promql(next(SEQUENCE))}) for _ in range(requests)
            ],
            "gzip": False,
            "concurrency": concurrency,
            "seconds": seconds,
            "items": -1,
        }
    )
    return float(got["count"]) / float(got["seconds"])


@dataclass(frozen=True)
class Identity:
    """Who the load generator is over TLS: a client certificate, and the CA that verifies
    the server (None: the adapters' self-signed serving certificates go unverified)."""

    cert: Path
    key: Path
    ca: Path | None = None


def aggregator_identity(cluster: localcluster.Cluster) -> Identity:
    """The aggregator's identity: the front-proxy client certificate the adapters trust."""
    return Identity(cluster.pki / "front-proxy-client.crt", cluster.pki / "front-proxy-client.key")


def loadgen_binary() -> Path:
    """benchmarks/loadgen built by hack/build-tools.sh, cached by a hash of its source."""
    src = Path(__file__).with_name("loadgen")
    digest = hashlib.sha256((src / "go.mod").read_bytes() + (src / "main.go").read_bytes()).hexdigest()
    return cache_bin() / f"loadgen-{digest[:12]}" / "loadgen"


def drive_loadgen(spec: dict[str, object]) -> dict[str, float]:
    """One phase by the Go load generator (see benchmarks/loadgen/main.go): its JSON figures."""
    out = subprocess.run(
        [str(loadgen_binary())],
        input=json.dumps(spec).encode(),
        capture_output=True,
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr.decode(errors="replace").strip())
    return dict(json.loads(out.stdout))


@dataclass
class Figures:
    rps: float
    p50: float
    p99: float
    cpu_ms: float


def measure(
    a: Served,
    path: Workload,
    requests: int,
    concurrency: int,
    identity: Identity,
    base: str | None = None,
    headers: dict[str, str] | None = None,
    seconds: float = PHASE_SECONDS,
) -> Figures:
    """``a`` called directly as the aggregator would (default), or through ``base``; the
    first calls open the connections (and fill the SubjectAccessReview cache) uncounted,
    and ``a``'s CPU is counted over the measured calls alone."""
    if headers is None:
        headers = {"X-Remote-User": "bench", "X-Remote-Group": "system:masters"}
    got = drive_loadgen(
        {
            "base": base or f"https://127.0.0.1:{a.port}",
            "method": "GET",
            "warm": [path.url(next(SEQUENCE)) for _ in range(2 * concurrency)],
            "requests": [path.url(next(SEQUENCE)) for _ in range(requests)],
            "headers": headers,
            "cert": str(identity.cert),
            "key": str(identity.key),
            "ca": str(identity.ca) if identity.ca else "",
            "gzip": True,  # as Go clients (the aggregator among them) ask
            "concurrency": concurrency,
            "seconds": seconds,
            "items": path.items,
            "pid": a.pid,
        }
    )
    count = float(got["count"])
    return Figures(
        count / float(got["seconds"]),
        float(got["p50_ms"]),
        float(got["p99_ms"]),
        float(got["cpu_ticks"]) / os.sysconf("SC_CLK_TCK") / count * 1000,
    )


def median(figs: Sequence[Figures]) -> Figures:
    return Figures(*(statistics.median(getattr(f, k) for f in figs) for k in ("rps", "p50", "p99", "cpu_ms")))


def client_context(cluster: localcluster.Cluster) -> ssl.SSLContext:
    """The aggregator's identity: the front-proxy client certificate the adapters trust."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the adapters' self-signed serving certificates
    ctx.load_cert_chain(cluster.pki / "front-proxy-client.crt", cluster.pki / "front-proxy-client.key")
    return ctx


def commands(
    cluster: localcluster.Cluster,
    prom: PrometheusProcess,
    work: Path,
    rules_text: str,
    extra: Sequence[str] = (),
    both: Sequence[str] = ("--metrics-relist-interval=10m",),
    raised: bool = False,
) -> list[tuple[str, list[str], int]]:
    """Each adapter's command line (name, argv, port): the same Prometheus, rules, kubeconfig,
    serving certificate and ``both`` flags (discovery every 10 minutes by default); ``extra``
    only for promhpa. With ``raised``, prometheus-adapter a second time with its Kubernetes
    client limits raised (``RAISED_LIMITS``): its users meet the defaults, and the defaults
    alone would measure the limit rather than the adapter."""
    rules = work / "rules.yaml"
    rules.write_text(rules_text)
    cert, key = self_signed(work / "certs", [f"{SERVICE}.{SERVICE_NS}.svc"])  # what the aggregator verifies
    kubeconfig = str(cluster.kubeconfig)
    p1 = free_port()
    ours = [
        sys.executable, "-m", "adapter", f"--prometheus-url={prom.url}", f"--config={rules}",
        "--bind-address=127.0.0.1", f"--secure-port={p1}", f"--kubeconfig={kubeconfig}",
        f"--tls-cert-file={cert}", f"--tls-private-key-file={key}", "--health-port=0",
        "--log-level=warning", *both, *extra,
    ]  # fmt: skip
    p2 = free_port()
    theirs = [
        str(Binaries(cache_bin()).prometheus_adapter), f"--prometheus-url={prom.url}", f"--config={rules}",
        "--bind-address=127.0.0.1", f"--secure-port={p2}", f"--lister-kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        f"--tls-cert-file={cert}", f"--tls-private-key-file={key}", *both, "--v=0",
    ]  # fmt: skip
    out = [("promhpa", ours, p1), ("prometheus-adapter", theirs, p2)]
    if raised:
        p3 = free_port()
        on_p3 = [f"--secure-port={p3}" if a == f"--secure-port={p2}" else a for a in theirs]
        out.append((RAISED_NAME, [*on_p3, *RAISED_LIMITS], p3))
    return out


def spawn(name: str, argv: list[str], port: int, work: Path) -> Served:
    log = open(work / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    log.close()
    return Served(name, port, proc.pid, proc)


def stop(served: Served) -> None:
    stop_process(served.proc)


def setup(prefix: str, target: str) -> tuple[Path, localcluster.Cluster, Exporter] | None:
    """A work directory, a (not yet started) cluster and an exporter, or None after saying
    that prometheus-adapter must be built first (``make TARGET`` does it)."""
    if not Path(Binaries(cache_bin()).prometheus_adapter).exists():
        print(f"prometheus-adapter is not built: run `hack/build-tools.sh bench` (make {target} does)")
        return None
    work = Path(tempfile.mkdtemp(prefix=prefix))
    return work, localcluster.Cluster(work / "cluster"), Exporter()


def start_both(
    cluster: localcluster.Cluster, prom: PrometheusProcess, work: Path, extra: Sequence[str] = ()
) -> list[Served]:
    out = [spawn(*c, work) for c in commands(cluster, prom, work, RULES, extra, raised=True)]
    ctx = client_context(cluster)
    try:
        for a in out:
            probe = paths(distinct=False)[3]
            wait_until(lambda a=a, probe=probe: _ok(a, probe, ctx), timeout=120, what=f"{a.name} serving")
    except BaseException:
        for a in out:  # an adapter that never served must not outlive the run (see its log)
            stop(a)
        raise
    return out


def _ok(a: Served, path: Workload, ctx: ssl.SSLContext) -> bool:
    try:
        asyncio.run(
            load(
                f"https://127.0.0.1:{a.port}",
                path,
                1,
                1,
                ctx,
                {"X-Remote-User": "bench", "X-Remote-Group": "system:masters"},
            )
        )
        return True
    except (RuntimeError, aiohttp.ClientError, OSError):
        return False


def through_aggregator(
    cluster: localcluster.Cluster,
    adapters: list[Served],
    work: Path,
    requests: int,
    seconds: float,
    profile: Path | None = None,
) -> tuple[list[str], list[dict[str, object]], dict[str, profiles.Profile]]:
    """Each adapter in turn registered with the kube-apiserver, called as kubectl would be
    (the admin's client certificate): the path every HPA controller takes. The table's rows,
    their figures, and (with ``profile``, a directory) promhpa's profile on each path."""
    ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
    ctx.load_cert_chain(cluster.pki / "admin.crt", cluster.pki / "admin.key")
    admin = Identity(cluster.pki / "admin.crt", cluster.pki / "admin.key", cluster.pki / "ca.crt")
    ca = (work / "certs" / "apiserver.crt").read_bytes()  # self-signed: its own CA bundle
    chosen = [w for w in paths(distinct=True) if w.name in ("pods/* 100 pods", "external")]
    got: dict[str, dict[str, Figures]] = {}
    spied: dict[str, Path] = {}
    for a in adapters:
        manifests = adapter_manifests(SERVICE_NS, SERVICE, a.port, ca, resource_metrics=True)
        cluster.apply(manifests)
        wait_until(
            lambda: _served_by(cluster.server, chosen[1], ctx),
            timeout=120,
            what=f"the aggregator routing to {a.name}",
        )
        got[a.name] = {
            w.name: measure(a, w, requests, 8, admin, base=cluster.server, headers={}, seconds=seconds)
            for w in chosen
        }
        if profile is not None and a.name == "promhpa":
            for w in chosen:
                out = profile / f"aggregator-{w.name.replace(' ', '-').replace('/', '')}.txt"
                with sampled(a, out):
                    measure(a, w, requests, 8, admin, base=cluster.server, headers={}, seconds=seconds)
                spied[w.name] = out
        a.proc.terminate()  # so the next registration can only be answered by the next adapter
        a.proc.wait(timeout=30)
    rows = [
        row(f"{w.name} (aggregator)", "distinct", 8, got["promhpa"][w.name], name, got[name][w.name], None)
        for w in chosen
        for name in LIMITS
    ]
    figures = [
        figure(f"{w.name} (aggregator)", "distinct", 8, got["promhpa"][w.name], name, got[name][w.name])
        for w in chosen
        for name in LIMITS
    ]
    found = {
        f"{w.name} (aggregator)": profiles.read(spied[w.name], ROOT)
        for w in chosen
        if w.name in spied and misses_goal(got["promhpa"][w.name], got[RAISED_NAME][w.name])
    }
    return rows, figures, found


def misses_goal(ours: Figures, theirs: Figures) -> bool:
    """promhpa's CPU per request over ``GOAL`` times prometheus-adapter's: a path to profile."""
    return ours.cpu_ms > GOAL * theirs.cpu_ms


@contextlib.contextmanager
def sampled(a: Served, out: Path) -> Iterator[None]:
    """py-spy sampling ``a`` (without pausing it) while the block runs, into ``out`` as
    collapsed stacks. An extra, unmeasured phase: the sampler's CPU is not the adapter's."""
    spy = subprocess.Popen(
        [py_spy(), "record", "--nonblocking", "-r", "200", "-f", "raw", "-p", str(a.pid), "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled on SIGINT
        spy.wait(timeout=60)


def row(path: str, kind: str, conc: int, ours: Figures, name: str, theirs: Figures, raw: float | None) -> str:
    """One line of the table: promhpa beside one prometheus-adapter (``name``: at which limits)."""
    tail = f"{raw:.0f} | {ours.rps / raw:.2f} |" if raw else " | |"
    return (
        f"| {path} | {kind} | {conc} | {ours.rps:.0f} | {ours.p50:.1f} | {ours.p99:.1f} | "
        f"{ours.cpu_ms:.2f} | {LIMITS[name]} | {theirs.rps:.0f} | {theirs.p50:.1f} | {theirs.p99:.1f} | "
        f"{theirs.cpu_ms:.2f} | **{ours.rps / theirs.rps:.2f}x** | {ours.p99 / theirs.p99:.2f} | {tail}"
    )


def figure(path: str, kind: str, conc: int, ours: Figures, name: str, theirs: Figures) -> dict[str, object]:
    """One row as docs/benchmarks.json holds it: CPU per request against one prometheus-adapter."""
    return {
        "path": f"{path} ({kind}, concurrency {conc})",
        "prometheus_adapter_setting": LIMITS[name],
        "cpu_ms_per_request": round(ours.cpu_ms, 4),
        "prometheus_adapter_cpu_ms_per_request": round(theirs.cpu_ms, 4),
        "ratio": round(ours.cpu_ms / theirs.cpu_ms, 3),
        "p99_ms": round(ours.p99, 2),
    }


def _served_by(server: str, path: Workload, ctx: ssl.SSLContext) -> bool:
    try:
        asyncio.run(load(server, path, 1, 1, ctx, {}))
        return True
    except (RuntimeError, aiohttp.ClientError, OSError):
        return False


def seed(cluster: localcluster.Cluster, exporter: Exporter) -> None:
    for ns, n in (("b100", 100), ("b1k", 1000)):
        cluster.kubectl("create", "namespace", ns, check=False)
        items = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
                "spec": {
                    "nodeName": NODES[i % 3],
                    "containers": [{"name": "main", "image": "example.invalid/web"}],
                },
            }
            for i, name in enumerate(pods_of(ns, n))
        ]
        for i in range(0, len(items), 250):
            cluster.kubectl(
                "apply", "--server-side", "-f", "-", timeout=300,
                input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items[i : i + 250]}),
            )  # fmt: skip
        for j, name in enumerate(pods_of(ns, n)):
            exporter.set(f'bench_load{{namespace="{ns}",pod="{name}",slot="s"}}', j % 7)
            if ns == "b100":
                node = NODES[j % 3]
                exporter.set(
                    f'bench_container_cpu{{namespace="{ns}",pod="{name}",container="main",node="{node}"}}',
                    0.25,
                )
                exporter.set(
                    f'bench_container_memory{{namespace="{ns}",pod="{name}",container="main",node="{node}"}}',
                    2**27,
                )
    cluster.kubectl("create", "namespace", "bench", check=False)
    for q in range(QUEUES):
        exporter.set(f'bench_queue_depth{{namespace="bench",queue="q{q}"}}', q)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=3000, help="per phase (pods/* over 1,000 pods: a third)")
    ap.add_argument(
        "--seconds", type=float, default=PHASE_SECONDS, help="per phase at most (whichever ends first)"
    )
    ap.add_argument("--concurrency", default="8,32")
    ap.add_argument("--paths", default="", help="only these paths (comma-separated names, e.g. 'external')")
    ap.add_argument("--promhpa-flag", action="append", default=[], help="an extra flag for promhpa's adapter")
    ap.add_argument("--no-aggregator", action="store_true", help="skip the through-the-aggregator rows")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="after each path where promhpa's CPU per request is over GOAL x prometheus-adapter's "
        "(its limits raised), one more phase sampled by py-spy: where promhpa's CPU went",
    )
    ap.add_argument(
        "--update-docs", action="store_true", help=f"write the table into {DOCS.relative_to(ROOT)}"
    )
    a = ap.parse_args()
    if a.profile and not py_spy():
        print("py-spy is not installed: it comes with the dev extras (make venv)")
        return 2
    if not loadgen_binary().exists():
        print("the load generator is not built: run `hack/build-tools.sh bench` (make bench-adapter does)")
        return 2
    ready = setup("promhpa-side-by-side-", "bench-adapter")
    if ready is None:
        return 2
    work, cluster, exporter = ready
    prom: PrometheusProcess | None = None
    adapters: list[Served] = []
    rows = [HEADER, "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    figures: list[dict[str, object]] = []
    found: dict[str, profiles.Profile] = {}
    try:
        cluster.up()
        prom = PrometheusProcess(str(prometheus_path()), work, exporter.port)
        seed(cluster, exporter)
        prom.start()
        wait_until(lambda: len(prom.query("bench_load")) == 1100, timeout=90, what="1,100 series scraped")
        adapters = start_both(cluster, prom, work, a.promhpa_flag)
        aggregator = aggregator_identity(cluster)
        for distinct in (True, False):
            for path in paths(distinct):
                if a.paths and path.name not in a.paths.split(","):
                    continue
                for conc in (int(c) for c in a.concurrency.split(",")):
                    n = a.requests // 3 if path.items >= 1000 else a.requests
                    got: dict[str, list[Figures]] = {x.name: [] for x in adapters}
                    for _ in range(a.rounds):
                        for x in adapters:
                            got[x.name].append(measure(x, path, n, conc, aggregator, seconds=a.seconds))
                    ours = median(got["promhpa"])
                    raw = raw_prometheus(prom.url, path, n, conc, a.seconds)
                    kind = "distinct" if distinct else "repeated"
                    for name in LIMITS:
                        theirs = median(got[name])
                        rows.append(row(path.name, kind, conc, ours, name, theirs, raw))
                        figures.append(figure(path.name, kind, conc, ours, name, theirs))
                        print(rows[-1], flush=True)
                    if a.profile and misses_goal(ours, median(got[RAISED_NAME])):
                        out = work / f"profile-{len(found)}.txt"
                        with sampled(adapters[0], out):
                            measure(adapters[0], path, n, conc, aggregator, seconds=a.seconds)
                        found[f"{path.name} ({kind}, concurrency {conc})"] = profiles.read(out, ROOT)
        if not a.no_aggregator:
            agg_rows, agg_figures, agg_found = through_aggregator(
                cluster, adapters, work, a.requests, a.seconds, work if a.profile else None
            )
            rows += agg_rows
            figures += agg_figures
            found.update(agg_found)
            print("\n".join(rows[-4:]), flush=True)
    finally:
        for x in adapters:
            stop(x)
        if prom is not None:
            prom.stop()
        exporter.close()
        cluster.down(quiet=True)
    note = (
        f"(median of {a.rounds} round{'s' if a.rounds > 1 else ''}; the adapters, Prometheus, the "
        "control plane and the load generator share the machine's cores; req/s ratio > 1 and p99 "
        "ratio < 1 favour promhpa; "
        f"prometheus-adapter at its default client limits and with {' '.join(RAISED_LIMITS)})"
    )
    print("\n".join(rows))
    print("\n" + note)
    shown = [profiles.PROFILE_HEADER, profiles.PROFILE_ALIGN]
    for path_name, prof in found.items():
        shown += profiles.rows(path_name, prof)
    if found:
        print("\n".join(shown))
    if a.update_docs:
        update_section(DOCS, "bench-adapter", invocation(), [*rows, "", note])
        update_figures("side_by_side", figures, lambda _: True)
        if a.profile:
            met = ["(every path met the goal: nothing to profile)"]
            update_section(DOCS, "bench-adapter-profile", invocation(), shown if found else met)
    return 0


if __name__ == "__main__":
    sys.exit(main())
