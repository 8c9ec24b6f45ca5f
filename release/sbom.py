"""The image's software bill of materials (CycloneDX 1.6, JSON): every Debian package it was
made from and every Python distribution installed in it, each with its package URL, so a
scanner matches them against advisories. Written by cyclonedx-python-lib; its serial number
and time come from the image's digest and commit, so the same image gives the same SBOM.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

from cyclonedx.model import HashAlgorithm, HashType
from cyclonedx.model.bom import Bom, BomMetaData
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from .image import Built


def sbom(built: Built) -> str:
    image = Component(
        name="promhpa",
        version=built.version,
        type=ComponentType.CONTAINER,
        bom_ref=f"promhpa@{built.digest}",
        purl=PackageURL("oci", None, "promhpa", built.digest, {"tag": built.version}),
    )
    components = []
    for deb in built.debs:
        purl = PackageURL("deb", "debian", deb.name, deb.version, {"arch": deb.arch, "distro": "debian-12"})
        sha = HashType(alg=HashAlgorithm.SHA_256, content=deb.sha256)
        components.append(_library(deb.name, deb.version, purl, [sha]))
    for name, version in built.wheels.items():
        components.append(
            _library(name, version, PackageURL("pypi", None, name.lower().replace("_", "-"), version))
        )
    bom = Bom(
        components=components,
        serial_number=uuid.uuid5(uuid.NAMESPACE_URL, f"promhpa-image:{built.digest}"),
        metadata=BomMetaData(component=image, timestamp=dt.datetime.fromtimestamp(built.epoch, dt.UTC)),
    )
    bom.register_dependency(image, components)  # everything is in the image's one layer
    return JsonV1Dot6(bom).output_as_string(indent=2)


def _library(name: str, version: str, purl: PackageURL, hashes: list[HashType] | None = None) -> Component:
    return Component(name=name, version=version, type=ComponentType.LIBRARY, purl=purl,
                     bom_ref=purl.to_string(), hashes=hashes or [])  # fmt: skip


def write(built: Built) -> Path:
    path = built.archive.with_name(built.archive.name.removesuffix(".oci.tar") + ".sbom.cdx.json")
    path.write_text(sbom(built) + "\n")
    return path
