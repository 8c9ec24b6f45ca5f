"""The real node itself: pods run as containers under their security context, resolve and
reach Services, have no way off the machine, the kubelet serves cAdvisor's series, and
``down`` gives the host back exactly as it was."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import localcluster
from localcluster import images
from localcluster import incluster
from localcluster import node_host
from localcluster import node_runtime
from localcluster.node_host import BRIDGE
from localcluster.node_host import NODE_IP
from localcluster.node_host import POD_CIDR
from localcluster.node_host import SERVICE_CIDR
from localcluster.tools import wait_until

NS = "node-test"


def _deploy(c: localcluster.Cluster) -> None:
    node_runtime.load_image(c, images.demo_image(), images.DEMO_IMAGE)
    labels = {"app": "web"}
    c.apply([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": NS, "labels": labels},
         "spec": {"containers": [{"name": "app", "image": images.DEMO_IMAGE, "args": ["serve"],
                                  "securityContext": incluster.LOCKED_DOWN}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
         "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]}},
    ])  # fmt: skip
    c.kubectl("wait", "-n", NS, "--for=condition=Ready", "pod/web", "--timeout=90s", timeout=100)


def _exec(c: localcluster.Cluster, pod: str, code: str) -> str:
    return c.kubectl("exec", "-n", NS, pod, "--", "/usr/bin/python3.11", "-c", code).stdout


def test_pod_runs_as_a_container_under_its_security_context(real_cluster: localcluster.Cluster) -> None:
    _deploy(real_cluster)
    status = _exec(real_cluster, "web", "print(open('/proc/self/status').read())")
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert fields["Uid"].split()[0] != "0"
    assert fields["NoNewPrivs"].strip() == "1"
    assert fields["CapEff"].strip() == "0000000000000000"
    assert fields["Seccomp"].strip() == "2"  # a filter: RuntimeDefault
    probe = "import os\ntry:\n open('/x','w')\nexcept OSError as e:\n print(e.errno)"
    assert _exec(real_cluster, "web", probe).strip() == "30"  # EROFS: the root is read-only


def test_pod_resolves_a_service_by_name_and_reaches_it(real_cluster: localcluster.Cluster) -> None:
    code = f"import urllib.request as u; print(u.urlopen('http://web.{NS}.svc/', timeout=5).read().decode())"
    wait_until(
        lambda: _try_exec(real_cluster, code) == "ok", timeout=30, what="web's Service by name from a pod"
    )


def _try_exec(c: localcluster.Cluster, code: str) -> str:
    out = c.kubectl("exec", "-n", NS, "web", "--", "/usr/bin/python3.11", "-c", code, check=False)
    return out.stdout.strip()


def test_pod_network_has_no_route_off_the_machine(real_cluster: localcluster.Cluster) -> None:
    netns = node_runtime.pod_netns(real_cluster, NS, "web")
    routes = json.loads(subprocess.run(["nsenter", f"--net={netns}", "ip", "-j", "route"],
                                       capture_output=True, text=True, check=True).stdout)  # fmt: skip
    assert {r["dst"] for r in routes} == {POD_CIDR, SERVICE_CIDR}  # no default route
    assert all(r.get("gateway", NODE_IP) == NODE_IP for r in routes)
    # an address outside: the pod cannot even send to it (the routing lookup fails)
    outside = _default_route()["gateway"]
    connect = "\n".join([
        "import socket",
        "try:",
        f"    socket.create_connection(('{outside}', 80), timeout=2)",
        "except OSError as e:",
        "    print(e.errno)",
    ])  # fmt: skip
    out = subprocess.run(["nsenter", f"--net={netns}", "python3", "-c", connect],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.strip() == "101"  # ENETUNREACH


def _default_route() -> dict[str, str]:
    routes = json.loads(
        subprocess.run(["ip", "-j", "route"], capture_output=True, text=True, check=True).stdout
    )
    return next(r for r in routes if r["dst"] == "default")


def test_node_runs_the_cached_iptables_and_nft_not_the_hosts(real_cluster: localcluster.Cluster) -> None:
    # fresh machines of this kind carry neither: Debian's, unpacked into the tool cache
    bin_dir = localcluster.cache_bin() / "netfilter-debian" / "bin"
    assert node_host.netfilter_bin() == bin_dir
    version = subprocess.run([node_host.netfilter("iptables"), "--version"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "(nf_tables)" in version
    # kube-proxy found them on its PATH: its chains are in the nat table the cache's reads
    nat = subprocess.run([node_host.netfilter("iptables-save"), "-t", "nat"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert ":KUBE-SERVICES" in nat


def test_host_forwards_nothing_between_the_bridge_and_another_interface(
    real_cluster: localcluster.Cluster,
) -> None:
    table = subprocess.run([node_host.netfilter("nft"), "list", "table", "inet", node_host.ISOLATE_TABLE],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    # before iptables' filter table (priority 0), where kube-proxy accepts marked traffic
    assert "type filter hook forward priority filter - 10; policy accept;" in table
    assert f'iifname "{BRIDGE}" oifname != "{BRIDGE}" drop' in table
    assert f'iifname != "{BRIDGE}" oifname "{BRIDGE}" drop' in table
    # every masquerade is kube-proxy's, for marked service traffic (to the bridge, as the
    # routes above allow); none names the outside interface, and the CNI plugin adds none
    nat = subprocess.run([node_host.netfilter("iptables-save"), "-t", "nat"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    masquerades = [r for r in nat.splitlines() if "MASQUERADE" in r or "SNAT" in r]
    assert masquerades, "kube-proxy's service masquerade is missing: is kube-proxy running?"
    assert all(r.startswith("-A KUBE-POSTROUTING ") for r in masquerades), masquerades
    assert not any(_default_route()["dev"] in r for r in masquerades)


def test_kubelet_serves_cadvisor_series_of_the_pods(real_cluster: localcluster.Cluster) -> None:
    def series() -> bool:
        raw = real_cluster.kubectl(
            "get", "--raw", f"/api/v1/nodes/{node_host.NODE_NAME}/proxy/metrics/cadvisor"
        ).stdout
        return f'namespace="{NS}",pod="web"' in raw and "container_cpu_usage_seconds_total{" in raw

    wait_until(series, timeout=60, what="cAdvisor's series of the pod")


def test_down_leaves_nothing_behind(
    real_cluster: localcluster.Cluster, host_before: node_host.HostState
) -> None:
    node_dir, bins = node_runtime.node_dir(real_cluster), Path(node_runtime.binary(real_cluster, ""))
    real_cluster.down()
    time.sleep(0.5)  # the kernel finishes tearing down the last veth
    assert node_host.leftovers(host_before, node_dir, bins) == []
    assert not node_host.mounts_under(Path("/run/containerd"), node_dir)
