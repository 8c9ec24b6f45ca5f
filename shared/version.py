"""The version both commands report (``--version``): the installed distribution's."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def promhpa_version() -> str:
    try:
        return version("promhpa")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
