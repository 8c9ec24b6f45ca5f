"""An OCI image archive written from bytes, with no container engine: one layer, its
config and manifest as content-addressed blobs in an image layout, the layout as a tar.
Everything in it is sorted and stamped with one time, so equal inputs give equal bytes
(the image's digest is a function of the commit)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any


def tar_tree(root: Path, epoch: int, *, plain_modes: bool = False) -> tuple[bytes, int]:
    """Every entry under ``root`` in one tar: sorted, owned by root, every mtime the commit's
    (``plain_modes``: 0755 directories and 0644 files, as an archive's layout needs)."""
    buf, total = io.BytesIO(), 0
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(walk_tree(root), key=lambda p: p.relative_to(root).as_posix()):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(root).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = epoch
            info.pax_headers = {}
            if plain_modes:
                info.mode = 0o755 if info.isdir() else 0o644
            if info.isreg():
                total += info.size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue(), total


def walk_tree(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            out.append(Path(dirpath) / n)
    return out


def _blob(layout: Path, data: bytes, media_type: str) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs/sha256" / digest).write_bytes(data)
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def write_archive(
    out: Path, layer_tar: bytes, run: dict[str, Any], labels: dict[str, str], ref: str, arch: str, epoch: int
) -> str:
    """An OCI image layout of one layer (``layer_tar``, gzipped without a name or time) whose
    config runs ``run``, as a tar tagged ``ref``; returns the manifest's digest."""
    layout = out.with_suffix(".layout")
    shutil.rmtree(layout, ignore_errors=True)
    (layout / "blobs/sha256").mkdir(parents=True)
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=9, mtime=0, filename="") as z:
        z.write(layer_tar)
    created = utc(epoch)
    config = {
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": run,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(layer_tar).hexdigest()}"]},
        "history": [{"created": created, "created_by": "python -m release image"}],
    }
    config_desc = _blob(layout, _json(config), "application/vnd.oci.image.config.v1+json")
    layer_desc = _blob(layout, gz.getvalue(), "application/vnd.oci.image.layer.v1.tar+gzip")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer_desc], "annotations": labels}  # fmt: skip
    manifest_desc = _blob(layout, _json(manifest), "application/vnd.oci.image.manifest.v1+json")
    manifest_desc["annotations"] = {"org.opencontainers.image.ref.name": ref}
    manifest_desc["platform"] = {"architecture": arch, "os": "linux"}
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [manifest_desc],
    }
    (layout / "index.json").write_bytes(_json(index))
    (layout / "oci-layout").write_bytes(_json({"imageLayoutVersion": "1.0.0"}))
    out.write_bytes(tar_tree(layout, epoch, plain_modes=True)[0])
    shutil.rmtree(layout)
    return str(manifest_desc["digest"])


def _json(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def utc(epoch: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
