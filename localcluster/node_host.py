"""What the real node changes on the host, and how ``down`` gives it back.

The real node (``up --real-node``) is this machine acting as a Kubernetes node: its kubelet,
containerd, kube-proxy and the CNI plugins write to the host's network stack, kernel
settings, cgroups, mounts and a few fixed paths. Before the node starts, ``snapshot`` records
each of those; ``restore`` removes whatever was added since (rules, chains, tables, links,
cgroups, mounts, paths) and puts every recorded kernel setting back; ``leftovers`` lists what
still differs, which the tests require to be nothing.

The pod network exists only here: a bridge with a private subnet, pods routed to that subnet
and the service range and nothing else (``cni_config``), the bridge's traffic barred from
being forwarded to any other interface (``isolate``), and no masquerade of the CNI plugin's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .tools import ROOT, cache_bin

NODE_NAME = "promhpa-node"
BRIDGE = "phpa0"
NODE_IP = "10.88.0.1"
POD_CIDR = "10.88.0.0/24"
SERVICE_CIDR = "10.96.0.0/16"  # the API server's --service-cluster-ip-range
CLUSTER_DOMAIN = "cluster.local"
CGROUP_ROOT = "promhpa-node"  # the kubelet's --cgroup-root, under every hierarchy
ISOLATE_TABLE = "promhpa_node"

# kernel settings the node's components change: the forwarding the pod network needs, the
# bridge's netfilter hook kube-proxy's service rules need, and what the kubelet sets when
# protectKernelDefaults is off (its default) or kube-proxy may set
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/ipv4/conf/all/route_localnet",
    "vm/overcommit_memory",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/netfilter/nf_conntrack_max",
)
# fixed paths the components create whatever their configuration says: containerd's shim
# sockets (/run/containerd/s), libcni's result cache, the kubelet's container-log links
HOST_PATHS = ("/run/containerd", "/var/lib/cni", "/var/log/containers")
FAMILIES = ("iptables", "ip6tables")
# the commands of Debian's iptables and nftables the host side runs (``netfilter_bin``)
NETFILTER = (*(f"{f}{s}" for f in FAMILIES for s in ("", "-save", "-restore")), "nft")


@dataclass
class HostState:
    """The parts of the host the node may change, as they were (``snapshot``)."""

    sysctls: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)  # iptables-save per family
    nft_tables: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # of HOST_PATHS, those that existed

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> HostState:
        return cls(**json.loads(path.read_text()))


def netfilter_bin() -> Path:
    """Where iptables and nft come from: Debian's, unpacked into the tool cache, never the
    host's (fresh machines of this kind carry neither, and one version for the snapshot,
    kube-proxy and the CNI plugins keeps their views of the rules alike). Unpacked here on
    first use, since a test records the host before any cluster has built its tools."""
    d = cache_bin() / "netfilter-debian" / "bin"
    if not (d / "nft").exists():
        build = [str(ROOT / "hack" / "build-tools.sh"), "netfilter"]
        subprocess.run(build, stdout=subprocess.DEVNULL, check=False)
    if not (d / "nft").exists():
        raise RuntimeError(
            "iptables and nft are missing from the tool cache and `hack/build-tools.sh netfilter` "
            "could not unpack them (it runs `apt-get download iptables nftables ...`; its output "
            f"is above): {d}"
        )
    return d


def node_path() -> str:
    """PATH for the node's processes: kube-proxy and the kubelet run iptables, the CNI
    plugins (containerd's children) iptables too."""
    return f"{netfilter_bin()}:{os.environ.get('PATH', '/usr/bin:/bin')}"


def netfilter(name: str) -> str:
    """The path of one of NETFILTER's commands."""
    return str(netfilter_bin() / name)


def _run(*argv: str, check: bool = True) -> str:
    if argv[0] in NETFILTER:
        argv = (netfilter(argv[0]), *argv[1:])
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name).read_text().strip()
    except OSError:
        return None


def _set_sysctl(name: str, value: str) -> None:
    with contextlib.suppress(OSError):
        Path("/proc/sys", name).write_text(value)


def _links() -> list[str]:
    return sorted(link["ifname"] for link in json.loads(_run("ip", "-j", "link", "show")))


def _nft_tables() -> list[str]:
    return sorted(line.strip() for line in _run("nft", "list", "tables").splitlines() if line.strip())


