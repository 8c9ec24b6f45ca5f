"""The image's Debian packages: pinned in ``release/debian.lock`` (name, version, architecture,
SHA-256 and the path in the archive), fetched once into a cache by checksum, and unpacked
without dpkg -- the data archive inside each ``.deb`` is all an image needs, since nothing
in it is configured at run time (no maintainer scripts run: the one file they would make,
the CA bundle, is made by ``image``).

The lock is resolved by ``lock`` with the host's apt (a Debian bookworm host, or a
``debian:bookworm`` container): the dependency closure of ``ROOTS`` from an empty system,
without recommends, less ``EXCLUDED``. Debian's mirror keeps only the newest version of a
package, so a lock goes stale when a security update lands: ``fetch`` then says so, and
``python -m release lock`` pins the update.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "release" / "debian.lock"
MIRROR = "http://deb.debian.org"
CACHE = Path(os.environ.get("PROMHPA_CACHE", Path.home() / ".cache" / "promhpa")) / "debs"

# what the image runs: Debian's Python 3.11 and its standard library, the C++ runtime some
# wheels link (google-re2), and the CA bundle's sources
ROOTS = ("python3.11-minimal", "libpython3.11-stdlib", "libstdc++6", "ca-certificates")
# pulled in by dependencies but never used by promhpa at run time: a package manager, a
# shell's helpers, the configuration system and the openssl command (ca-certificates' script)
EXCLUDED = {
    "dpkg": "a package manager: nothing is installed at run time",
    "tar": "dpkg's dependency",
    "debconf": "configures packages at install time",
    "openssl": "the command line tool; Python links libssl3",
    "readline-common": "an interactive shell's configuration",
    "libmd0": "dpkg's dependency",
    "libacl1": "tar's dependency",
    "libselinux1": "tar's dependency",
    "libpcre2-8-0": "libselinux1's dependency",
    "libzstd1": "dpkg's dependency",
}


@dataclass(frozen=True)
class Deb:
    name: str
    version: str
    arch: str
    sha256: str
    path: str  # under MIRROR, e.g. debian/pool/main/p/python3.11/...deb

    @property
    def url(self) -> str:
        return f"{MIRROR}/{self.path}"

    def line(self) -> str:
        return f"{self.name} {self.version} {self.arch} {self.sha256} {self.path}"


def read_lock(path: Path = LOCK) -> list[Deb]:
    debs = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 5:
            raise ValueError(
                f"{path}:{n}: expected name, version, architecture, sha256 and path, got {raw!r}"
            )
        debs.append(Deb(*fields))
    return debs


def fetch(deb: Deb) -> Path:
    """The ``.deb`` from the cache, or from Debian's mirror, checked against the lock."""
    cached = CACHE / f"{deb.sha256}.deb"
    if cached.exists():
        return cached
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(deb.url, timeout=60) as r:
            data = r.read()
    except OSError as e:
        raise RuntimeError(
            f"{deb.name} {deb.version}: cannot fetch {deb.url} ({e}); Debian's mirror keeps only the "
            "newest version of a package: `python -m release lock` pins the current ones"
        ) from None
    got = hashlib.sha256(data).hexdigest()
    if got != deb.sha256:
        raise RuntimeError(
            f"{deb.name} {deb.version}: {deb.url} has SHA-256 {got}, the lock says {deb.sha256}"
        )
    tmp = cached.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.rename(cached)
    return cached


def data_tar(deb_file: Path) -> bytes:
    """The data archive of a ``.deb`` (an ar archive of debian-binary, control.tar.* and
    data.tar.*), uncompressed: the files the package installs."""
    blob = deb_file.read_bytes()
    if not blob.startswith(b"!<arch>\n"):
        raise ValueError(f"{deb_file}: not a .deb (no ar header)")
    pos = 8
    while pos < len(blob):
        name, size = blob[pos : pos + 16].decode().strip().rstrip("/"), int(blob[pos + 48 : pos + 58])
        body = blob[pos + 60 : pos + 60 + size]
        pos += 60 + size + size % 2
        if name == "data.tar.xz":
            return lzma.decompress(body)
        if name == "data.tar":
            return body
        if name.startswith("data.tar"):
            raise ValueError(f"{deb_file}: {name} is compressed in a way this tool does not read")
    raise ValueError(f"{deb_file}: no data archive")


def resolve(arch: str) -> list[Deb]:
    """ROOTS' dependency closure from an empty system, as the host's apt resolves it, less
    EXCLUDED, with each package's checksum and archive path."""
    sim = subprocess.run(
        ["apt-get", "install", "--simulate", "--no-install-recommends", "-o", "Dir::State::status=/dev/null",
         "-o", "Debug::NoLocking=1", "-o", f"APT::Architecture={arch}", *ROOTS],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wanted = []
    for line in sim.stdout.splitlines():
        if line.startswith("Inst "):
            name, version = line.split()[1], line.split()[2].strip("(")
            if name not in EXCLUDED:
                wanted.append(f"{name}={version}")
    uris = subprocess.run(
        ["apt-get", "download", "--print-uris", "-o", f"APT::Architecture={arch}", *wanted],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    debs = []
    for line in uris.stdout.splitlines():
        url, filename, _size, checksum = line.split()
        name, version, rest = filename.split("_", 2)
        path = url.strip("'").split("://", 1)[1].split("/", 1)[1]
        debs.append(
            Deb(name, version.replace("%3a", ":"), rest.removesuffix(".deb"), checksum.split(":", 1)[1], path)
        )
    return sorted(debs, key=lambda d: d.name)


def write_lock(debs: list[Deb], path: Path = LOCK) -> None:
    header = [
        "# The image's Debian packages (bookworm), resolved by `python -m release lock`: name, version,",
        "# architecture, SHA-256 of the .deb and its path on deb.debian.org. Not pinned here (unused at",
        "# run time): " + ", ".join(sorted(EXCLUDED)) + ".",
    ]
    path.write_text("\n".join([*header, *(d.line() for d in debs)]) + "\n")
