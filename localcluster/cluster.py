"""The control plane: bring-up in order, readiness, restart and tear-down. What each
component is started with is ``control_plane``'s (and ``kwok``'s); starting, watching and
stopping processes by PID is the ``Supervisor``'s (see the package docstring). What runs
beside it -- the real node, Thanos -- comes as ``addon``s, whose hooks it calls in order."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import control_plane, kwok
from .addon import Addon, from_path, path_of
from .supervisor import Supervisor, remove_tree
from .tools import (
    FAKE_NODES,
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
class Cluster(Supervisor):
    """One control plane, its state under ``dir``; ``up()`` returns when it is usable."""

    bins: Binaries | None = None
    # the Kubernetes release the control plane runs (K8S_VERSION by default; an older
    # minor to run promhpa beside that release's kube-controller-manager)
    k8s_version: str = K8S_VERSION
    # how long a fake node may miss heartbeats before it is NotReady (its pods then marked
    # NotReady, and evicted 300 s later); bench-scale's 100,000 pods starve kwok's
    # heartbeats for minutes while they are created, so it allows more
    node_monitor_grace: str = "300s"
    # what runs beside the control plane: ``node.RealNode`` (a kubelet, containerd and runc,
    # kube-proxy and CoreDNS on this machine), ``thanos.FederatedThanos``
    addons: tuple[Addon, ...] = ()
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
        """The API server's address: loopback, or an addon's (the real node's, where pods
        reach it)."""
        return next((a.host for a in self.addons if a.host), "127.0.0.1")

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
                    "addons": [path_of(a) for a in self.addons],
                },
                indent=2,
            )
        )

    @classmethod
    def load(cls, directory: Path) -> Cluster | None:
        state = directory / "state.json"
        if not state.exists():
            return None
        data = json.loads(state.read_text())
        c = cls(directory, data["ports"], {k: int(v) for k, v in data["pids"].items()})
        c._cmdlines = data.get("cmdlines", {})
        c.k8s_version = data.get("k8s", K8S_VERSION)
        c.addons = tuple(from_path(p) for p in data.get("addons", []))
        c.bins = Binaries(Path(data["bin"]), c.k8s_version) if data.get("bin") else None
        return c

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

    # --- bring-up -------------------------------------------------------------------------

    @property
    def webhook_client_ca(self) -> Path:
        """The CA of the client certificate the kube-apiserver presents to every webhook."""
        return self.pki / "webhook-client-ca.crt"

    def up(self) -> None:
        existing = Cluster.load(self.dir)
        if existing is not None and existing.running():
            log(f"already running (state in {self.dir}); nothing to do")
            self.__dict__.update(existing.__dict__)
            return
        if existing is not None:
            log("a previous cluster is partly running or dead; cleaning it up first")
            existing.down()
        node_tools = any(a.needs_node_tools for a in self.addons)
        self.bins = Binaries(tools_dir(self.k8s_version, node=node_tools), self.k8s_version)
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
        ca = control_plane.issue_certs(pki, tuple(ip for a in self.addons for ip in a.cert_ips))
        control_plane.write_kubeconfig(self.kubeconfig, self.server, pki)
        for addon in self.addons:
            addon.prepare(self, ca)
        log(f"etcd on 127.0.0.1:{p['etcd']}")
        self.start_process("etcd", control_plane.etcd(b, self.dir, p))
        self.wait_ready("etcd", lambda: self.http_ok(f"http://127.0.0.1:{p['etcd']}/health"))
        log(f"kube-apiserver on {self.server}")
        admission = control_plane.write_admission_config(self.dir, pki)
        # the kubernetes Service's endpoint is the API server's address where that is an
        # addon's (the real node's, which pods reach); loopback cannot be an endpoint
        extra = tuple(f for a in self.addons for f in a.apiserver_flags(self))
        if self.host == "127.0.0.1":
            extra = ("--endpoint-reconciler-type=none", *extra)
        self.start_process("apiserver", control_plane.apiserver(b, pki, p, self.host, admission, extra))
        self.wait_ready("apiserver", lambda: self._https_ok(p["apiserver"], "/readyz"), timeout=120)
        log(
            "kube-controller-manager (built-in HPA controller disabled)"
            + (" and kube-scheduler" if self.scheduler else "")
        )
        self.start_process(
            "controller-manager",
            control_plane.controller_manager(
                b, self.kubeconfig, pki, p["controller-manager"], self.node_monitor_grace
            ),
        )
        if self.scheduler:
            self.start_process("scheduler", control_plane.scheduler(b, self.kubeconfig, p["scheduler"]))
        log(f"kwok with {len(FAKE_NODES)} fake nodes")
        configs = [
            kwok.write_port_forward(self.dir, p["forwarded"]),
            kwok.write_node_stage(self.dir),
            kwok.write_options(self.dir),
        ]
        self.start_process("kwok", control_plane.kwok(b, self.kubeconfig, p["kwok"], configs))
        for name in FAKE_NODES:
            tainted = any(a.taints_fake_nodes for a in self.addons)
            self.kubectl("apply", "-f", "-", input=json.dumps(kwok.fake_node(name, tainted=tainted)))
        self.wait_ready("kwok", self._nodes_ready, timeout=90)
        if self.scheduler:
            self.wait_ready("scheduler", lambda: self._https_ok(p["scheduler"], "/healthz", verify=False))
        self.wait_ready(
            "controller-manager", lambda: self._https_ok(p["controller-manager"], "/healthz", verify=False)
        )
        self.wait_ready("controller-manager", self._default_service_account, timeout=90)
        log(f"prometheus on {self.prometheus_url}")
        self.start_process("prometheus", control_plane.prometheus(b, self.dir, p["prometheus"]))
        self.wait_ready("prometheus", lambda: self.http_ok(f"{self.prometheus_url}/-/ready"))
        for addon in self.addons:
            addon.start(self)

    def _nodes_ready(self) -> bool:
        out = self.kubectl("get", "nodes", "-o", "json", check=False)
        if out.returncode != 0:
            return False
        ready = [n for n in json.loads(out.stdout)["items"] if condition_true(n, "Ready")]
        return len(ready) >= len(FAKE_NODES)

    def _default_service_account(self) -> bool:
        return self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0

    def restart(self, name: str) -> None:
        """Stop one component and start it again with the same arguments (failure tests)."""
        self.restart_process(name)
        if name == "apiserver":
            self.wait_ready(
                "apiserver", lambda: self._https_ok(self.ports["apiserver"], "/readyz"), timeout=120
            )

    # --- tear-down ------------------------------------------------------------------------

    def down(self, quiet: bool = False, keep_logs: bool = False) -> None:
        """Stop every process we started (by PID, newest first) and remove the state; the
        addons first (a real node's pods and what it changed on the host go with it)."""
        for addon in reversed(self.addons):
            addon.stop(self)
        self.stop_all(quiet)
        if self._state_file().exists():
            self._state_file().unlink()
        if not keep_logs:
            for sub in ("etcd", "prometheus", *(d for a in self.addons for d in a.data_dirs)):
                remove_tree(self.dir / sub)

    def env_text(self) -> str:
        return (
            f"export KUBECONFIG={self.kubeconfig}\n"
            f"# kubectl: {self.bins.kubectl if self.bins else 'kubectl'}\n"
            f"# kube-apiserver: {self.server}\n# prometheus: {self.prometheus_url}\n"
            + "".join(a.env_text(self) for a in self.addons)
            + f"# logs: {self.dir / 'logs'}\n"
        )
