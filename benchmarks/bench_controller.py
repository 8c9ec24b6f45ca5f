"""Controller benchmark on the local control plane: `make bench-controller`.

For each N (default 100, 1,000, 2,000): N Deployments of P kwok pods (default 10), one HPA
each with one External metric served by the registered adapter from a real Prometheus, and
the controller as a real process (default sync period 15s, 5 workers). After the first full
round it measures for one window: reconciles per second, p50/p99 reconcile latency (from
the controller's own histogram), CPU seconds per reconcile and peak RSS of the controller
process. Then kube-controller-manager v1.37.2, running only its HPA controller, does the
same on the same HPAs (ours stopped), measured the same way from its own
``horizontal_pod_autoscaler_controller_reconciliation_duration_seconds``; the table shows
both and the ratios. Goals: CPU per reconcile <= 0.5x kcm's and RSS <= kcm's. Loopback
only; each phase is bounded in time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import localcluster
from benchmarks.doc_tables import invocation, update_section
from localcluster.manifests import external_metric, hpa_manifest
from localcluster.prometheus import Exporter
from localcluster.promhpa import (
    external_rules,
    start_controller_process,
    start_hpa_only_kcm,
    stop_process,
)
from localcluster.rig import Rig
from localcluster.tools import free_port, wait_until

RULES = external_rules("bench_queue_depth")
NS = "bench"
# Both controllers build their Kubernetes clients with --kube-api-qps/--kube-api-burst (20/30
# by default, kube-controller-manager's too). At the defaults the table measures the limit
# as users meet it; raised, it measures the controllers.
LIMITS = {
    "default": ("defaults (qps 20, burst 30)", ()),
    "raised": ("qps 1000, burst 2000", ("--kube-api-qps=1000", "--kube-api-burst=2000")),
    # both controllers' own knob for throughput: 50 reconciles in flight instead of 5
    "workers": (
        "qps 1000, burst 2000, 50 workers",
        ("--kube-api-qps=1000", "--kube-api-burst=2000", "--concurrent-horizontal-pod-autoscaler-syncs=50"),
    ),
}
HEADER = (
    "| HPAs | pods each | client limits | setup s (new pods) | promhpa reconciles/s | p50 ms | p99 ms "
    "| CPU ms/reconcile | peak RSS MiB | scale req/s | kcm reconciles/s | kcm CPU ms/reconcile "
    "| kcm peak RSS MiB | kcm scale req/s | CPU ratio | RSS ratio |"
)
DOCS = Path(__file__).resolve().parent.parent / "docs" / "controller.md"


def apply_chunks(cluster: localcluster.Cluster, items: list[dict[str, object]], chunk: int = 200) -> None:
    for i in range(0, len(items), chunk):
        cluster.kubectl(
            "apply",
            "--server-side",
            "-f",
            "-",
            timeout=300,
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items[i : i + chunk]}),
        )


def running_pods(cluster: localcluster.Cluster) -> int:
    out = cluster.kubectl(
        "-n", NS, "get", "pods", "--field-selector=status.phase=Running", "-o", "name", timeout=300
    )
    return len(out.stdout.split())


def scrape(url: str) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # kcm's self-signed serving cert
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10, context=ctx) as r:
            return str(r.read().decode())
    except OSError:  # not listening yet
        return ""


def histogram(text: str) -> tuple[float, list[tuple[float, float]]]:
    """Total count and (le, cumulative count) buckets of the reconciliation duration histogram."""
    buckets: dict[float, float] = {}
    for m in re.finditer(r'reconciliation_duration_seconds_bucket\{[^}]*le="([^"]+)"\} ([0-9.e+]+)', text):
        le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
        buckets[le] = buckets.get(le, 0.0) + float(m.group(2))
    ordered = sorted(buckets.items())
    return (ordered[-1][1] if ordered else 0.0), ordered


def quantile(q: float, before: list[tuple[float, float]], after: list[tuple[float, float]]) -> float:
    diff = [(le, a - dict(before).get(le, 0.0)) for le, a in after]
    total = diff[-1][1] if diff else 0
    for le, count in diff:
        if count >= q * total:
            return le
    return float("inf")


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def peak_rss_mib(pid: int) -> float:
    m = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(m.group(1)) / 1024 if m else 0.0


def deployment(i: int, pods: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"d{i}", "namespace": NS},
        "spec": {
            "replicas": pods,
            "selector": {"matchLabels": {"app": f"d{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"d{i}"}},
                "spec": {"containers": [{"name": "c", "image": "example.invalid/b"}]},
            },
        },
    }


def hpa(i: int, pods: int) -> dict[str, object]:
    queue = external_metric("bench_queue_depth", "5", {"queue": f"q{i}"})
    return hpa_manifest(NS, f"d{i}", queue, max_replicas=pods * 2)


def run_size(
    cluster: localcluster.Cluster,
    exporter: Exporter,
    n: int,
    done: int,
    pods: int,
    sync: int,
    work: Path,
    rounds: int = 1,
    periods: int = 2,
    profile: Path | None = None,
    profile_rate: int = 200,
    limits: tuple[str, ...] = ("default",),
) -> list[str]:
    """Grows the namespace from `done` to `n` Deployments + HPAs, then measures a fresh controller
    at each of ``limits`` (keys of ``LIMITS``), one row each.

    Growing (rather than recreating) keeps setup to the new pods only: creating pods runs at
    about 60/s on this machine, deleting them is slower still. With ``rounds`` > 1 each
    side is measured that many times, taking turns, and the row shows each figure's median.
    """
    t0 = time.monotonic()
    apply_chunks(cluster, [deployment(i, pods) for i in range(done, n)])
    wait_until(
        lambda: running_pods(cluster) >= n * pods,
        timeout=120 + (n - done) * pods * 0.1,
        what=f"{n * pods} pods",
    )
    setup = time.monotonic() - t0
    for i in range(done, n):  # exactly on target: every reconcile decides, none rescales
        exporter.set(f'bench_queue_depth{{namespace="{NS}",queue="q{i}"}}', pods * 5)
    hpas = [hpa(i, pods) for i in range(done, n)]
    apply_chunks(cluster, hpas)
    return [
        measure_both(cluster, n, pods, setup, sync, work, rounds, periods, profile, profile_rate, key)
        for key in limits
    ]


def measure_both(
    cluster: localcluster.Cluster,
    n: int,
    pods: int,
    setup: float,
    sync: int,
    work: Path,
    rounds: int,
    periods: int,
    profile: Path | None,
    profile_rate: int,
    key: str,
) -> str:
    """Each side ``rounds`` times at the client limits ``LIMITS[key]``, taking turns."""
    label, flags = LIMITS[key]
    ours_runs: list[Run] = []
    their_runs: list[Run] = []
    for r in range(rounds):  # alternately, so drift in the shared machine touches both
        port = free_port()
        proc = start_controller_process(
            cluster.kubeconfig,
            work / f"controller-{n}-{key}-{r}.log",
            f"--horizontal-pod-autoscaler-sync-period={sync}s",
            f"--secure-port={port}",
            # kube-controller-manager's /metrics is open here too (start_hpa_only_kcm)
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--log-level=warning",
            *flags,
        )
        try:
            ours_runs.append(
                measure(
                    cluster,
                    proc,
                    f"https://127.0.0.1:{port}",
                    n,
                    sync,
                    periods,
                    profile.with_name(f"{profile.name}-{n}-{key}.txt") if profile and r == 0 else None,
                    profile_rate,
                )
            )
        finally:
            stop_process(proc)
        kcm_port = free_port()
        kcm = start_kcm(cluster, work / f"kcm-{n}-{key}-{r}.log", kcm_port, sync, flags)
        try:
            their_runs.append(measure(cluster, kcm, f"https://127.0.0.1:{kcm_port}", n, sync, periods))
        finally:
            stop_process(kcm)
    ours, theirs = median_run(ours_runs), median_run(their_runs)
    for r, (o, t) in enumerate(zip(ours_runs, their_runs, strict=True)):
        print(
            f"{n} HPAs, {label}, round {r + 1}: CPU ms/reconcile {o.cpu_ms:.2f} "
            f"({o.sys_share:.0%} system) vs kcm {t.cpu_ms:.2f} ({t.sys_share:.0%} system): "
            f"{o.cpu_ms / t.cpu_ms:.2f}",
            flush=True,
        )
    return (
        f"| {n} | {pods} | {label} | {setup:.0f} | {ours.rate:.1f} | {ours.p50:.0f} | {ours.p99:.0f} | "
        f"{ours.cpu_ms:.2f} | {ours.rss:.0f} | {ours.scale_rps:.1f} | {theirs.rate:.1f} | "
        f"{theirs.cpu_ms:.2f} | {theirs.rss:.0f} | {theirs.scale_rps:.1f} | "
        f"**{ours.cpu_ms / theirs.cpu_ms:.2f}** | **{ours.rss / theirs.rss:.2f}** |"
    )


@dataclass
class Run:
    rate: float
    p50: float
    p99: float
    cpu_ms: float
    rss: float
    sys_share: float = 0.0  # of cpu_ms, the part spent in the kernel (sockets, mostly)
    scale_rps: float = 0.0  # scale-subresource requests/s, as the API server counted them


_SCALE_CALLS = re.compile(r'^apiserver_request_total\{(?=[^}]*subresource="scale")[^}]*\} (\S+)$', re.M)


def scale_calls(cluster: localcluster.Cluster) -> float:
    """Scale-subresource requests the API server has counted so far: the scale client's,
    whose --kube-api-qps bucket every reconcile draws on (nothing else reads scales here)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    return sum(float(v) for v in _SCALE_CALLS.findall(text))


