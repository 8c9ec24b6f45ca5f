"""Reading snapshot files (YAML or JSON, ``-`` for stdin) for ``decide``.

YAML timestamps are kept as strings, so that the engine's own RFC 3339 parser (and its
error messages) apply to every time in a snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from shared import inputfiles

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in _Base.yaml_implicit_resolvers.items()
}


class SnapshotFileError(ValueError):
    """The file could not be read, is not YAML/JSON, or is over a limit of the bounded
    loader (``shared.inputfiles``); the message leaves the file's name to the caller."""


def load_documents(path: str) -> Iterator[Any]:
    """Yield each document in a file (a YAML stream may hold several snapshots), read
    within the bounded loader's limits."""
    try:
        docs = inputfiles.read_documents(path, loader=_Loader)
    except inputfiles.InputError as e:
        raise SnapshotFileError(e.detail()) from None
    if not docs:
        raise SnapshotFileError("is empty")
    yield from docs
