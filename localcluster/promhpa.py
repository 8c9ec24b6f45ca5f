"""promhpa's own processes on the local cluster: the adapter (optionally registered with the
aggregation layer) and the controller, started and stopped for tests, benchmarks and the demo."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cluster import Cluster
from .manifests import adapter_manifests, binding, cluster_role, service_account_kubeconfig
from .prometheus import PrometheusProcess
from .tools import ROOT, Binaries, cache_bin, free_port, insecure_tls, wait_http, wait_until


def external_rules(metric: str, by: str = "queue") -> str:
    """A rule file serving one series name as an external metric, summed (by ``by`` if set):
    the one-metric setup the deadline, overload and benchmark runs share."""
    grouping = f" by ({by})" if by else ""
    return f"""
externalRules:
- seriesQuery: '{{__name__="{metric}"}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}}}}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}){grouping}'
"""


def pods_rules(prefix: str) -> str:
    """A rule file's ``rules:`` serving every ``<prefix>_*`` series with namespace and pod
    labels as a Pods metric named without the prefix, summed per pod: the custom-metric setup
    the demo, the live tests and the benchmarks share."""
    return f"""
rules:
- seriesQuery: '{{__name__=~"^{prefix}_.*",namespace!="",pod!=""}}'
  resources:
    overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}
  name: {{matches: "^{prefix}_(.*)$", as: "${{1}}"}}
  metricsQuery: 'sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)'
"""


@dataclass
class AdapterProcess:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    ctx: ssl.SSLContext
    health_port: int = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=15, context=self.ctx) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            with e:  # an error response holds its socket until closed
                return e.code, json.loads(e.read())

    def text(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=10, context=self.ctx) as r:
            return str(r.read().decode())


def python_m(
    log: Path, *args: str, prefix: tuple[str, ...] = (), env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``python -m <args>`` from the checkout, its output appended to ``log``; ``prefix`` runs
    it under another command, ``env`` adds to this process's environment."""
    with open(log, "ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [*prefix, sys.executable, "-m", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **env} if env else None,
        )


def start_adapter(
    directory: Path,
    prometheus_url: str,
    config: str,
    *extra: str,
    insecure: bool = True,
    port: int | None = None,
    prefix: tuple[str, ...] = (),
) -> AdapterProcess:
    """``python -m adapter`` on loopback, ready; ``prefix`` runs it under another command
    (``unshare --pid --fork``: as a PID namespace's process 1, as in a container)."""
    cfg = directory / "adapter.yaml"
    cfg.write_text(config)
    port = port or free_port()
    health_port = free_port()
    log = directory / "adapter.log"
    proc = python_m(
        log,
        "adapter",
        *(["--insecure-skip-auth"] if insecure else []),
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--health-port={health_port}",
        f"--prometheus-url={prometheus_url}",
        f"--config={cfg}",
        f"--cert-dir={directory / 'certs'}",
        "--log-format=console",
        *extra,
        prefix=prefix,
    )
    # the test trusts the adapter's fresh self-signed certificate
    return _ready(AdapterProcess(port, proc, log, insecure_tls(), health_port), "/readyz", "adapter", 30)


def _ready(a: AdapterProcess, path: str, what: str, timeout: float) -> AdapterProcess:
    """``a`` once ``path`` answers; stopped, with its log's tail, if it does not in time."""
    try:
        wait_http(f"{a.url}{path}", what, timeout=timeout, context=a.ctx)
    except AssertionError:
        stop_adapter(a)
        raise AssertionError(f"{what} did not become ready:\n" + a.log.read_text()[-3000:]) from None
    return a


def stop_adapter(a: AdapterProcess) -> None:
    if a.proc.poll() is None:
        stop_process(a.proc, timeout=10)