def median_run(runs: list[Run]) -> Run:
    """Each figure's median over the rounds (CPU and RSS separately: one noisy round moves neither)."""
    return Run(*(statistics.median(getattr(r, f.name) for r in runs) for f in dataclasses.fields(Run)))


def py_spy() -> str:
    """py-spy from PATH or beside this interpreter (a virtualenv's bin, not on PATH under make)."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else "")


def measure(
    cluster: localcluster.Cluster,
    proc: subprocess.Popen[bytes],
    url: str,
    n: int,
    sync: int,
    periods: int = 2,
    profile: Path | None = None,
    rate: int = 200,
) -> Run:
    """After the first full round: reconciles, latency, CPU per reconcile over ``periods`` sync periods
    (CPU comes from /proc in clock ticks of 10 ms: more periods, finer figures).
    With ``profile``, py-spy samples the process over that window (without pausing it) into
    that file, as collapsed stacks (``--profile`` in the options)."""
    wait_until(lambda: histogram(scrape(url))[0] >= n, timeout=300 + n * 0.2, what="the first full round")
    scales0 = scale_calls(cluster)
    before_text, cpu0, t_start = scrape(url), cpu_seconds(proc.pid), time.monotonic()
    spy = None
    if profile is not None:
        spy = subprocess.Popen(
            [py_spy(), "record", "--nonblocking", "-r", str(rate), "-f", "raw", "-p", str(proc.pid),
             "-d", str(sync * periods), "-o", str(profile)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    time.sleep(sync * periods)
    if spy is not None:
        spy.wait(timeout=60)
    after_text, cpu1, elapsed = scrape(url), cpu_seconds(proc.pid), time.monotonic() - t_start
    scales = scale_calls(cluster) - scales0
    (c0, b0), (c1, b1) = histogram(before_text), histogram(after_text)
    count = c1 - c0
    user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    return Run(
        count / elapsed,
        quantile(0.5, b0, b1) * 1000,
        quantile(0.99, b0, b1) * 1000,
        (user + system) / max(count, 1) * 1000,
        peak_rss_mib(proc.pid),
        system / max(user + system, 1e-9),
        scales / elapsed,
    )


def start_kcm(
    cluster: localcluster.Cluster, log: Path, port: int, sync: int, limits: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """kube-controller-manager v1.37.2 running only its HPA controller, on the same HPAs."""
    return start_hpa_only_kcm(
        cluster, log, port, f"--horizontal-pod-autoscaler-sync-period={sync}s", "--v=0", *limits
    )


def fleet_flags(ap: argparse.ArgumentParser, sizes: str, pods: str) -> None:
    """The fleet a controller benchmark measures: its sizes, pods per target, sync period and
    measuring window (this benchmark's and ``benchmarks.scale``'s)."""
    ap.add_argument("--sizes", default=sizes, help="numbers of HPAs, comma-separated")
    ap.add_argument("--pods", type=int, default=10, help=pods)
    ap.add_argument("--sync-period", type=int, default=15)
    ap.add_argument("--periods", type=int, default=2, help="sync periods in each measuring window")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fleet_flags(ap, "100,1000,2000", "kwok pods per Deployment")
    ap.add_argument("--rounds", type=int, default=3, help="measurements of each side per size, taking turns")
    ap.add_argument(
        "--profile",
        type=Path,
        help="sample promhpa's controller with py-spy during each measuring window into PROFILE-N.txt "
        "(collapsed stacks; py-spy comes with the dev extras: make venv)",
    )
    ap.add_argument("--profile-rate", type=int, default=200, help="py-spy samples per second")
    ap.add_argument(
        "--limits",
        default="default,raised",
        help="client limits to measure both at, comma-separated: "
        + ", ".join(f"{k} ({v[0]})" for k, v in LIMITS.items()),
    )
    ap.add_argument("--update-docs", action="store_true", help="write the table into docs/controller.md")
    a = ap.parse_args()
    limits = tuple(k.strip() for k in a.limits.split(",") if k.strip())
    if not limits or any(k not in LIMITS for k in limits):
        ap.error(f"--limits: expected some of {', '.join(LIMITS)}, got {a.limits!r}")
    if a.profile is not None and not py_spy():
        print("--profile needs py-spy: `make venv` installs it (or pip install py-spy)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="promhpa-bench-controller-"))
    rows = [HEADER, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    with Rig(localcluster.Cluster(work / "cluster"), work) as rig:
        cluster, exporter = rig.cluster, rig.exporter
        rig.publish(f'bench_queue_depth{{namespace="{NS}",queue="seed"}}', 0)
        rig.adapter(RULES)
        cluster.kubectl("create", "namespace", NS)
        done = 0
        for n in sorted(int(x) for x in a.sizes.split(",")):
            got = run_size(
                cluster, exporter, n, done, a.pods, a.sync_period, work, a.rounds, a.periods,
                a.profile, a.profile_rate, limits,
            )  # fmt: skip
            rows += got
            print("\n".join(got), flush=True)
            done = n
    note = (
        f"(median of {a.rounds} round{'s' if a.rounds > 1 else ''}, one after the other on the same "
        "HPAs, pods and adapter; p50/p99 are histogram bucket bounds; ratios are promhpa / kcm, below 1 "
        "favours promhpa; both share two cores with the control plane; client limits are "
        "--kube-api-qps/--kube-api-burst, the same for both, per client; scale req/s is the scale "
        "client's rate as the kube-apiserver counted it)"
    )
    print("\n".join(rows))
    print(note)
    if a.update_docs:
        update_section(DOCS, "bench-controller", invocation(), [*rows, "", note])
    return 0


if __name__ == "__main__":
    sys.exit(main())
