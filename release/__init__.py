"""How promhpa is released: its image built from Debian's packages and the project's wheels
(``image``), reproducibly, with an SBOM (``sbom``), and the release directory a user installs
from (``dist``). Development tooling, like ``localcluster``: not part of the distribution.

    python -m release lock          resolve and pin the image's Debian packages (release/debian.lock)
    python -m release image         build/promhpa-VERSION-ARCH.oci.tar, its SBOM, digest and size
    python -m release dist VERSION  dist/: wheel, sdist, chart, image, SBOM and SHA256SUMS
"""
