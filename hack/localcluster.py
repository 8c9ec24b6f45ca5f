#!/usr/bin/env python3
"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver (aggregation layer,
RBAC), kube-controller-manager (its HPA controller disabled), kube-scheduler, kwok with
fake nodes, and Prometheus.

    python hack/localcluster.py up   [--dir .cluster]   start it and return; prints how to use it
    python hack/localcluster.py down [--dir .cluster]   stop exactly what `up` started, by PID
    python hack/localcluster.py status [--dir .cluster]

The same ``Cluster`` class backs the pytest fixture. Binaries come from hack/build-tools.sh
(built once, cached by version). Every process binds to 127.0.0.1 on a free port; state,
certificates, logs and PIDs live in the state directory. Only PIDs recorded in it are ever
signalled, and only while their command line is still the one we started.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROOT = Path(__file__).resolve().parent.parent


def _versions() -> dict[str, str]:
    """hack/versions.env, the one list of component versions; the environment overrides it."""
    out: dict[str, str] = {}
    for line in (ROOT / "hack" / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            out[key.strip()] = os.environ.get(key.strip()) or value.strip()
    return out


_V = _versions()
K8S_VERSION, ETCD_VERSION, KWOK_VERSION, HELM_VERSION = (
    _V["K8S_VERSION"],
    _V["ETCD_VERSION"],
    _V["KWOK_VERSION"],
    _V["HELM_VERSION"],
)
FAKE_NODES = ("kwok-node-0", "kwok-node-1", "kwok-node-2")


def log(msg: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class ClusterError(RuntimeError):
    """The control plane could not be started; the message says which part and where its log is."""


def cache_bin() -> Path:
    return Path(os.environ.get("PROMHPA_CACHE", Path.home() / ".cache" / "promhpa")) / "bin"


def tools_cached() -> bool:
    """True when every binary is already built (so bring-up takes seconds, not a cold build)."""
    b = Binaries(cache_bin())
    names = ("etcd", "apiserver", "controller_manager", "scheduler", "kubectl", "kwok", "helm", "prometheus")
    return all(Path(getattr(b, n)).exists() for n in names)


def tools_dir() -> Path:
    """Build (or find cached) binaries; returns the cache's bin directory."""
    out = subprocess.run(
        [str(ROOT / "hack" / "build-tools.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    if out.returncode != 0:
        raise ClusterError("hack/build-tools.sh failed (see its output above)")
    return Path(out.stdout.strip().splitlines()[-1])


@dataclass
class Binaries:
    bin: Path

    def __getattr__(self, name: str) -> str:
        table = {
            "etcd": f"etcd-{ETCD_VERSION}/etcd",
            "apiserver": f"k8s-{K8S_VERSION}/kube-apiserver",
            "controller_manager": f"k8s-{K8S_VERSION}/kube-controller-manager",
            "scheduler": f"k8s-{K8S_VERSION}/kube-scheduler",
            "kubectl": f"k8s-{K8S_VERSION}/kubectl",
            "kwok": f"kwok-{KWOK_VERSION}/kwok",
            "helm": f"helm-{HELM_VERSION}/helm",
            "prometheus": "prometheus-debian/prometheus",
        }
        if name not in table:
            raise AttributeError(name)
        return str(self.bin / table[name])

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- certificates -----------------------------------------------------------------------


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write(path: Path, key: rsa.RSAPrivateKey | None, cert: x509.Certificate | None) -> None:
    if key is not None:
        path.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        path.with_suffix(".key").chmod(0o600)
    if cert is not None:
        path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make_ca(path: Path, cn: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write(path, key, cert)
    return key, cert


def issue(
    path: Path,
    ca: tuple[rsa.RSAPrivateKey, x509.Certificate],
    cn: str,
    orgs: tuple[str, ...] = (),
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    server: bool = False,
) -> None:
    key = _key()
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)] + [
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs
    ]
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca[1].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if dns or ips:
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write(path, key, builder.sign(ca[0], hashes.SHA256()))


# --- processes ----------------------------------------------------------------------------


@dataclass
class Cluster:
    """One control plane, its state under ``dir``; ``up()`` returns when it is usable."""

    dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    bins: Binaries | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['prometheus']}"

    def _state_file(self) -> Path:
        return self.dir / "state.json"

    def _save(self) -> None:
        self._state_file().write_text(
            json.dumps(
                {
                    "ports": self.ports,
                    "pids": self.pids,
                    "cmdlines": self._cmdlines,
                    "bin": str(self.bins.bin if self.bins else ""),
                },
                indent=2,
            )
        )

    _cmdlines: dict[str, str] = field(default_factory=dict)
    # handles of the children this process started (a loaded cluster has none): kept so they
    # are reaped on stop instead of lingering as zombies or warning when collected
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path) -> Cluster | None:
        state = directory / "state.json"
        if not state.exists():
            return None
        data = json.loads(state.read_text())
        c = cls(directory, data["ports"], {k: int(v) for k, v in data["pids"].items()})
        c._cmdlines = data.get("cmdlines", {})
        c.bins = Binaries(Path(data["bin"])) if data.get("bin") else None
        return c

    def _alive(self, name: str) -> bool:
        """Is the process we started under this name still running?

        For our own children the Popen handle is authoritative. For a cluster loaded from
        state.json (``make cluster-down`` in another shell) the PID must still run the same
        executable with the same arguments, so a reused PID is never signalled.
        """
        proc = self._procs.get(name)
        if proc is not None:
            return proc.poll() is None
        pid = self.pids.get(name)
        if not pid:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            exe = os.readlink(f"/proc/{pid}/exe")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
        expected = self._cmdlines.get(name, "")
        same_binary = (
            exe == expected.split(" ", 1)[0] or exe.removesuffix(" (deleted)") == expected.split(" ", 1)[0]
        )
        # cmdline can read empty for an instant around exec; the executable cannot lie
        return same_binary and (cmdline.strip() in ("", expected.strip()))

    def running(self) -> bool:
        return bool(self.pids) and all(self._alive(n) for n in self.pids)

    def _start(self, name: str, argv: list[str]) -> None:
        logs = self.dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        out = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child process
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.dir,
            start_new_session=True,
        )
        out.close()
        self._procs[name] = proc
        self.pids[name] = proc.pid
        self._cmdlines[name] = " ".join(argv)
        self._save()

    def _wait(self, name: str, check: object, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._alive(name):
                raise ClusterError(
                    f"{name} exited during start-up; see {self.dir / 'logs' / (name + '.log')}:\n"
                    + self._tail(name)
                )
            try:
                if check():  # type: ignore[operator]
                    return
            except (OSError, urllib.error.URLError, subprocess.SubprocessError):
                pass
            time.sleep(0.5)
        raise ClusterError(
            f"{name} was not ready after {timeout:.0f}s; see {self.dir / 'logs' / (name + '.log')}:\n"
            + self._tail(name)
        )

    def _tail(self, name: str, lines: int = 15) -> str:
        try:
            return "\n".join(
                (self.dir / "logs" / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return "(no log)"

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        assert self.bins is not None
        proc = subprocess.run(
            [self.bins.kubectl, f"--kubeconfig={kubeconfig or self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc

    def _https_ok(self, port: int, path: str, verify: bool = True) -> bool:
        if verify:
            ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
            ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        else:  # scheduler and controller-manager serve an in-memory self-signed cert on loopback
            ctx = ssl._create_unverified_context()
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=3) as r:
            return bool(r.status == 200)

    def _http_ok(self, url: str) -> bool:
        with urllib.request.urlopen(url, timeout=3) as r:
            return bool(r.status == 200)

    # --- bring-up -------------------------------------------------------------------------

    def _certs(self) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        ca = make_ca(self.pki / "ca", "promhpa-local-ca")
        issue(
            self.pki / "apiserver",
            ca,
            "kube-apiserver",
            server=True,
            ips=("127.0.0.1",),
            dns=(
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
        )
        issue(self.pki / "admin", ca, "promhpa-admin", orgs=("system:masters",))
        front = make_ca(self.pki / "front-proxy-ca", "promhpa-front-proxy-ca")
        issue(self.pki / "front-proxy-client", front, "front-proxy-client")
        sa = _key()
        _write(self.pki / "sa", sa, None)
        (self.pki / "sa.pub").write_bytes(
            sa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "promhpa-local",
                    "clusters": [
                        {
                            "name": "promhpa-local",
                            "cluster": {
                                "server": self.server,
                                "certificate-authority": str(self.pki / "ca.crt"),
                            },
                        }
                    ],
                    "users": [
                        {
                            "name": "admin",
                            "user": {
                                "client-certificate": str(self.pki / "admin.crt"),
                                "client-key": str(self.pki / "admin.key"),
                            },
                        }
                    ],
                    "contexts": [
                        {"name": "promhpa-local", "context": {"cluster": "promhpa-local", "user": "admin"}}
                    ],
                },
                indent=2,
            )
        )
        self.kubeconfig.chmod(0o600)

    def up(self) -> None:
        existing = Cluster.load(self.dir)
        if existing is not None and existing.running():
            log(f"already running (state in {self.dir}); nothing to do")
            self.__dict__.update(existing.__dict__)
            return
        if existing is not None:
            log("a previous cluster is partly running or dead; cleaning it up first")
            existing.down()
        self.bins = Binaries(tools_dir())
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in (
            "etcd",
            "etcd-peer",
            "apiserver",
            "controller-manager",
            "scheduler",
            "kwok",
            "prometheus",
        ):
            self.ports[name] = free_port()
        t0 = time.monotonic()
        try:
            self._bring_up()
        except BaseException:
            self.down(quiet=True, keep_logs=True)
            raise
        log(f"control plane ready in {time.monotonic() - t0:.1f}s")

    def _bring_up(self) -> None:
        assert self.bins is not None
        b, p, pki = self.bins, self.ports, self.pki
        self._certs()
        self._write_kubeconfig()
        log(f"etcd on 127.0.0.1:{p['etcd']}")
        self._start(
            "etcd",
            [
                b.etcd,
                "--name=promhpa",
                f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--advertise-client-urls=http://127.0.0.1:{p['etcd']}",
                f"--listen-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
                f"--initial-cluster=promhpa=http://127.0.0.1:{p['etcd-peer']}",
                "--log-level=warn",
                "--quota-backend-bytes=2147483648",
                "--unsafe-no-fsync",
            ],
        )
        self._wait("etcd", lambda: self._http_ok(f"http://127.0.0.1:{p['etcd']}/health"))
        log(f"kube-apiserver on {self.server}")
        self._start(
            "apiserver",
            [
                b.apiserver,
                f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p['apiserver']}",
                "--endpoint-reconciler-type=none",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._wait("apiserver", lambda: self._https_ok(p["apiserver"], "/readyz"), timeout=120)
        log("kube-controller-manager (built-in HPA controller disabled) and kube-scheduler")
        self._start(
            "controller-manager",
            [
                b.controller_manager,
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['controller-manager']}",
                "--controllers=*,-horizontal-pod-autoscaler-controller",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--use-service-account-credentials=true",
                # kwok's heartbeats can lag on a busy two-core machine; the default 40s grace
                # would mark the fake nodes (and their pods) NotReady mid-test
                "--node-monitor-grace-period=300s",
                # create ReplicaSets' pods at benchmark scale without client-side throttling
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        self._start(
            "scheduler",
            [
                b.scheduler,
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p['scheduler']}",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        log(f"kwok with {len(FAKE_NODES)} fake nodes")
        self._start(
            "kwok",
            [
                b.kwok,
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                f"--server-address=127.0.0.1:{p['kwok']}",
                "--node-ip=127.0.0.1",
                "--cidr=10.244.0.0/16",
                *[f"--config={s}" for s in b.kwok_stages],
            ],
        )
        for node in FAKE_NODES:
            self.kubectl("apply", "-f", "-", input=json.dumps(_fake_node(node)))
        self._wait("kwok", self._nodes_ready, timeout=90)
        self._wait("scheduler", lambda: self._https_ok(p["scheduler"], "/healthz", verify=False))
        self._wait(
            "controller-manager", lambda: self._https_ok(p["controller-manager"], "/healthz", verify=False)
        )
        self._wait("controller-manager", self._default_service_account, timeout=90)
        log(f"prometheus on {self.prometheus_url}")
        (self.dir / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        )
        self._start(
            "prometheus",
            [
                b.prometheus,
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'prometheus'}",
                f"--web.listen-address=127.0.0.1:{p['prometheus']}",
                "--web.enable-remote-write-receiver",
                "--web.enable-lifecycle",
                "--storage.tsdb.retention.time=1d",
            ],
        )
        self._wait("prometheus", lambda: self._http_ok(f"{self.prometheus_url}/-/ready"))

    def _nodes_ready(self) -> bool:
        out = self.kubectl("get", "nodes", "-o", "json", check=False)
        if out.returncode != 0:
            return False
        items = json.loads(out.stdout)["items"]
        ready = [
            n
            for n in items
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
        ]
        return len(ready) >= len(FAKE_NODES)

    def _default_service_account(self) -> bool:
        return self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0

    def restart(self, name: str) -> None:
        """Stop one component and start it again with the same arguments (failure tests)."""
        argv = self._cmdlines[name].split(" ")
        proc = self._procs.pop(name, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # the apiserver's graceful shutdown can take a minute
                proc.kill()
                proc.wait()
        self._start(name, argv)
        if name == "apiserver":
            self._wait("apiserver", lambda: self._https_ok(self.ports["apiserver"], "/readyz"), timeout=120)

    # --- tear-down ------------------------------------------------------------------------

    def down(self, quiet: bool = False, keep_logs: bool = False) -> None:
        """Stop every process we started (by PID, newest first) and remove the state."""
        for name in reversed(list(self.pids)):
            if not self._alive(name):
                continue
            pid = self.pids[name]
            if not quiet:
                log(f"stopping {name} (pid {pid})")
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self._alive(name):
                time.sleep(0.1)
                _reap(pid)
            if self._alive(name):
                os.killpg(pid, signal.SIGKILL)
                _reap(pid)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        self.pids.clear()
        if self._state_file().exists():
            self._state_file().unlink()
        if not keep_logs:
            for sub in ("etcd", "prometheus"):
                _rmtree(self.dir / sub)

    def env_text(self) -> str:
        return (
            f"export KUBECONFIG={self.kubeconfig}\n"
            f"# kubectl: {self.bins.kubectl if self.bins else 'kubectl'}\n"
            f"# kube-apiserver: {self.server}\n# prometheus: {self.prometheus_url}\n"
            f"# logs: {self.dir / 'logs'}\n"
        )


ADAPTER_APIS = (
    ("v1beta2", "custom.metrics.k8s.io", 100),
    ("v1beta1", "custom.metrics.k8s.io", 100),
    ("v1beta1", "external.metrics.k8s.io", 100),
)


def adapter_manifests(
    namespace: str, service: str, port: int, ca_bundle_pem: bytes, resource_metrics: bool = False
) -> list[dict[str, object]]:
    """What a cluster needs to reach an adapter running on this host, as a cluster would do it.

    Endpoints may not hold loopback addresses and there is no kube-proxy, so the Service is
    an ExternalName pointing at 127.0.0.1; the aggregator dials it on ``port`` and verifies
    the serving certificate against ``caBundle`` for ``<service>.<namespace>.svc``.
    """
    import base64

    ca = base64.b64encode(ca_bundle_pem).decode()
    apis = list(ADAPTER_APIS) + ([("v1beta1", "metrics.k8s.io", 100)] if resource_metrics else [])
    objs: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": service, "namespace": namespace}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {
                "type": "ExternalName",
                "externalName": "127.0.0.1",
                "ports": [{"port": port, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{service}:system:auth-delegator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:auth-delegator",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{service}-auth-reader", "namespace": "kube-system"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{service}-resource-reader"},
            "rules": [
                {
                    "apiGroups": ["", "apps", "batch"],
                    "verbs": ["get", "list", "watch"],
                    "resources": [
                        "pods",
                        "namespaces",
                        "nodes",
                        "services",
                        "deployments",
                        "statefulsets",
                        "replicasets",
                        "daemonsets",
                        "jobs",
                    ],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{service}-resource-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{service}-resource-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": service, "namespace": namespace}],
        },
    ]
    for version, group, priority in apis:
        objs.append(
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": f"{version}.{group}"},
                "spec": {
                    "group": group,
                    "version": version,
                    "groupPriorityMinimum": priority,
                    "versionPriority": 200 if version == "v1beta2" else 100,
                    "caBundle": ca,
                    "service": {"name": service, "namespace": namespace, "port": port},
                },
            }
        )
    return objs


def service_account_kubeconfig(cluster: Cluster, namespace: str, name: str, path: Path) -> Path:
    """A kubeconfig that acts as a ServiceAccount (a bound token), so RBAC applies for real."""
    token = cluster.kubectl("-n", namespace, "create", "token", name, "--duration=2h").stdout.strip()
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": name,
                "clusters": [
                    {
                        "name": "local",
                        "cluster": {
                            "server": cluster.server,
                            "certificate-authority": str(cluster.pki / "ca.crt"),
                        },
                    }
                ],
                "users": [{"name": name, "user": {"token": token}}],
                "contexts": [{"name": name, "context": {"cluster": "local", "user": name}}],
            }
        )
    )
    path.chmod(0o600)
    return path


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _fake_node(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        # room for the controller benchmark's 20,000 pods: at the kubelet default of 110 pods
        # per node, three nodes stop scheduling at 330 pods
        "status": {
            "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "8000"},
            "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "8000"},
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("up", "down", "status", "env"))
    ap.add_argument("--dir", type=Path, default=ROOT / ".cluster", help="state directory (default .cluster)")
    a = ap.parse_args(argv)
    directory = a.dir.resolve()
    if a.command == "up":
        c = Cluster(directory)
        try:
            c.up()
        except ClusterError as e:
            log(f"could not start the cluster: {e}")
            return 1
        print(c.env_text(), end="")
        print(
            f"\nThe cluster is running. Use it with:\n  export KUBECONFIG={c.kubeconfig}\n"
            f"  {c.bins.kubectl if c.bins else 'kubectl'} get nodes\nStop it with: make cluster-down"
        )
        return 0
    existing = Cluster.load(directory)
    if a.command == "down":
        if existing is None:
            log(f"no cluster state in {directory}; nothing to stop")
            return 0
        existing.down()
        log("stopped")
        return 0
    if existing is None:
        print("not running")
        return 1 if a.command == "status" else 0
    if a.command == "env":
        print(existing.env_text(), end="")
        return 0
    for name in existing.pids:
        print(f"{name:20s} pid {existing.pids[name]:>7d}  {'running' if existing._alive(name) else 'DEAD'}")
    return 0 if existing.running() else 1


if __name__ == "__main__":
    sys.exit(main())