def snapshot() -> HostState:
    sysctls = {n: v for n in SYSCTLS if (v := _sysctl(n)) is not None}
    return HostState(
        sysctls=sysctls,
        rules={f: _run(f"{f}-save") for f in FAMILIES},
        nft_tables=_nft_tables(),
        links=_links(),
        paths=[p for p in HOST_PATHS if os.path.lexists(p)],
    )


# --- the pod network ------------------------------------------------------------------------


def setup_network() -> None:
    """The bridge the pods attach to (the node's address is on it: the API server, the
    kubelet and the cluster DNS listen there), forwarding for it alone, and its isolation."""
    if BRIDGE in _links():
        raise RuntimeError(
            f"the bridge {BRIDGE} already exists: another real node runs on this machine "
            "(one at a time), or a previous one was not taken down (python -m localcluster down)"
        )
    _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "add", f"{NODE_IP}/{POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    # the host's own connections to Services (the aggregator's to an APIService's Service)
    # leave from the node's address on the bridge, not by the default route
    _run("ip", "route", "add", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP)
    isolate()
    _set_sysctl("net/bridge/bridge-nf-call-iptables", "1")
    _set_sysctl("net/ipv4/ip_forward", "1")


def isolate() -> None:
    """Nothing is forwarded between the bridge and any other interface, either way: a table
    of our own whose forward hook runs before iptables' filter table (priority -10 < 0), so no
    rule kube-proxy inserts there (its ACCEPT of marked service traffic) comes first."""
    rules = f"""table inet {ISOLATE_TABLE} {{
    chain forward {{
        type filter hook forward priority -10; policy accept;
        iifname "{BRIDGE}" oifname != "{BRIDGE}" drop
        iifname != "{BRIDGE}" oifname "{BRIDGE}" drop
    }}
}}
"""
    subprocess.run([netfilter("nft"), "-f", "-"], input=rules, text=True, capture_output=True, check=True)


def cni_config(data_dir: Path) -> dict[str, object]:
    """The pods' network: addresses from POD_CIDR on the bridge, a route to the service range
    through the node and no default route, no masquerade, hairpin for a pod reaching itself
    through its Service."""
    return {
        "cniVersion": "1.0.0",
        "name": "promhpa",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR, "gateway": NODE_IP, "rangeStart": _host(10)}]],
                    "routes": [{"dst": SERVICE_CIDR, "gw": NODE_IP}],
                    "dataDir": str(data_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def _host(n: int) -> str:
    return NODE_IP.rsplit(".", 1)[0] + f".{n}"


# --- cgroups --------------------------------------------------------------------------------


def cgroup_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers and the v2 one beside them)."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, fstype, *_ = line.split()
        if fstype in ("cgroup", "cgroup2"):
            out.append(Path(where))
    return out


def make_cgroup_root() -> None:
    """The kubelet's --cgroup-root in every hierarchy; cpuset's needs its parent's CPUs and
    memory nodes before any task can join a child of it."""
    for h in cgroup_hierarchies():
        root = h / CGROUP_ROOT
        root.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if (h / knob).exists() and not (root / knob).read_text().strip():
                (root / knob).write_text((h / knob).read_text())


def _cgroups_left() -> list[Path]:
    return [h / CGROUP_ROOT for h in cgroup_hierarchies() if (h / CGROUP_ROOT).exists()]


def cgroup_processes() -> list[int]:
    """The processes in the node's cgroups: the pods' containers and sandboxes."""
    pids: set[int] = set()
    for root in _cgroups_left():
        for procs in root.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return sorted(pids)


def _remove_cgroups() -> None:
    for root in _cgroups_left():
        for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()


# --- giving the host back -------------------------------------------------------------------


def mounts_under(*roots: Path) -> list[str]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        where = line.split()[4].replace("\\040", " ")
        if any(where == str(r) or where.startswith(f"{r}/") for r in roots):
            out.append(where)
    return out