def register_and_start_adapter(
    cluster: Cluster, prometheus: PrometheusProcess, work: Path, config: str, *extra: str
) -> AdapterProcess:
    """The adapter registered as a cluster would do it, running with its ServiceAccount's token."""
    import json as _json

    from shared.tls import self_signed

    port = free_port()
    cert, key = self_signed(work / "certs", ["promhpa-adapter.promhpa.svc"])
    manifests = adapter_manifests(
        "promhpa", "promhpa-adapter", port, cert.read_bytes(), resource_metrics=True
    )
    # a fresh registration: an APIService left by an adapter stopped moments ago can still
    # say Available (the aggregator has not checked it since), and flip to unavailable just
    # after this one is judged ready -- its first request then got a 503
    apis = [m["metadata"]["name"] for m in manifests if m["kind"] == "APIService"]
    cluster.kubectl("delete", "apiservice", "--ignore-not-found", "--wait=true", *apis, timeout=120)
    cluster.apply(manifests)
    kubeconfig = service_account_kubeconfig(
        cluster, "promhpa", "promhpa-adapter", work / "adapter.kubeconfig"
    )
    a = start_adapter(
        work,
        prometheus.url,
        config,
        f"--kubeconfig={kubeconfig}",
        f"--tls-cert-file={cert}",
        f"--tls-private-key-file={key}",
        "--query-cache-ttl=0s",
        *extra,
        insecure=False,
        port=port,
    )

    def available() -> bool:
        out = _json.loads(cluster.kubectl("get", "apiservices", "-o", "json").stdout)["items"]
        mine = [s for s in out if s["spec"].get("service")]
        return len(mine) == 5 and all(
            any(
                c["type"] == "Available" and c["status"] == "True"
                for c in s.get("status", {}).get("conditions", [])
            )
            for s in mine
        )

    def answered() -> bool:  # through the aggregator, each registered group version
        return all(
            cluster.kubectl("get", "--raw", f"/apis/{g}/{v}", check=False).returncode == 0
            for v, _, g in (name.partition(".") for name in apis)
        )

    try:
        wait_until(lambda: available() and answered(), timeout=60, what="APIServices Available")
    except AssertionError:
        stop_adapter(a)
        raise
    return a


def controller_get(kubeconfig: Path, port: int, path: str) -> bytes:
    """GET ``path`` from a controller's HTTPS endpoints as the kubeconfig's user (the local
    cluster's admin); its certificate is its own self-signed one."""
    from controller.endpoint_client import get

    return get(f"https://127.0.0.1:{port}{path}", kubeconfig=str(kubeconfig), insecure=True)


def controller_get_json(kubeconfig: Path, port: int, path: str) -> Any:
    return json.loads(controller_get(kubeconfig, port, path))


def start_prometheus_adapter(
    cluster: Cluster,
    directory: Path,
    prometheus_url: str,
    config: str,
    dns_name: str = "prometheus-adapter.local",
) -> AdapterProcess:
    """prometheus-adapter v0.12.0 on loopback (built by ``make cluster-tools``), its
    authentication and authorization delegated to the cluster, as a cluster would run it."""
    from shared.tls import self_signed

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pa.yaml").write_text(config)
    cert, key = self_signed(directory / "pa-certs", [dns_name])
    port = free_port()
    log = directory / "prometheus-adapter.log"
    kubeconfig = str(cluster.kubeconfig)
    out = open(log, "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [Binaries(cache_bin()).prometheus_adapter, f"--prometheus-url={prometheus_url}",
         f"--config={directory / 'pa.yaml'}", "--bind-address=127.0.0.1", f"--secure-port={port}",
         f"--lister-kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
         f"--authorization-kubeconfig={kubeconfig}", f"--tls-cert-file={cert}",
         f"--tls-private-key-file={key}", "--metrics-relist-interval=5s", "--v=0"],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    out.close()
    return _ready(AdapterProcess(port, proc, log, insecure_tls()), "/healthz", "prometheus-adapter", 60)


AS_PID_1 = ("unshare", "--pid", "--fork")  # a PID namespace of its own: the command is its process 1


