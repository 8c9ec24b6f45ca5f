"""The real node: containerd with runc and the CNI plugins, the kubelet, kube-proxy and the
cluster DNS (CoreDNS), run on this machine beside the control plane and kwok's fake nodes.

The kubelet is K8S_VERSION's. These machines mount cgroup v1 controllers beside a v2
hierarchy (a hybrid layout), which kubelets from 1.35 refuse unless ``failCgroupV1: false``
is set: it is set, so the node runs the newest release within the supported range.

Every file the node writes is under ``<cluster dir>/node``; what it must change on the host
(the bridge, rules, kernel settings, cgroups) is recorded first and given back by
``stop`` (``node_host``). Images are never pulled: the node has no way out, and what it runs
is loaded from OCI archives (``load_image``; the sandbox's pause image at start).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

from . import node_host
from .host import ClusterHost
from .node_host import CGROUP_ROOT, CLUSTER_DOMAIN, NODE_IP, NODE_NAME
from .node_runtime import binary, crictl, load_image, node_dir, sock
from .pki import issue
from .tools import ClusterError, condition_true, free_port, log

PAUSE_IMAGE = "promhpa.local/pause:1"
PROCESSES = ("containerd", "kubelet", "kube-proxy", "coredns")


class RealNode:
    """The real node as a ``Cluster`` addon: the API server listens on the node's address
    (a private bridge, where pods reach it) and authenticates to the kubelet; kwok's fake
    nodes are tainted so real workloads land here."""

    host: str | None = NODE_IP
    cert_ips: tuple[str, ...] = (NODE_IP,)
    needs_node_tools: bool = True
    taints_fake_nodes: bool = True
    data_dirs: tuple[str, ...] = ()

    def prepare(self, c: ClusterHost, ca: object) -> None:
        certs(c, ca)
        prepare_host(c)

    def apiserver_flags(self, c: ClusterHost) -> tuple[str, ...]:
        """How the API server authenticates to the kubelet (logs, exec, port-forward)."""
        cert, key = c.pki / "admin.crt", c.pki / "admin.key"
        return (f"--kubelet-client-certificate={cert}", f"--kubelet-client-key={key}")

    def start(self, c: ClusterHost) -> None:
        start(c)

    def stop(self, c: ClusterHost) -> None:
        if c.bins is not None:
            stop(c)

    def env_text(self, c: ClusterHost) -> str:
        return f"# real node: {NODE_NAME} at {NODE_IP}\n"


def certs(c: ClusterHost, ca: object) -> None:
    """The kubelet's client identity (the Node authorizer's system:node:<name>), its serving
    certificate at the node's address, and kube-proxy's identity (bound to
    system:node-proxier by default)."""
    issue(c.pki / "kubelet-client", ca, f"system:node:{NODE_NAME}", orgs=("system:nodes",))  # type: ignore[arg-type]
    issue(c.pki / "kubelet", ca, NODE_NAME, server=True, ips=(NODE_IP,), dns=(NODE_NAME,))  # type: ignore[arg-type]
    issue(c.pki / "kube-proxy", ca, "system:kube-proxy")  # type: ignore[arg-type]


def prepare_host(c: ClusterHost) -> None:
    """Record the host, then make the pod network: before the API server, which listens on
    the node's address."""
    d = node_dir(c)
    d.mkdir(parents=True, exist_ok=True)
    node_host.snapshot().save(d / "host-before.json")
    node_host.setup_network()


def start(c: ClusterHost) -> None:
    """containerd, then the kubelet (which registers the node), kube-proxy and CoreDNS; returns
    when the node is Ready."""
    d = node_dir(c)
    for port in ("kubelet", "kubelet-healthz", "kube-proxy-healthz", "kube-proxy-metrics", "coredns-health"):
        c.ports[port] = free_port()
    _start_containerd(c, d)
    load_image(c, _pause_archive(c), PAUSE_IMAGE)
    node_host.make_cgroup_root()
    _start_kubelet(c, d)
    _start_kube_proxy(c, d)
    _start_coredns(c, d)
    c.wait_ready("kubelet", lambda: _node_ready(c), timeout=120)
    log(f"real node {NODE_NAME} Ready at {NODE_IP} (kubelet {c.k8s_version}, containerd, runc)")
    _in_cluster(c)


