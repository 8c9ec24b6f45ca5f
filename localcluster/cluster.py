"""The control plane's processes: start, wait for readiness, restart and stop -- by PID,
only what this state directory started (see the package docstring)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

from . import node
from .kwok import fake_node
from .node_host import NODE_IP
from .pki import _key, _write, issue, make_ca
from .thanos import REPLICAS, federate, plan, stores
from .tools import (
    FAKE_NODES,
    FORWARDED_POD_PORT,
    K8S_VERSION,
    Binaries,
    ClusterError,
    condition_true,
    free_port,
    log,
    tools_dir,
)

# --- processes ----------------------------------------------------------------------------


PORTS = (
    "etcd",
    "etcd-peer",
    "apiserver",
    "controller-manager",
    "scheduler",
    "kwok",
    "prometheus",
    "forwarded",  # where kwok's port-forward sends a pod's FORWARDED_POD_PORT
)
START_ATTEMPTS = 3


@dataclass
class Cluster:
    """One control plane, its state under ``dir``; ``up()`` returns when it is usable."""

    dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    bins: Binaries | None = None
    thanos: bool = False  # also Thanos: two federating replicas, sidecars and a Querier
    # the Kubernetes release the control plane runs (K8S_VERSION by default; an older
    # minor to run promhpa beside that release's kube-controller-manager)
    k8s_version: str = K8S_VERSION
    # how long a fake node may miss heartbeats before it is NotReady (its pods then marked
    # NotReady, and evicted 300 s later); bench-scale's 100,000 pods starve kwok's
    # heartbeats for minutes while they are created, so it allows more
    node_monitor_grace: str = "300s"
    # a real node beside kwok's fake ones (localcluster.node): a kubelet, containerd and runc,
    # kube-proxy and CoreDNS on this machine; the API server then listens on the node's
    # address (a private bridge), which the pods reach it at
    real_node: bool = False
    # kube-scheduler; bench-scale binds its pods to the fake nodes itself (nodeName), and a
    # scheduler there only follows 100,000 pods' status updates (half a core measured)
    scheduler: bool = True

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def host(self) -> str:
        """The API server's address: loopback, or the real node's (where pods reach it)."""
        return NODE_IP if self.real_node else "127.0.0.1"

    @property
    def server(self) -> str:
        return f"https://{self.host}:{self.ports['apiserver']}"

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
                    "k8s": self.k8s_version,
                    "real_node": self.real_node,
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
        c.k8s_version = data.get("k8s", K8S_VERSION)
        c.real_node = data.get("real_node", False)
        c.bins = Binaries(Path(data["bin"]), c.k8s_version) if data.get("bin") else None
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

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
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
            env={**os.environ, **env} if env else None,
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

    def apply(self, items: list[dict[str, Any]], kubeconfig: Path | None = None) -> None:
        """``kubectl apply`` of several manifests in one call (one List)."""
        manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        self.kubectl("apply", "-f", "-", input=manifest, kubeconfig=kubeconfig)

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
        host = self.host if port == self.ports.get("apiserver") else "127.0.0.1"
        with urllib.request.urlopen(f"https://{host}:{port}{path}", context=ctx, timeout=3) as r:
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
            # 10.96.0.1: the kubernetes Service, which pods reach the API server at
            ips=("127.0.0.1", "10.96.0.1", *((NODE_IP,) if self.real_node else ())),
            dns=(
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ),
        )
        issue(self.pki / "admin", ca, "promhpa-admin", orgs=("system:masters",))
        if self.real_node:
            node.certs(self, ca)
        front = make_ca(self.pki / "front-proxy-ca", "promhpa-front-proxy-ca")
        issue(self.pki / "front-proxy-client", front, "front-proxy-client")
        # what the kube-apiserver presents to admission webhooks (its AdmissionConfiguration),
        # so a webhook can tell the API server from anyone else who reaches its port
        hooks = make_ca(self.pki / "webhook-client-ca", "promhpa-webhook-client-ca")
        issue(self.pki / "webhook-client", hooks, "kube-apiserver-webhook-client")
        sa = _key()
        _write(self.pki / "sa", sa, None)
        (self.pki / "sa.pub").write_bytes(
            sa.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    @property
    def webhook_client_ca(self) -> Path:
        """The CA of the client certificate the kube-apiserver presents to every webhook."""
        return self.pki / "webhook-client-ca.crt"

    def _write_admission_config(self) -> Path:
        """The kube-apiserver's AdmissionConfiguration: a client certificate for every
        validating and mutating webhook it calls (a kubeconfig whose one user is ``*``)."""
        creds = self.dir / "webhook-client.kubeconfig"
        creds.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "users": [
                        {
                            "name": "*",
                            "user": {
                                "client-certificate": str(self.pki / "webhook-client.crt"),
                                "client-key": str(self.pki / "webhook-client.key"),
                            },
                        }
                    ],
                }
            )
        )
        config = self.dir / "admission.yaml"
        plugin = {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "WebhookAdmissionConfiguration",
            "kubeConfigFile": str(creds),
        }
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "apiserver.config.k8s.io/v1",
                    "kind": "AdmissionConfiguration",
                    "plugins": [
                        {"name": "ValidatingAdmissionWebhook", "configuration": plugin},
                        {"name": "MutatingAdmissionWebhook", "configuration": plugin},
                    ],
                }
            )
        )
        return config

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
        self.bins = Binaries(tools_dir(self.k8s_version, node=self.real_node), self.k8s_version)
        self.dir.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        for attempt in range(1, START_ATTEMPTS + 1):
            # every port is picked before the first process starts, so an outgoing
            # connection of an earlier one (an ephemeral port from the same range) can take
            # a later one's port in between: that start-up is redone on fresh ports
            for name in PORTS:
                self.ports[name] = free_port()
            try:
                self._bring_up()
                break
            except ClusterError as e:
                self.down(quiet=True, keep_logs=attempt == START_ATTEMPTS)
                if "address already in use" not in str(e) or attempt == START_ATTEMPTS:
                    raise
                log(f"a port was taken during start-up ({str(e).splitlines()[0]}); starting again")
            except BaseException:
                self.down(quiet=True, keep_logs=True)
                raise
        log(f"control plane ready in {time.monotonic() - t0:.1f}s")

    def _bring_up(self) -> None:
        assert self.bins is not None
        b, p, pki = self.bins, self.ports, self.pki
        self._certs()
        self._write_kubeconfig()
        if self.real_node:
            node.prepare_host(self)
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
                f"--bind-address={self.host}",
                f"--advertise-address={self.host}",
                f"--secure-port={p['apiserver']}",
                # the kubernetes Service's endpoint is the real node's address, which pods
                # reach; loopback cannot be an endpoint
                *(() if self.real_node else ("--endpoint-reconciler-type=none",)),
                *(self._kubelet_client() if self.real_node else ()),
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
                f"--admission-control-config-file={self._write_admission_config()}",
                "--enable-priority-and-fairness=false",
                # a node's Hostname address is a fake name: reach kwok's kubelet server (logs,
                # port-forward) at its InternalIP, 127.0.0.1, and resolve nothing
                "--kubelet-preferred-address-types=InternalIP",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._wait("apiserver", lambda: self._https_ok(p["apiserver"], "/readyz"), timeout=120)
        log(
            "kube-controller-manager (built-in HPA controller disabled)"
            + (" and kube-scheduler" if self.scheduler else "")
        )
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
                f"--node-monitor-grace-period={self.node_monitor_grace}",
                # create ReplicaSets' pods at benchmark scale without client-side throttling
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        if self.scheduler:
            self._start_scheduler()
        log(f"kwok with {len(FAKE_NODES)} fake nodes")
        self._start(
            "kwok",
            [
                b.kwok,
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                f"--server-address=127.0.0.1:{p['kwok']}",
                f"--node-port={p['kwok']}",
                f"--config={self._write_port_forward()}",
                "--node-ip=127.0.0.1",
                "--cidr=10.244.0.0/16",
                f"--config={self._write_node_stage()}",
                f"--config={self._write_kwok_options()}",
                *[f"--config={s}" for s in b.kwok_stages if not s.endswith("node-initialize.yaml")],
            ],
        )
        for name in FAKE_NODES:
            self.kubectl("apply", "-f", "-", input=json.dumps(fake_node(name, tainted=self.real_node)))
        self._wait("kwok", self._nodes_ready, timeout=90)
        if self.scheduler:
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
        if self.thanos:
            self._start_thanos()
        if self.real_node:
            node.start(self)

    def _kubelet_client(self) -> tuple[str, ...]:
        """How the API server authenticates to the real kubelet (logs, exec, port-forward)."""
        cert, key = self.pki / "admin.crt", self.pki / "admin.key"
        return (f"--kubelet-client-certificate={cert}", f"--kubelet-client-key={key}")

    def _start_scheduler(self) -> None:
        assert self.bins is not None
        b, p = self.bins, self.ports
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

    def _start_thanos(self) -> None:
        """Two replicas federating the cluster's Prometheus, their sidecars, and a Querier."""
        assert self.bins is not None
        for c in plan(
            self.bins.thanos, self.bins.prometheus, self.dir, federate(self.ports["prometheus"]), self.ports
        ):
            log(f"{c.name} ({c.ready.rsplit('/-/', 1)[0]})")
            self._start(c.name, c.argv)
            self._wait(c.name, lambda url=c.ready: self._http_ok(url))
        self._wait("thanos-query", lambda: len(stores(self.thanos_url)) == REPLICAS)

    @property
    def thanos_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['thanos-query-http']}"

    def _nodes_ready(self) -> bool:
        out = self.kubectl("get", "nodes", "-o", "json", check=False)
        if out.returncode != 0:
            return False
        ready = [n for n in json.loads(out.stdout)["items"] if condition_true(n, "Ready")]
        return len(ready) >= len(FAKE_NODES)

    def _write_kwok_options(self) -> Path:
        """More pods started at once than kwok's default 4: a benchmark's 100,000 pods are
        started in minutes, not a quarter of an hour."""
        path = self.dir / "kwok-options.yaml"
        options = {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
                   # a configuration given replaces kwok's defaults: the debugging handlers
                   # (logs, port-forward) are on again here, as they are without one
                   "options": {"podPlayStageParallelism": 16, "nodePlayStageParallelism": 4,
                               "enableDebuggingHandlers": True, "enableProfilingHandler": False,
                               "enablePodsOnNodeSyncListPager": True,
                               # the fake nodes' heartbeat: kwok renews each node's Lease every
                               # 10 s; its stage patches the node's status only every 10 minutes,
                               # past the 300 s grace, which alone let the nodes go NotReady
                               "nodeLeaseDurationSeconds": 40, "nodeLeaseParallelism": 4}}  # fmt: skip
        path.write_text(json.dumps(options))
        return path

    def _write_node_stage(self) -> Path:
        """Our own stage for a node that is not Ready: Ready again, at 127.0.0.1 with kwok's
        server as its kubelet. kwok's stock one writes only the addresses a node lacks, and
        with no Hostname to add it wrote an empty list over the InternalIP whenever a node
        came back from NotReady (after an API server restart): the API server then found no
        address to port-forward to."""
        path = self.dir / "kwok-node-initialize.yaml"
        template = "\n".join([
            "{{ $now := Now }}",
            "conditions:",
            "{{ range NodeConditions }}",
            "- lastHeartbeatTime: {{ $now | Quote }}",
            "  lastTransitionTime: {{ $now | Quote }}",
            "  message: {{ .message | Quote }}",
            "  reason: {{ .reason | Quote }}",
            "  status: {{ .status | Quote }}",
            "  type: {{ .type | Quote }}",
            "{{ end }}",
            "addresses:",
            "- address: {{ NodeIP | Quote }}",
            "  type: InternalIP",
            "daemonEndpoints:",
            "  kubeletEndpoint:",
            "    Port: {{ NodePort }}",
            "allocatable:",
            "{{ YAML .status.allocatable 1 }}",
            "capacity:",
            "{{ YAML .status.capacity 1 }}",
            "nodeInfo:",
            "  architecture: amd64",
            "  operatingSystem: linux",
            '  kubeletVersion: {{ printf "kwok-%s" Version }}',
            '  kubeProxyVersion: {{ printf "kwok-%s" Version }}',
            '  containerRuntimeVersion: {{ printf "kwok-%s" Version }}',
            '  kernelVersion: {{ printf "kwok-%s" Version }}',
            "phase: Running",
        ])  # fmt: skip
        stage = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Stage",
            "metadata": {"name": "node-initialize"},
            "spec": {
                "resourceRef": {"apiGroup": "v1", "kind": "Node"},
                "selector": {"matchExpressions": [{
                    "key": '.status.conditions.[] | select( .type == "Ready" ) | .status',
                    "operator": "NotIn", "values": ["True"]}]},
                "next": {"statusTemplate": template},
            },
        }  # fmt: skip
        path.write_text(json.dumps(stage))
        return path

    def _write_port_forward(self) -> Path:
        """kwok's kubelet server answers the API server's port-forward to any pod's
        FORWARDED_POD_PORT (the chart's controller port) by connecting to 127.0.0.1 at the
        ``forwarded`` port: a process listening there is that pod's endpoint, reached the
        way a user outside a cluster reaches one (``kubectl port-forward``, ``why``)."""
        path = self.dir / "kwok-port-forward.yaml"
        forward = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterPortForward",
            "metadata": {"name": "loopback"},
            "spec": {"forwards": [{"ports": [FORWARDED_POD_PORT],
                                   "target": {"address": "127.0.0.1", "port": self.ports["forwarded"]}}]},
        }  # fmt: skip
        path.write_text(json.dumps(forward))
        return path

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

    def _stop(self, name: str, quiet: bool = False) -> None:
        """SIGTERM to the process group we started as ``name``, SIGKILL after 15 s."""
        if not self._alive(name):
            return
        pid = self.pids[name]
        if not quiet:
            log(f"stopping {name} (pid {pid})")
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self._alive(name):
            time.sleep(0.1)
            _reap(pid)
        if self._alive(name):
            os.killpg(pid, signal.SIGKILL)
            _reap(pid)

    def down(self, quiet: bool = False, keep_logs: bool = False) -> None:
        """Stop every process we started (by PID, newest first) and remove the state; a real
        node first, its pods and what it changed on the host with it (``node.stop``)."""
        if self.real_node and self.bins is not None:
            node.stop(self)
        for name in reversed(list(self.pids)):
            self._stop(name, quiet)
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
            for sub in ("etcd", "prometheus", *(f"thanos-prometheus-{i}" for i in range(REPLICAS))):
                _rmtree(self.dir / sub)

    def env_text(self) -> str:
        return (
            f"export KUBECONFIG={self.kubeconfig}\n"
            f"# kubectl: {self.bins.kubectl if self.bins else 'kubectl'}\n"
            f"# kube-apiserver: {self.server}\n# prometheus: {self.prometheus_url}\n"
            + (
                f"# thanos query: {self.thanos_url} (dedup on replica)\n"
                if "thanos-query-http" in self.ports
                else ""
            )
            + f"# logs: {self.dir / 'logs'}\n"
        )


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
