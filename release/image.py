"""The image both processes run from, built without a container engine or a registry: a root
file system from Debian's packages (``debs``) and the project's wheels at ``constraints.txt``,
written as an OCI image archive whose bytes depend only on its inputs.

What makes it reproducible: the source is the commit (``git archive``), every time is the
commit's (``SOURCE_DATE_EPOCH``), the packages are pinned by checksum, bytecode is compiled
with unchecked hashes (no timestamps), and the one layer is a tar of sorted entries owned by
root with the commit's mtime, gzipped without a name or time. Two builds of one commit give
one digest (tests/release/test_image.py builds twice).

What it leaves out: a shell, a package manager, compilers, pip, documentation and locales
(each package's copyright file stays). It runs as 65532:65532 and writes nowhere but /tmp.
"""

from __future__ import annotations

import compileall
import io
import os
import py_compile
import shutil
import stat
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .debs import LOCK, ROOT, Deb, data_tar, fetch, read_lock
from .oci import tar_tree, utc, walk_tree, write_archive

PYTHON = "python3.11"
SITE = f"usr/local/lib/{PYTHON}/dist-packages"  # on Debian's Python's path, before its own
USER = 65532
ENV = {
    "PATH": "/usr/local/bin:/usr/bin",
    "PYTHONDONTWRITEBYTECODE": "1",  # the root file system is read-only
    "PYTHONUNBUFFERED": "1",  # logs as they happen
    "HOME": "/tmp",
}
COMMANDS = {
    "promhpa-adapter": "adapter",
    "promhpa-controller": "controller",
    "kubectl-promhpa": "kubectl_plugin",
}
# what an image does not need of a package (its copyright file stays)
DROPPED = ("usr/share/man/", "usr/share/info/", "usr/share/locale/", "usr/share/lintian/", "usr/share/bug/")
# and of the standard library and C library: help()'s topics, the test suite's support files,
# and glibc's iconv converters (Python's codecs are its own)
DROPPED_STDLIB = (f"usr/lib/{PYTHON}/pydoc_data/", f"usr/lib/{PYTHON}/test/")
GCONV = "/gconv/"
# what the image leaves out of its Python packages, and why
PRUNED = {
    "kubernetes/aio": "the client's asyncio twin (68 MB): promhpa never imports it (shared/kube)",
    "websocket/tests": "a package's own tests",
    "certifi/tests": "a package's own tests",
}
# botocore's service models (28 MB, 449 services): the image keeps the ones the AWS credential
# chain creates clients for -- STS (IRSA's AssumeRoleWithWebIdentity, roleARN's AssumeRole),
# SSO and SSO-OIDC (SSO profiles), Sign-In (`aws login` profiles) -- and the shared files
# (endpoints, partitions, retries, defaults). SigV4 signing itself reads no model.
BOTOCORE_SERVICES = {"sts", "sso", "sso-oidc", "signin"}
SOURCES = (".pyi", ".pyx", ".pxd", ".c", ".h", ".cpp")  # type stubs and C sources beside built modules
# kept as bytecode only: generated API code (thousands of modules imported at start) whose
# lines no traceback of ours needs; every other module keeps its source beside its bytecode
SOURCELESS = ("kubernetes/client",)
# the package's extras the image holds: botocore for Amazon Managed Prometheus (SigV4; 23 MB
# of the image), google-auth for Google's, azure-identity for Azure's (docs/release.md);
# ``--extras ""`` builds without
EXTRAS = ("aws", "google", "azure")
PLATFORMS = {  # pip's --platform tags for each architecture (glibc 2.36 in bookworm)
    "amd64": [f"manylinux_2_{v}_x86_64" for v in range(36, 16, -1)] + ["manylinux2014_x86_64"],
    "arm64": [f"manylinux_2_{v}_aarch64" for v in range(36, 16, -1)] + ["manylinux2014_aarch64"],
}


@dataclass(frozen=True)
class Built:
    archive: Path
    digest: str  # the manifest's, as a registry names the image
    size: int  # the archive's bytes
    rootfs_bytes: int  # the unpacked root file system
    version: str
    debs: list[Deb]
    wheels: dict[str, str]  # Python distribution -> version
    epoch: int


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def source(work: Path, version: str | None) -> tuple[Path, str]:
    """The commit's tracked files (not the work tree's edits), with ``version`` set."""
    src = work / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(src, filter="data")
    pyproject = src / "pyproject.toml"
    text = pyproject.read_text()
    current = next(line.split('"')[1] for line in text.splitlines() if line.startswith("version = "))
    if version and version != current:
        pyproject.write_text(text.replace(f'version = "{current}"', f'version = "{version}"', 1))
    return src, version or current


def wheel(src: Path, out: Path, epoch: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("promhpa-*.whl"):
        old.unlink()
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(src)], check=True, env=env)  # fmt: skip
    (built,) = out.glob("promhpa-*.whl")
    return built