def _in_cluster(c: ClusterHost) -> None:
    """Prometheus as a Deployment (``incluster``), and the demo app's image for what runs it."""
    from . import images, incluster

    assert c.bins is not None
    load_image(c, images.prometheus_image(Path(c.bins.prometheus3)), images.PROMETHEUS_IMAGE)
    load_image(c, images.demo_image(), images.DEMO_IMAGE)
    c.apply(incluster.prometheus())
    rollout = ("rollout", "status", "deployment/prometheus", "--timeout=120s")
    c.kubectl("-n", incluster.MONITORING, *rollout, timeout=130)
    log(f"in-cluster Prometheus at {incluster.PROMETHEUS_URL}")


def _start_containerd(c: ClusterHost, d: Path) -> None:
    root = d / "containerd"
    (d / "cni" / "net.d").mkdir(parents=True, exist_ok=True)
    (d / "cni" / "net.d" / "10-promhpa.conflist").write_text(
        json.dumps(node_host.cni_config(d / "cni" / "ipam"))
    )
    runtime = "plugins.'io.containerd.cri.v1.runtime'"
    config = f"""version = 3
root = "{root / "root"}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "{sock(c)}"
[ttrpc]
  address = "{root / "containerd.sock.ttrpc"}"
[debug]
  address = ""
[metrics]
  address = ""
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{PAUSE_IMAGE}"
[{runtime}]
  netns_mounts_under_state_dir = true
  # this machine's processes may not lower their OOM score (runc's init is refused): a
  # container's score is held at or above containerd's own
  restrict_oom_score_adj = true
  cdi_spec_dirs = []
  enable_cdi = false
  [{runtime}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [{runtime}.containerd.runtimes.runc.options]
      BinaryName = "{binary(c, "runc")}"
      Root = "{root / "runc"}"
      SystemdCgroup = false
  [{runtime}.cni]
    bin_dirs = ["{binary(c, "cni")}"]
    conf_dir = "{d / "cni" / "net.d"}"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
"""
    (d / "containerd.toml").write_text(config)
    log(f"containerd ({sock(c)})")
    c.start_process(
        "containerd",
        [binary(c, "containerd"), f"--config={d / 'containerd.toml'}", "--log-level=warn"],
        env={"PATH": f"{binary(c, '')}:{node_host.node_path()}"},
    )
    c.wait_ready("containerd", lambda: crictl(c, "info").returncode == 0, timeout=60)
    _link_default_socket(c)


# where the kubelet's cAdvisor finds containerd (its own flag, which the kubelet does not
# expose): without it cAdvisor sees only cgroups, and no series carries a container's name,
# which metrics.k8s.io's rules and `kubectl top` need
DEFAULT_SOCKET = Path("/run/containerd/containerd.sock")


def _link_default_socket(c: ClusterHost) -> None:
    if DEFAULT_SOCKET.is_symlink() and DEFAULT_SOCKET.resolve() == sock(c):
        return
    if os.path.lexists(DEFAULT_SOCKET):
        raise ClusterError(
            f"{DEFAULT_SOCKET} exists: a containerd already runs on this machine; the real node "
            "needs that path for the kubelet's cAdvisor (stop it, or run the node elsewhere)"
        )
    DEFAULT_SOCKET.parent.mkdir(parents=True, exist_ok=True)
    DEFAULT_SOCKET.symlink_to(sock(c))


