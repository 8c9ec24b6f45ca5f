"""Where the real components come from: versions (hack/versions.env), the binary cache,
the build script, free loopback ports, and the one error type of the package."""

from __future__ import annotations

import hashlib
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _versions() -> dict[str, str]:
    """hack/versions.env, the one list of component versions; the environment overrides it."""
    out: dict[str, str] = {}
    for line in (ROOT / "hack" / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = os.environ.get(key.strip()) or value.strip().strip('"')
    return out


_V = _versions()
K8S_VERSION, ETCD_VERSION, KWOK_VERSION, HELM_VERSION, PROMETHEUS_VERSION = (
    _V["K8S_VERSION"],
    _V["ETCD_VERSION"],
    _V["KWOK_VERSION"],
    _V["HELM_VERSION"],
    _V["PROMETHEUS_VERSION"],
)
THANOS_VERSION = _V["THANOS_VERSION"]
PROMETHEUS_ADAPTER_VERSION = _V["PROMETHEUS_ADAPTER_VERSION"]
KEDA_VERSION = _V["KEDA_VERSION"]
HYDRA_VERSION = _V["HYDRA_VERSION"]
MIMIR_VERSION = _V["MIMIR_VERSION"]
# the real node's parts (localcluster.node)
NODE_PARTS = "-".join(
    _V[k] for k in ("CONTAINERD_VERSION", "RUNC_VERSION", "CNI_PLUGINS_VERSION", "COREDNS_VERSION")
)
# the releases promhpa decides as; the differential harness is built for each
DIFFERENTIAL_VERSIONS = tuple(_V["DIFFERENTIAL_VERSIONS"].split())
# an older release the shadow test runs a whole control plane of, beside its kcm
K8S_OLDER_VERSION = _V["K8S_OLDER_VERSION"]


def prometheus_major() -> str:
    """Which Prometheus the local cluster and the tests run: 3 (default) or 2 (Debian's 2.x),
    from PROMHPA_PROMETHEUS (``make test PROMETHEUS=2``)."""
    major = os.environ.get("PROMHPA_PROMETHEUS", "3")
    if major not in ("2", "3"):
        raise ClusterError(f"PROMHPA_PROMETHEUS={major!r}: use 3 (the default) or 2")
    return major


FAKE_NODES = ("kwok-node-0", "kwok-node-1", "kwok-node-2")
# a pod's port that kwok port-forwards to the cluster's "forwarded" loopback port: the
# chart's controller port, so a test's controller is reached as the chart's would be
FORWARDED_POD_PORT = 10258


def log(msg: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class ClusterError(RuntimeError):
    """The control plane could not be started; the message says which part and where its log is."""


def cache_bin() -> Path:
    return Path(os.environ.get("PROMHPA_CACHE", Path.home() / ".cache" / "promhpa")) / "bin"


def tools_cached() -> bool:
    """True when every binary is already built (so bring-up takes seconds, not a cold build)."""
    b = Binaries(cache_bin())
    names = ["etcd", "apiserver", "controller_manager", "scheduler", "kubectl", "kwok", "helm"]
    names += ["prometheus2", "prometheus3", "thanos", "prometheus_adapter", "keda_operator", "node"]
    return all(Path(getattr(b, n)).exists() for n in names)


def tools_dir(k8s_version: str = K8S_VERSION, node: bool = False) -> Path:
    """Build (or find cached) binaries, Kubernetes at ``k8s_version``; returns the cache's
    bin directory. The real node's parts are built for K8S_VERSION's cluster, or ``node``."""
    with_node = node or k8s_version == K8S_VERSION
    out = subprocess.run(
        [str(ROOT / "hack" / "build-tools.sh")],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env={**os.environ, "K8S_VERSION": k8s_version, "PROMHPA_NODE": "1" if with_node else "0"},
    )
    if out.returncode != 0:
        raise ClusterError("hack/build-tools.sh failed (see its output above)")
    return Path(out.stdout.strip().splitlines()[-1])


@dataclass
class Binaries:
    bin: Path
    k8s: str = K8S_VERSION  # the Kubernetes release of the four Kubernetes binaries

    def __getattr__(self, name: str) -> str:
        table = {
            "etcd": f"etcd-{ETCD_VERSION}/etcd",
            "apiserver": f"k8s-{self.k8s}/kube-apiserver",
            "controller_manager": f"k8s-{self.k8s}/kube-controller-manager",
            "scheduler": f"k8s-{self.k8s}/kube-scheduler",
            "kubectl": f"k8s-{self.k8s}/kubectl",
            "kwok": f"kwok-{KWOK_VERSION}/kwok",
            "helm": f"helm-{HELM_VERSION}/helm",
            "prometheus2": "prometheus-debian/prometheus",
            "prometheus3": f"prometheus-{PROMETHEUS_VERSION}-k8s-sd/prometheus",
            "thanos": f"thanos-{THANOS_VERSION}/thanos",
            "prometheus_adapter": f"prometheus-adapter-{PROMETHEUS_ADAPTER_VERSION}/adapter",
            "keda_operator": f"keda-{KEDA_VERSION}/operator",
            "keda_adapter": f"keda-{KEDA_VERSION}/adapter",
            "keda_crds": f"keda-{KEDA_VERSION}/crds",
            "hydra": f"hydra-{HYDRA_VERSION}-sqlite/hydra",  # its in-memory store is SQLite
            "mimir": f"mimir-{MIMIR_VERSION}/mimir",
            # the real node's binaries (a directory): the pause program's source is in its key
            "node": f"node-{self.k8s}-{NODE_PARTS}-{_pause_hash()}",
        }
        if name == "prometheus":  # the one the tests and the local cluster run
            name = f"prometheus{prometheus_major()}"
        if name not in table:
            raise AttributeError(name)
        return str(self.bin / table[name])

    @property
    def goregexp(self) -> str:
        """Go's regexp behind a JSON driver (cached by a hash of its source, as
        hack/build-tools.sh does)."""
        src = ROOT / "tests" / "rules" / "goregexp"
        digest = hashlib.sha256((src / "go.mod").read_bytes() + (src / "main.go").read_bytes()).hexdigest()
        return str(self.bin / f"goregexp-{digest[:12]}" / "goregexp")

    def differential_for(self, version: str) -> str:
        """upstream's controller package of one release, behind the differential driver
        (cached by release and a hash of the driver's sources, as hack/build-tools.sh does)."""
        harness = ROOT / "tests" / "differential" / "harness"
        names = ["main.go.in", "selectors_bimultimap.go.in", "selectors_tracker.go.in"]
        names.append("zz_promhpa_harness.go")
        digest = hashlib.sha256(b"".join((harness / n).read_bytes() for n in names)).hexdigest()[:12]
        return str(self.bin / f"hpa-differential-{version}-{digest}" / "hpa-differential")

    @property
    def kwok_stages(self) -> list[str]:
        stage = self.bin / f"kwok-{KWOK_VERSION}" / "stage"
        return [
            str(stage / p)
            for p in (
                "node/fast/node-initialize.yaml",
                "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                "pod/fast/pod-ready.yaml",
                "pod/fast/pod-complete.yaml",
                "pod/fast/pod-delete.yaml",
            )
        ]


def _pause_hash() -> str:
    return hashlib.sha256((ROOT / "localcluster" / "pause" / "pause.c").read_bytes()).hexdigest()[:8]


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    """Whether an object's status carries the condition ``kind`` (Ready, Available) as True."""
    conditions = obj.get("status", {}).get("conditions", [])
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def insecure_tls() -> ssl.SSLContext:
    """A client context that trusts any certificate: for a local process's own self-signed one."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def wait_http(url: str, what: str, timeout: float = 30, context: ssl.SSLContext | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as r:
                if r.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} did not become ready at {url} within {timeout}s")


def terminate(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL if ``proc`` has not ended within ``timeout``; reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_until(predicate: Any, timeout: float = 15, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