def install_wheels(whl: Path, site: Path, arch: str, extras: tuple[str, ...] = ()) -> dict[str, str]:
    """The wheel with ``extras`` and its dependencies at constraints.txt, as built for the
    image's platform (manylinux wheels only: nothing is compiled here), into ``site``."""
    wanted = f"{whl}[{','.join(extras)}]" if extras else str(whl)
    shutil.rmtree(site, ignore_errors=True)
    platforms = [f"--platform={p}" for p in PLATFORMS[arch]]
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
         "--only-binary=:all:", *platforms, "--python-version=3.11", "--implementation=cp", "--abi=cp311",
         f"--target={site}", f"--constraint={ROOT / 'constraints.txt'}", wanted],
        check=True,
    )  # fmt: skip
    versions = {}
    for info in site.glob("*.dist-info"):
        meta = (info / "METADATA").read_text(errors="replace").splitlines()
        name = next(line.split(": ", 1)[1] for line in meta if line.startswith("Name: "))
        versions[name] = next(line.split(": ", 1)[1] for line in meta if line.startswith("Version: "))
        (info / "direct_url.json").unlink(missing_ok=True)  # names the build's own path
        (info / "INSTALLER").unlink(missing_ok=True)
        record = info / "RECORD"
        if record.exists():
            # rows of files removed here: the build's path, the installer, and the console
            # scripts (which name this host's Python; the image has its own)
            kept = [
                r
                for r in record.read_text().splitlines()
                if "/direct_url.json," not in r and "/INSTALLER," not in r and not r.startswith("../../bin/")
            ]
            record.write_text("\n".join(kept) + "\n")
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts with this host's Python in them
    for pruned in PRUNED:
        shutil.rmtree(site / pruned)
    models = site / "botocore" / "data"
    for service in models.iterdir() if models.is_dir() else ():
        if service.is_dir() and service.name not in BOTOCORE_SERVICES:
            shutil.rmtree(service)
    for path in site.rglob("*"):
        if path.suffix in SOURCES and path.is_file():
            path.unlink()
        elif ".so" in path.suffixes and b".debug_info" in path.read_bytes():
            # a wheel built with debug information (uvloop's: 11 of its 13 MB); binutils'
            # strip, as Debian's packages are stripped
            subprocess.run(["strip", "--strip-debug", str(path)], check=True)
    return dict(sorted(versions.items()))


def unpack_debs(rootfs: Path, debs: list[Deb]) -> None:
    for top in ("bin", "sbin", "lib", "lib64"):  # merged /usr, as bookworm's base-files has it
        (rootfs / "usr" / top).mkdir(parents=True, exist_ok=True)
        (rootfs / top).symlink_to(f"usr/{top}")
    for deb in debs:
        with tarfile.open(fileobj=io.BytesIO(data_tar(fetch(deb))), mode="r:") as tar:
            members = [m for m in tar.getmembers() if _wanted(m)]
            tar.extractall(rootfs, members=members, filter=_from_debian)


def _wanted(m: tarfile.TarInfo) -> bool:
    name = m.name.removeprefix("./")
    if name.startswith("usr/share/doc/"):
        return name.endswith("/copyright") or m.isdir()
    if name.startswith("usr/lib/") and GCONV in name:
        return False
    return not name.startswith(DROPPED + DROPPED_STDLIB)


