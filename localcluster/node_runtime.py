"""The real node's container runtime as tools and tests reach it: its folder and binaries,
crictl and ctr against its containerd, images loaded from OCI archives (nothing is ever
pulled), and a pod's network namespace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .host import ClusterHost
from .tools import ClusterError, log

NAMESPACE = "k8s.io"  # containerd's namespace the CRI plugin keeps its images and containers in


def node_dir(c: ClusterHost) -> Path:
    return c.dir / "node"


def sock(c: ClusterHost) -> Path:
    return node_dir(c) / "containerd" / "containerd.sock"


def binary(c: ClusterHost, name: str) -> str:
    assert c.bins is not None
    return str(Path(c.bins.node) / name)


def crictl(c: ClusterHost, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """crictl against the node's containerd (what the kubelet sees: sandboxes, containers)."""
    return subprocess.run(
        [binary(c, "crictl"), f"--runtime-endpoint=unix://{sock(c)}", f"--image-endpoint=unix://{sock(c)}",
         "--timeout=30s", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def ctr(c: ClusterHost, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """ctr in the CRI plugin's namespace (images as the kubelet finds them)."""
    return subprocess.run(
        [binary(c, "ctr"), f"--address={sock(c)}", f"--namespace={NAMESPACE}", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def load_image(c: ClusterHost, archive: Path, name: str) -> None:
    """An OCI archive into the node's runtime as ``name`` (what a pod's ``image`` names; the
    kubelet then finds it present and pulls nothing)."""
    if "containerd" not in c.pids:
        raise ClusterError(f"no real node in {c.dir}: start one with `python -m localcluster up --real-node`")
    repo, _, tag = name.rpartition(":")
    if not repo or "/" in tag:
        raise ClusterError(f"{name}: name the image as REPOSITORY:TAG")
    # the archive's reference is a tag without a repository: containerd names it
    # <base-name>:<that tag>; a different tag asked for is one more name of the same image
    # (a name removed afterwards would leave the CRI plugin's cache naming it)
    out = ctr(c, "images", "import", "--platform=linux/amd64", "--local", f"--base-name={repo}", str(archive))
    if out.returncode != 0:
        raise ClusterError(f"importing {archive} into the node's containerd failed: {out.stderr.strip()}")
    imported = f"{repo}:{_archive_ref(archive)[1]}"
    if name != imported:  # (--force: the name may hold an image loaded before, in this D)
        tagged = ctr(c, "images", "tag", "--force", imported, name)
        if tagged.returncode != 0:
            raise ClusterError(f"naming the image {name} failed: {tagged.stderr.strip()}")
    log(f"loaded {archive.name} as {name}")


def _archive_ref(archive: Path) -> tuple[str, str]:
    """(the image's title, its tag), from the archive's manifest and index."""
    import tarfile

    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        desc = index["manifests"][0]
        blob = tar.extractfile(f"blobs/sha256/{desc['digest'].split(':')[1]}")
        manifest = json.load(blob)  # type: ignore[arg-type]
    title = manifest.get("annotations", {}).get("org.opencontainers.image.title", archive.name.split("-")[0])
    return title, desc["annotations"]["org.opencontainers.image.ref.name"]


def default_reference(archive: Path) -> str:
    """registry.local/<the image's title>:<its tag> (promhpa's: registry.local/promhpa:<version>)."""
    title, tag = _archive_ref(archive)
    return f"registry.local/{title}:{tag}"


def pod_netns(c: ClusterHost, namespace: str, pod: str) -> str:
    """The path of a pod's network namespace (under containerd's state directory)."""
    ids = crictl(c, "pods", "--namespace", namespace, "--name", pod, "--state", "ready", "-q").stdout.split()
    if not ids:
        raise ClusterError(f"no ready sandbox of {namespace}/{pod} on the real node")
    spec = json.loads(crictl(c, "inspectp", ids[0]).stdout)["info"]["runtimeSpec"]
    return str(next(n["path"] for n in spec["linux"]["namespaces"] if n["type"] == "network"))
