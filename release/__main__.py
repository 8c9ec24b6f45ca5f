"""python -m release lock|image|dist: see release/__init__.py."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from . import debs, dist, image, sbom

ROOT = debs.ROOT


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m release", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    lock = sub.add_parser("lock", help="resolve and pin the image's Debian packages (a Debian bookworm host)")
    lock.add_argument("--arch", default="amd64")
    lock.add_argument("--lock", type=Path, default=debs.LOCK, help="the lock file to write")
    img = sub.add_parser("image", help="build the image archive and its SBOM under build/")
    img.add_argument("--arch", default="amd64", choices=sorted(image.PLATFORMS))
    img.add_argument("--out", type=Path, default=ROOT / "build")
    img.add_argument("--version", help="the version to build as (default: pyproject.toml's)")
    img.add_argument("--lock", type=Path, default=debs.LOCK, help="the Debian packages' lock")
    img.add_argument(
        "--extras",
        default=",".join(image.EXTRAS),
        help=f"the package's extras to hold (default {','.join(image.EXTRAS)}; '' for none)",
    )
    rel = sub.add_parser("dist", help="write a release to dist/")
    rel.add_argument("version")
    rel.add_argument("--out", type=Path, default=ROOT / "dist")
    rel.add_argument("--lock", type=Path, default=debs.LOCK, help="the Debian packages' lock")
    rel.add_argument(
        "--helm",
        default=os.environ.get("HELM", "helm"),
        help="the helm binary that packages the chart (default: $HELM, else helm on PATH; "
        "`make release` passes the one hack/build-tools.sh built)",
    )
    a = ap.parse_args(argv)
    try:
        if a.command == "lock":
            pinned = debs.resolve(a.arch)
            others = [d for d in debs.read_lock() if d.arch not in (a.arch, "all")]
            debs.write_lock(others + pinned, a.lock)
            print(f"{a.lock}: {len(pinned)} packages for {a.arch}")
        elif a.command == "image":
            a.out.mkdir(parents=True, exist_ok=True)
            extras = tuple(e for e in a.extras.split(",") if e)
            built = image.build(a.out, a.version, arch=a.arch, lock=a.lock, extras=extras)
            path = sbom.write(built)
            shutil.rmtree(a.out / "image-work")
            report(built, path)
        else:
            files, built = dist.release(a.version, a.out, a.helm, lock=a.lock)
            for f in files:
                print(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f)
            report(built, None)
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def report(built: image.Built, sbom_path: Path | None) -> None:
    print(f"image  {built.archive}")
    if sbom_path is not None:
        print(f"sbom   {sbom_path}")
    print(f"digest {built.digest}")
    print(f"size   {built.size / 1e6:.1f} MB archive, {built.rootfs_bytes / 1e6:.1f} MB unpacked")


if __name__ == "__main__":
    sys.exit(main())