def _kubeconfig(c: ClusterHost, name: str, cert: str) -> Path:
    path = c.dir / f"{name}.kubeconfig"
    doc = json.loads(c.kubeconfig.read_text())
    doc["users"][0]["user"] = {
        "client-certificate": str(c.pki / f"{cert}.crt"),
        "client-key": str(c.pki / f"{cert}.key"),
    }
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def _start_kubelet(c: ClusterHost, d: Path) -> None:
    (d / "resolv.conf").write_text("")  # pods get the cluster's DNS and nothing of the host's
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": c.ports["kubelet"],
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": c.ports["kubelet-healthz"],
        "tlsCertFile": str(c.pki / "kubelet.crt"),
        "tlsPrivateKeyFile": str(c.pki / "kubelet.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(c.pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        # the hybrid cgroup layout of these machines (see the module's docstring)
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [NODE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(d / "resolv.conf"),
        "containerRuntimeEndpoint": f"unix://{sock(c)}",
        "podLogsDir": str(d / "pod-logs"),
        # images cannot be pulled again here: never collect them, and evict only when the
        # disk is all but full
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "serializeImagePulls": False,
        "maxPods": 110,
    }
    (d / "kubelet.json").write_text(json.dumps(config, indent=1))
    log(f"kubelet {c.k8s_version} ({NODE_NAME} at {NODE_IP}:{c.ports['kubelet']})")
    c.start_process(
        "kubelet",
        [
            binary(c, "kubelet"),
            f"--config={d / 'kubelet.json'}",
            f"--kubeconfig={_kubeconfig(c, 'kubelet', 'kubelet-client')}",
            f"--root-dir={d / 'kubelet'}",
            f"--cert-dir={d / 'kubelet' / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_IP}",
            "--v=1",
        ],
        env={"PATH": node_host.node_path()},
    )


def _start_kube_proxy(c: ClusterHost, d: Path) -> None:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(_kubeconfig(c, "kube-proxy", "kube-proxy"))},
        "hostnameOverride": NODE_NAME,
        "bindAddress": NODE_IP,
        "healthzBindAddress": f"127.0.0.1:{c.ports['kube-proxy-healthz']}",
        "metricsBindAddress": f"127.0.0.1:{c.ports['kube-proxy-metrics']}",
        "mode": "iptables",
        # the node's address only: no NodePort on loopback (which would need route_localnet)
        "nodePortAddresses": [f"{NODE_IP}/32"],
        # leave the host's connection-tracking limits as they are
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    (d / "kube-proxy.json").write_text(json.dumps(config, indent=1))
    log("kube-proxy (iptables)")
    c.start_process(
        "kube-proxy",
        [binary(c, "kube-proxy"), f"--config={d / 'kube-proxy.json'}", "--v=1"],
        env={"PATH": node_host.node_path()},
    )


def _start_coredns(c: ClusterHost, d: Path) -> None:
    """The cluster DNS on the node's address: cluster names only (no ``forward``: nothing is
    resolved outside)."""
    corefile = f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_IP}
    errors
    health 127.0.0.1:{c.ports["coredns-health"]}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {c.kubeconfig} promhpa-local
        pods insecure
    }}
    cache 5
}}
"""
    (d / "Corefile").write_text(corefile)
    log(f"CoreDNS at {NODE_IP}:53")
    c.start_process("coredns", [binary(c, "coredns"), "-conf", str(d / "Corefile")])
    c.wait_ready("coredns", lambda: c.http_ok(f"http://127.0.0.1:{c.ports['coredns-health']}/health"))


def _node_ready(c: ClusterHost) -> bool:
    out = c.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
    return out.returncode == 0 and condition_true(json.loads(out.stdout), "Ready")


def _pause_archive(c: ClusterHost) -> Path:
    from .images import pause_image

    return pause_image(Path(binary(c, "pause")))


def stop(c: ClusterHost) -> None:
    """The kubelet first (so it starts nothing more), then every pod through the CRI (its
    containers stopped, its network torn down by the CNI plugins), kube-proxy's rules, the
    daemons, and whatever the host still holds of the node."""
    d = node_dir(c)
    c.stop_process("kubelet")
    if c.alive("containerd"):
        crictl(c, "rmp", "--all", "--force", timeout=180)
    if c.alive("kube-proxy"):
        c.stop_process("kube-proxy")
        subprocess.run([binary(c, "kube-proxy"), "--cleanup"], capture_output=True, timeout=60, check=False)
    c.stop_process("coredns")
    c.stop_process("containerd")
    if DEFAULT_SOCKET.is_symlink() and DEFAULT_SOCKET.resolve() == sock(c):
        DEFAULT_SOCKET.unlink()
    _end_shims(d)
    before = d / "host-before.json"
    if before.exists():
        node_host.restore(node_host.HostState.load(before), d)


def _end_shims(d: Path) -> None:
    """A shim outlives containerd by design; the ones our containerd started name its
    socket in their arguments."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [pid for pid, _ in node_host.processes_of(d, None)]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 15 if time.monotonic() < deadline - 5 else 9)
        time.sleep(0.5)


def leftovers(c: ClusterHost) -> list[str]:
    d = node_dir(c)
    before = d / "host-before.json"
    if not before.exists():
        return [f"{before} is missing: what the host had before the node is unknown"]
    return node_host.leftovers(node_host.HostState.load(before), d, Path(binary(c, "")))
