"""Write constraints.txt: every runtime dependency of the installed promhpa (and theirs),
pinned to the versions the tests ran with; the image installs from it (release/image.py), so an image
built later holds what was tested. Run after changing dependencies: make constraints
"""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

from packaging.requirements import Requirement

OUT = Path(__file__).resolve().parent.parent / "constraints.txt"
# the extras the image holds (release/image.py), pinned too; a plain install ignores their pins
IMAGE_EXTRAS = ("aws", "google", "azure")


def pins() -> dict[str, str]:
    seen: dict[str, str] = {}

    def walk(name: str, extras: tuple[str, ...] = ("",)) -> None:
        key = name.lower().replace("_", "-")
        if key in seen:
            return
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            return
        seen[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in extras):
                continue
            walk(req.name)

    walk("promhpa", ("", *IMAGE_EXTRAS))
    seen.pop("promhpa")
    return seen


def main() -> None:
    lines = ["# promhpa's runtime dependencies, pinned as tested (hack/constraints.py; make constraints)"]
    lines += [f"{name}=={version}" for name, version in sorted(pins().items())]
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
