"""Credentials as a cluster rotates them, for the rotation tests: a directory laid out as the
kubelet mounts a Secret (one symlink swapped per rotation), and CAs with the certificates
they issue."""

from __future__ import annotations

import os
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from localcluster.pki import issue
from localcluster.pki import make_ca


class Secret:
    """A directory laid out as the kubelet mounts a Secret: ``NAME -> ..data/NAME`` and
    ``..data -> ..<version>``; ``write`` swaps ``..data`` in one rename."""

    def __init__(self, path: Path) -> None:
        self.path, self.version = path, 0
        path.mkdir(parents=True)

    def write(self, files: dict[str, bytes]) -> None:
        self.version += 1
        version = self.path / f"..v{self.version}"
        version.mkdir()
        for name, data in files.items():
            (version / name).write_bytes(data)
        tmp = self.path / "..data_tmp"
        tmp.symlink_to(version.name)
        os.replace(tmp, self.path / "..data")
        for name in files:
            link = self.path / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")

    def __truediv__(self, name: str) -> Path:
        return self.path / name


@dataclass
class Pki:
    """CAs by name, and the certificates they issue, as PEM bytes."""

    d: Path
    cas: dict[str, Any] = field(default_factory=dict)

    def ca(self, name: str) -> bytes:
        if name not in self.cas:
            self.cas[name] = make_ca(self.d / name, name)
        return (self.d / f"{name}.crt").read_bytes()

    def cert(self, name: str, ca: str, server: bool = False) -> tuple[bytes, bytes]:
        issue(self.d / name, self.cas[ca], name, ips=("127.0.0.1",), server=server)
        return (self.d / f"{name}.crt").read_bytes(), (self.d / f"{name}.key").read_bytes()