def namespace_init(proc: subprocess.Popen[bytes], timeout: float = 10) -> int:
    """The host PID of the process ``AS_PID_1`` started (``proc`` is unshare itself),
    checked to be process 1 of its namespace -- what a container runtime signals."""

    wait_until(lambda: _child(proc.pid) is not None, timeout, "the namespace's process 1")
    pid = _child(proc.pid)
    assert pid is not None
    status = Path(f"/proc/{pid}/status").read_text()
    nspid = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
    if nspid[-1] != "1":
        raise AssertionError(f"process {pid} is {nspid[-1]} in its namespace, not 1")
    return pid


def start_controller_process(
    kubeconfig: Path,
    log: Path,
    *flags: str,
    prefix: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`python -m controller run` on loopback with its output appended to ``log`` (its
    endpoints on a free port unless ``flags`` name one; self-signed, in the log's folder);
    ``env`` adds to this process's environment (a pod's ``POD_NAME``, say)."""
    port = (
        ()
        if any(f.startswith(("--port=", "--secure-port=")) for f in flags)
        else (f"--secure-port={free_port()}",)
    )
    return python_m(
        log,
        "controller",
        "run",
        f"--kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--cert-dir={log.parent / (log.stem + '-certs')}",
        *flags,
        *port,
        prefix=prefix,
        env=env,
    )


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM (a clean stop: the controller hands its Lease over), then SIGKILL. A process
    started ``AS_PID_1`` is signalled through its namespace's process 1 (which ``unshare``
    does not forward to), and SIGKILLed there too if it does not stop."""
    if proc.poll() is not None:
        return
    try:
        unshared = Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"unshare")
    except OSError:
        unshared = False
    target = (_child(proc.pid) if unshared else None) or proc.pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(target, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(target, signal.SIGKILL)  # a namespace's process 1 killed takes the namespace with it
        proc.kill()
        proc.wait()


def _child(pid: int) -> int | None:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


def cpu_deployment(namespace: str, name: str, request: str = "100m") -> dict[str, Any]:
    """A one-replica Deployment whose container requests CPU (for Resource metrics)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": f"example.invalid/{name}",
                            "resources": {"requests": {"cpu": request}},
                        }
                    ]
                },
            },
        },
    }


def start_hpa_only_kcm(cluster: Cluster, log: Path, port: int, *flags: str) -> subprocess.Popen[bytes]:
    """A second kube-controller-manager (the cluster's own runs without it) that runs only
    the HPA controller: upstream's decisions on the same HPAs, for comparisons. Its
    ``/metrics`` is open on ``port`` (TLS, self-signed)."""
    out = open(log, "ab")  # noqa: SIM115 - owned by the child
    proc = subprocess.Popen(
        [
            (cluster.bins or Binaries(cache_bin())).controller_manager,
            f"--kubeconfig={cluster.kubeconfig}",
            f"--authentication-kubeconfig={cluster.kubeconfig}",
            f"--authorization-kubeconfig={cluster.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--controllers=horizontal-pod-autoscaler-controller",
            "--leader-elect=false",
            *flags,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    return proc


def grant_forwarding(cluster: Cluster, name: str, *groups: str) -> None:
    """Lets the adapter's ServiceAccount read the metrics APIs it forwards to (``groups``):
    what an upstream provider asks of the identity promhpa presents."""
    rules = (list(groups), ["*"], ["get", "list"])
    cluster.apply([cluster_role(name, rules), binding(name, name, "promhpa", "promhpa-adapter")])


def adapter_token(cluster: Cluster, path: Path, duration: str = "1h") -> Path:
    """A token of the ServiceAccount the adapter runs as (``promhpa/promhpa-adapter``), written
    to ``path``: what the adapter presents upstream when it forwards a request."""
    cluster.kubectl("create", "namespace", "promhpa", check=False)
    cluster.kubectl("-n", "promhpa", "create", "serviceaccount", "promhpa-adapter", check=False)
    made = cluster.kubectl("-n", "promhpa", "create", "token", "promhpa-adapter", f"--duration={duration}")
    path.write_text(made.stdout.strip())
    return path
