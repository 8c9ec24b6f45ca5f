#!/bin/sh
# Runs a make target of this checkout inside a debian:bookworm container, for hosts that are
# not Debian bookworm (docs/release.md): the image is built with the same packages, Python
# and binutils as on a bookworm host, so its digest is the same.
#   docker run --rm -v "$PWD":/src -w /src debian:bookworm hack/in-debian.sh image
set -eu
apt-get update -qq
apt-get install -y -qq --no-install-recommends make git python3.11-venv binutils ca-certificates >/dev/null
git config --global --add safe.directory "$(pwd)"
# a virtualenv of the container's own Python, apart from the checkout's .venv
exec make VENV=/tmp/promhpa-venv PYTHON=python3.11 "$@"