def unmount_under(*roots: Path) -> None:
    """Every mount below ``roots``, deepest first (a pod's volumes, containers' root file
    systems, network namespaces' bind mounts)."""
    for where in sorted(set(mounts_under(*roots)), key=lambda w: -w.count("/")):
        if subprocess.run(["umount", where], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", where], capture_output=True, check=False)


def _rules(save: str) -> dict[str, tuple[set[str], list[str]]]:
    """iptables-save's text as {table: (chains, rules)}: rules as their ``-A`` lines."""
    tables: dict[str, tuple[set[str], list[str]]] = {}
    table = ""
    for line in save.splitlines():
        if line.startswith("*"):
            table = line[1:]
            tables[table] = (set(), [])
        elif line.startswith(":") and table:
            tables[table][0].add(line[1:].split()[0])
        elif line.startswith("-A ") and table:
            tables[table][1].append(line)
    return tables


BUILTIN = {"INPUT", "OUTPUT", "FORWARD", "PREROUTING", "POSTROUTING"}


def _added(family: str, before: str) -> list[tuple[str, list[str], list[str]]]:
    """Per table, the chains and the rules (``-A`` lines) ``family``'s tables have now that
    ``before`` (its iptables-save) had not."""
    was, now = _rules(before), _rules(_run(f"{family}-save", check=False))
    out = []
    for table, (chains, rules) in now.items():
        old_chains, old_rules = was.get(table, (set(), []))
        out.append((table, sorted(chains - old_chains), [r for r in rules if r not in old_rules]))
    return out


def _restore_rules(family: str, before: str) -> None:
    for table, chains, rules in _added(family, before):
        new = [c for c in chains if c not in BUILTIN]
        for rule in rules:  # rules added to chains that were there (FORWARD's jump, ...)
            if rule.split()[1] not in new:
                _run(family, "-t", table, "-D", *shlex.split(rule)[1:], check=False)
        for chain in new:
            _run(family, "-t", table, "-F", chain, check=False)
        for chain in new:
            _run(family, "-t", table, "-X", chain, check=False)


def restore(before: HostState, node_dir: Path) -> None:
    """Undo what the node did to the host; ``leftovers`` says what could not be undone."""
    unmount_under(node_dir)
    for pid in cgroup_processes():  # a container its runtime did not stop (it was ours)
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    _remove_cgroups()
    for family in FAMILIES:
        _restore_rules(family, before.rules.get(family, ""))
    for table in _nft_tables():
        if table not in before.nft_tables:
            _run("nft", "delete", *table.split(), check=False)
    for link in _links():
        if link not in before.links:
            _run("ip", "link", "del", link, check=False)
    for name, value in before.sysctls.items():
        if _sysctl(name) != value:
            _set_sysctl(name, value)
    for path in HOST_PATHS:
        if path not in before.paths:
            shutil.rmtree(path, ignore_errors=True)
        elif path == "/var/log/containers":  # the kubelet's links to our pods' logs
            for entry in Path(path).iterdir():
                if entry.is_symlink() and str(node_dir) in os.readlink(entry):
                    entry.unlink()


def leftovers(before: HostState, node_dir: Path, bin_dir: Path | None) -> list[str]:
    """Every difference from ``before`` the node left: empty when ``down`` was clean."""
    found = [f"mount {m}" for m in mounts_under(node_dir)]
    found += [f"cgroup {c}" for c in _cgroups_left()]
    found += [f"process {pid} (in the node's cgroups)" for pid in cgroup_processes()]
    found += [f"process {pid}: {cmd}" for pid, cmd in processes_of(node_dir, bin_dir)]
    for family in FAMILIES:
        for table, chains, rules in _added(family, before.rules.get(family, "")):
            found += [f"{family} -t {table} chain {c}" for c in chains]
            found += [f"{family} -t {table} {r}" for r in rules]
    found += [f"nft {t}" for t in _nft_tables() if t not in before.nft_tables]
    found += [f"link {link}" for link in _links() if link not in before.links]
    found += [f"sysctl {n}={_sysctl(n)} (was {v})" for n, v in before.sysctls.items() if _sysctl(n) != v]
    found += [f"path {p}" for p in HOST_PATHS if p not in before.paths and os.path.lexists(p)]
    return found


def processes_of(node_dir: Path, bin_dir: Path | None) -> list[tuple[int, str]]:
    """Processes that run one of the node's binaries or name its directory (a shim, a
    daemon that outlived its stop)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            exe = os.readlink(proc / "exe")
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (bin_dir and exe.startswith(f"{bin_dir}/")) or f"{node_dir}/" in cmd:
            out.append((int(proc.name), cmd.strip()))
    return out