def _from_debian(m: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """Debian's own archives, checked by checksum: links may point anywhere inside the image
    (absolute targets resolve in it, not here), but no entry may be written outside ``dest``."""
    name = m.name.removeprefix("./")
    if name.startswith("/") or ".." in Path(name).parts:
        raise tarfile.FilterError(f"{m.name}: outside the root file system")
    return m.replace(
        mode=m.mode & 0o755 if m.isreg() else m.mode, uid=0, gid=0, uname="", gname="", deep=False
    )


def system_files(rootfs: Path) -> None:
    """What maintainer scripts and a base image would have made: the CA bundle (as
    update-ca-certificates writes it), the unprivileged user, /tmp, and the commands."""
    certs = sorted((rootfs / "usr/share/ca-certificates").rglob("*.crt"))
    bundle = rootfs / "etc/ssl/certs/ca-certificates.crt"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_bytes(b"".join(c.read_bytes().rstrip(b"\n") + b"\n" for c in certs))
    # where Debian's OpenSSL looks (its OPENSSLDIR; the openssl package, left out, links them)
    (rootfs / "usr/lib/ssl").mkdir(parents=True, exist_ok=True)
    (rootfs / "usr/lib/ssl/cert.pem").symlink_to("/etc/ssl/certs/ca-certificates.crt")
    (rootfs / "usr/lib/ssl/certs").symlink_to("/etc/ssl/certs")
    (rootfs / "etc/passwd").write_text(
        f"root:x:0:0:root:/root:/nonexistent\npromhpa:x:{USER}:{USER}::/tmp:/nonexistent\n"
    )
    (rootfs / "etc/group").write_text(f"root:x:0:\npromhpa:x:{USER}:\n")
    (rootfs / "etc/nsswitch.conf").write_text("passwd: files\ngroup: files\nhosts: files dns\n")
    (rootfs / "tmp").mkdir(exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    bin_dir = rootfs / "usr/local/bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for command, entry in COMMANDS.items():
        script = bin_dir / command
        # no shell: the kernel runs the interpreter named on the first line; the guard keeps a
        # process multiprocessing spawns (which runs this script again as __mp_main__) from
        # starting a second server on the parent's ports
        script.write_text(
            f"#!/usr/bin/{PYTHON} -s\nimport sys\n\nfrom shared.entry import {entry}\n\n"
            f'if __name__ == "__main__":\n    sys.exit({entry}())\n'
        )
        script.chmod(0o755)


def compile_bytecode(rootfs: Path) -> None:
    """.pyc next to every module (the root is read-only at run time, so Python could not
    write them), with unchecked hashes: no timestamps in them, and none checked."""
    unchecked = py_compile.PycInvalidationMode.UNCHECKED_HASH
    for d in (rootfs / SITE / s for s in SOURCELESS):
        if not compileall.compile_dir(d, quiet=2, ddir=f"/{d.relative_to(rootfs)}", legacy=True,
                                      invalidation_mode=unchecked):  # fmt: skip
            raise RuntimeError(f"byte-compiling {d} failed")
        for source in d.rglob("*.py"):
            source.unlink()
    for d in (rootfs / f"usr/lib/{PYTHON}", rootfs / SITE):
        if not compileall.compile_dir(
            d, quiet=2, ddir=f"/{d.relative_to(rootfs)}", invalidation_mode=unchecked
        ):
            raise RuntimeError(f"byte-compiling {d} failed")


def layer(rootfs: Path, epoch: int) -> tuple[bytes, int]:
    """The root file system as one tar (``tar_tree``: the user is in the config). Returns the
    tar and the bytes of its files."""
    return tar_tree(rootfs, epoch)


def oci_archive(out: Path, layer_tar: bytes, arch: str, epoch: int, version: str, revision: str) -> str:
    """promhpa's image: an OCI image layout with one manifest, as a tar; returns the
    manifest's digest."""
    labels = {
        "org.opencontainers.image.title": "promhpa",
        "org.opencontainers.image.description": "Kubernetes HPA metrics adapter and controller on Prometheus",
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.created": utc(epoch),
    }
    run = {
        "User": f"{USER}:{USER}",
        "Env": [f"{k}={v}" for k, v in ENV.items()],
        "Cmd": ["promhpa-adapter", "--help"],
        "WorkingDir": "/tmp",
        "ExposedPorts": {"6443/tcp": {}, "10258/tcp": {}},
        "Labels": labels,
    }
    return write_archive(out, layer_tar, run, labels, version, arch, epoch)


def build(
    out_dir: Path,
    version: str | None = None,
    arch: str = "amd64",
    lock: Path = LOCK,
    extras: tuple[str, ...] = EXTRAS,
) -> Built:
    """The image of the commit checked out, at ``version`` (pyproject.toml's if None), with
    the package's ``extras`` (the default: ``aws``, ``google`` and ``azure``, so the clouds' managed
    Prometheus services work)."""
    debs = [d for d in read_lock(lock) if d.arch in (arch, "all")]
    if not debs:
        raise RuntimeError(
            f"{lock} pins no package for {arch}: `python -m release lock --arch {arch}` on such a host"
        )
    epoch = int(git("log", "-1", "--format=%ct"))
    work = out_dir / "image-work"
    src, version = source(work, version)
    whl = wheel(src, work / "wheels", epoch)
    rootfs = work / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    rootfs.mkdir(parents=True)
    unpack_debs(rootfs, debs)
    wheels = install_wheels(whl, rootfs / SITE, arch, extras)
    system_files(rootfs)
    compile_bytecode(rootfs)
    for p in walk_tree(rootfs):  # readable by the unprivileged user; nothing setuid
        if not p.is_symlink():
            mode = p.stat().st_mode
            p.chmod((mode & 0o1777 & ~(stat.S_ISUID | stat.S_ISGID)) | 0o444 | (0o111 if p.is_dir() else 0))
    tar, rootfs_bytes = layer(rootfs, epoch)
    archive = out_dir / f"promhpa-{version}-{arch}.oci.tar"
    digest = oci_archive(archive, tar, arch, epoch, version, git("rev-parse", "HEAD"))
    return Built(archive, digest, archive.stat().st_size, rootfs_bytes, version, debs, wheels, epoch)
