"""Reading snapshot files (YAML or JSON, ``-`` for stdin) for ``decide``.

YAML timestamps are kept as strings, so that the engine's own RFC 3339 parser (and its
error messages) apply to every time in a snapshot.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from shared.textfile import decode_text

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in _Base.yaml_implicit_resolvers.items()
}


class SnapshotFileError(ValueError):
    """The file could not be read or is not YAML/JSON."""


def load_documents(path: str) -> Iterator[Any]:
    """Yield each document in a file (a YAML stream may hold several snapshots)."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        text = decode_text(data)
    except OSError as e:
        raise SnapshotFileError(f"cannot read: {e.strerror or e}") from None
    except ValueError as e:  # UTF-16, binary, not UTF-8: one line, not a traceback
        raise SnapshotFileError(str(e)) from None
    if text.lstrip().startswith("{"):
        try:
            yield json.loads(text)
            return
        except json.JSONDecodeError:
            pass  # maybe YAML flow style; let the YAML parser report the problem
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise SnapshotFileError(f"not valid YAML/JSON{where}: {problem}") from None
    docs = [d for d in docs if d is not None]
    if not docs:
        raise SnapshotFileError("is empty")
    yield from docs
