"""The images the real node runs besides promhpa's, built by the release's recipe (one
deterministic layer, an OCI archive; ``release.image``) and cached by their inputs' hash:

- the pod sandbox's pause program (``pause/pause.c``, static);
- Prometheus, the build the local cluster runs (static, with Kubernetes service discovery);
- the demo app (``demo_app.py``) on the image's Debian Python.

Nothing is pulled: the node has no way out, and these are loaded into its runtime.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from release.debs import read_lock
from release.image import PYTHON, USER, unpack_debs
from release.oci import tar_tree, write_archive

from .tools import cache_bin

EPOCH = 315532800  # 1980-01-01: a fixed time for every entry (zip's floor, as wheels use)
PROMETHEUS_IMAGE = "promhpa.local/prometheus:local"
DEMO_IMAGE = "promhpa.local/demo-app:local"
HERE = Path(__file__).resolve().parent


def _cached(name: str, inputs: list[Path], build: Callable[[Path], dict[str, object]]) -> Path:
    """The archive of ``name``, built once per content of its inputs and of this recipe."""
    digest = hashlib.sha256()
    for p in [Path(__file__), *inputs]:
        digest.update(p.read_bytes())
    out = cache_bin().parent / "images" / f"{name}-{digest.hexdigest()[:12]}.oci.tar"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"promhpa-image-{name}-") as tmp:
            root = Path(tmp) / "rootfs"
            root.mkdir()
            run = build(root)
            tmp_out = out.with_suffix(".tmp")
            write_archive(tmp_out, tar_tree(root, EPOCH)[0], run, {"org.opencontainers.image.title": name},
                          "local", "amd64", EPOCH)  # fmt: skip
            tmp_out.rename(out)
    return out


def _users(root: Path) -> None:
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/passwd").write_text(f"root:x:0:0::/:/nonexistent\nnobody:x:65534:65534::/:/nonexistent\n"
                                     f"app:x:{USER}:{USER}::/tmp:/nonexistent\n")  # fmt: skip
    (root / "etc/group").write_text(f"root:x:0:\nnogroup:x:65534:\napp:x:{USER}:\n")
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)


def pause_image(pause: Path) -> Path:
    def build(root: Path) -> dict[str, object]:
        shutil.copy(pause, root / "pause")
        (root / "pause").chmod(0o755)
        return {"Entrypoint": ["/pause"], "User": "65535:65535"}

    return _cached("pause", [pause], build)


def prometheus_image(prometheus: Path) -> Path:
    def build(root: Path) -> dict[str, object]:
        (root / "bin").mkdir()
        shutil.copy(prometheus, root / "bin/prometheus")
        (root / "bin/prometheus").chmod(0o755)
        _users(root)
        (root / "prometheus").mkdir()
        return {"Entrypoint": ["/bin/prometheus"], "User": "65534:65534", "WorkingDir": "/prometheus"}

    return _cached("prometheus", [prometheus], build)


def demo_image() -> Path:
    """Debian's Python (the packages promhpa's image pins) and the demo app: nothing else."""
    lock = HERE.parent / "release" / "debian.lock"

    def build(root: Path) -> dict[str, object]:
        unpack_debs(root, [d for d in read_lock(lock) if d.arch in ("amd64", "all")])
        _users(root)
        (root / "app").mkdir()
        shutil.copy(HERE / "demo_app.py", root / "app/demo_app.py")
        return {
            "Entrypoint": [f"/usr/bin/{PYTHON}", "-u", "/app/demo_app.py"],
            "User": f"{USER}:{USER}",
            "Env": ["PYTHONDONTWRITEBYTECODE=1"],
        }

    return _cached("demo-app", [lock, HERE / "demo_app.py"], build)
