"""``make release VERSION=x.y.z``: what a user installs, in ``dist/``, from the commit checked
out with its version set -- the wheel and sdist, the wheels they depend on (so that
``pip install --no-index`` works offline), the chart packaged with that version as its
appVersion (the default image tag), the image archive and its SBOM, and SHA256SUMS.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import sbom
from .debs import LOCK
from .image import Built, build, git, source

VERSION = re.compile(r"^\d+\.\d+\.\d+([.-]?(a|b|rc)\d+)?$")


def release(
    version: str, out: Path, helm: str, arch: str = "amd64", lock: Path = LOCK
) -> tuple[list[Path], Built]:
    """The release at ``version`` in ``out``; ``helm`` packages the chart (the caller finds it:
    ``make release`` takes the one ``hack/build-tools.sh`` built)."""
    if shutil.which(helm) is None:
        raise RuntimeError(f"no helm at {helm!r}: `make release` builds one, or pass --helm PATH")
    if not VERSION.match(version):
        raise ValueError(f"VERSION={version!r}: expected x.y.z (a PEP 440 release, as 0.2.0 or 1.0.0rc1)")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    work = out.parent / "build" / "release-work"
    src, version = source(work, version)
    epoch = git("log", "-1", "--format=%ct")
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch}
    build_args = ["--no-isolation", "--wheel", "--sdist", "--outdir", str(out), str(src)]
    subprocess.run(
        [sys.executable, "-m", "build", *build_args], check=True, env=env, stdout=subprocess.DEVNULL
    )
    (whl,) = out.glob(f"promhpa-{version}-*.whl")
    pins = ["--constraint", str(src / "constraints.txt")]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--only-binary=:all:",
            "-d",
            str(out / "wheels"),
            *pins,
            str(whl),
        ],
        check=True,
    )
    (out / "wheels" / whl.name).unlink(missing_ok=True)  # the project's own wheel is dist/'s
    chart = [
        str(src / "charts" / "promhpa"),
        "--version",
        version,
        "--app-version",
        version,
        "--destination",
        str(out),
    ]
    subprocess.run([helm, "package", *chart], check=True, stdout=subprocess.DEVNULL)
    built = build(out, version, arch, lock)
    sbom.write(built)
    shutil.rmtree(out / "image-work")
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(out)}\n" for p in files)
    (out / "SHA256SUMS").write_text(sums)
    return [*files, out / "SHA256SUMS"], built
