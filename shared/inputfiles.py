"""Every file and stream a user hands a tool or a server, read within bounds.

A 2.8 KB snapshot whose YAML aliases nest ten deep expands to a billion nodes the moment
anything walks it (a copy, a JSON dump); 10,000 levels of brackets end in a
``RecursionError``; a 50 MB file keeps a tool busy for minutes; ``1.0e+999`` is a float
that no arithmetic survives. So each reader (snapshots, HPA files, rule files, replay
configs, MetricRule manifests, kubeconfigs, CA files, standard input) goes through here:

* **size** first, before anything is parsed: at most ``max_bytes`` are ever read, from a
  file, a pipe or a device alike;
* **depth, aliases and numbers** from libyaml's event stream, which is flat (no recursion,
  nothing built): nesting deeper than ``max_depth``; aliases that would add more than
  ``max_alias_nodes`` nodes when expanded (a few anchors, as Helm values use them, pass;
  a "billion laughs" stops at the first alias over the bound); a plain number that is not
  finite or does not fit in 64 bits;
* only then the real load.

Every refusal is one ``InputError`` line: the file, the line, the key and the limit. Its
``usage`` flag makes the command line exit 2 (``shared.exitcodes``).
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from dataclasses import dataclass, replace
from typing import Any

import yaml

from shared.textfile import decode_text

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

INT64 = 2**63


class InputError(ValueError):
    """A file or stream that cannot be used as given; one line, exit 2."""

    usage = True

    def __init__(self, source: str, message: str, line: int | None = None, key: str = "") -> None:
        where = source + (f":{line}" if line else "")
        super().__init__(f"{where}: {key + ': ' if key else ''}{message}")
        self.source, self.line, self.key, self.message = source, line, key, message

    def detail(self) -> str:
        """The message without the source, for a caller that names the file itself."""
        line = f"line {self.line}: " if self.line else ""
        return line + (f"{self.key}: " if self.key else "") + self.message


@dataclass(frozen=True)
class Limits:
    """What one input may hold. The defaults fit every real input several times over (a
    snapshot of an HPA over 5,000 pods is about 2.5 MiB; Kubernetes keeps a ConfigMap under
    1 MiB) and keep a tool within 500 MB and 30 s on any input."""

    max_bytes: int = 4 * 2**20
    max_depth: int = 100
    max_alias_nodes: int = 100_000


_LIMITS = [Limits()]


def limits() -> Limits:
    return _LIMITS[0]


def set_max_bytes(n: int) -> None:
    """A command line's ``--max-input-size``: the size bound for every input read after it."""
    if n <= 0:
        raise ValueError("the input size limit must be positive")
    _LIMITS[0] = replace(_LIMITS[0], max_bytes=n)


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n} bytes"


def source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def read_bytes(path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of ``path`` (``-``: standard input), never more than the limit: a larger
    file, pipe or device is refused after reading one byte past it."""
    bound = limits().max_bytes if max_bytes is None else max_bytes
    source = source_name(path)
    try:
        if path == "-":
            data = sys.stdin.buffer.read(bound + 1)
        else:
            with open(path, "rb") as f:
                if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                    raise InputError(source, "is a directory; give a file")
                data = f.read(bound + 1)
    except IsADirectoryError:
        raise InputError(source, "is a directory; give a file") from None
    except OSError as e:
        raise InputError(source, f"cannot read it: {e.strerror or e}") from None
    if len(data) > bound:
        raise InputError(
            source, f"is larger than the input limit of {_size(bound)} (--max-input-size raises it)"
        )
    return data


def read_text(path: str, max_bytes: int | None = None) -> str:
    """``read_bytes`` as UTF-8 text, or one line saying what the bytes are."""
    data = read_bytes(path, max_bytes)
    try:
        return decode_text(data)
    except ValueError as e:
        raise InputError(source_name(path), str(e)) from None


def check_yaml(text: str, source: str) -> None:
    """Refuse, before anything is built, what no reader of ``text`` should ever have to
    walk: the module docstring's depth, aliases and numbers. YAML syntax errors are left
    to the loader that follows, which names them as it always did."""
    lim = limits()
    path: list[Any] = []  # per open collection: [is_mapping, key or index, expecting key, nodes]
    anchors: dict[str, int] = {}
    added = 0
    resolver = _Loader("")  # its implicit resolvers tell a plain number from a string

    def key() -> str:
        parts: list[str] = []
        for is_map, k, *_ in path:
            if k is None:
                continue
            parts.append(f"[{k}]" if not is_map else (f".{k}" if parts else str(k)))
        return "".join(parts)

    def counted(n: int, event: Any) -> None:
        """A node of ``n`` nodes (expanded) ends inside the innermost collection."""
        if path:
            top = path[-1]
            top[3] += n
            if top[0]:
                top[2] = not top[2]
            elif isinstance(top[1], int):
                top[1] += 1
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            anchors[anchor] = n

    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.ScalarEvent):
                top = path[-1] if path else None
                if top is not None and top[0] and top[2]:
                    top[1] = event.value  # a mapping key: the path of what follows
                elif not event.style and event.implicit[0] and event.value[:1] in "0123456789+-.":
                    _check_number(event, resolver, source, key)
                counted(1, event)
            elif isinstance(event, yaml.CollectionStartEvent):
                if len(path) >= lim.max_depth:
                    raise InputError(
                        source,
                        f"nested deeper than {lim.max_depth} levels",
                        _line(event),
                        key(),
                    )
                is_map = isinstance(event, yaml.MappingStartEvent)
                if path and path[-1][0] and path[-1][2]:
                    path[-1][1] = "<complex key>"
                path.append([is_map, None if is_map else 0, True, 0, event])
            elif isinstance(event, yaml.CollectionEndEvent):
                frame = path.pop()
                counted(frame[3] + 1, frame[4])
            elif isinstance(event, yaml.AliasEvent):
                n = anchors.get(event.anchor or "", 1)
                added += n
                if added > lim.max_alias_nodes:
                    raise InputError(
                        source,
                        f"its YAML aliases expand to more than {lim.max_alias_nodes:,} nodes "
                        f"(*{event.anchor} here); write the values out or use fewer aliases",
                        _line(event),
                        key(),
                    )
                if path and path[-1][0] and path[-1][2]:
                    path[-1][1] = f"*{event.anchor}"
                counted(n, None)
            elif isinstance(event, yaml.DocumentEndEvent):
                anchors.clear()  # anchors do not cross documents
    except yaml.YAMLError as e:
        if "nesting depth" in str(e):  # libyaml's own bound (1000), met while scanning ahead
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            raise InputError(source, f"nested deeper than {lim.max_depth} levels", line) from None
        return  # the loader reports the syntax error with its own line and column


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def _check_number(event: Any, resolver: Any, source: str, key: Any) -> None:
    tag = resolver.resolve(yaml.ScalarNode, event.value, (True, False))
    value = event.value.replace("_", "")
    line = _line(event)
    if tag == "tag:yaml.org,2002:float":
        try:
            ok = value.lower().lstrip("+-") not in (".inf", ".nan") and math.isfinite(float(value))
        except ValueError:
            ok = True  # YAML 1.1's sexagesimal forms: small by construction
        if not ok:
            raise InputError(source, f"{event.value} is not a finite number", line, key())
    elif tag == "tag:yaml.org,2002:int":
        digits = value.lstrip("+-")
        if len(digits) > 20 or (digits.isdigit() and abs(int(value)) >= INT64):
            raise InputError(source, f"{event.value[:30]} does not fit in 64 bits", line, key())


def _check_json(doc: Any, source: str) -> None:
    """Depth and numbers of a decoded JSON document, walked without recursion."""
    lim = limits()
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= lim.max_depth:
                raise InputError(source, f"nested deeper than {lim.max_depth} levels", key=where)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                sub = f"{where}[{k}]" if isinstance(node, list) else (f"{where}.{k}" if where else str(k))
                stack.append((v, sub, depth + 1))
        elif isinstance(node, float) and not math.isfinite(node):
            raise InputError(source, f"{node} is not a finite number", key=where)
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) >= INT64:
            raise InputError(source, "a number that does not fit in 64 bits", key=where)


def yaml_error(e: yaml.YAMLError, source: str, what: str = "not valid YAML") -> InputError:
    """A loader's error as one line with its line and column."""
    mark = getattr(e, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    column = f"column {mark.column + 1}: " if mark is not None else ""
    return InputError(source, f"{column}{what}: {getattr(e, 'problem', None) or e}", line)


def load_documents(text: str, source: str, loader: type[yaml.SafeLoader] = _Loader) -> list[Any]:
    """Every document of a YAML stream (JSON is read as JSON), within ``limits()``; empty
    documents are dropped."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            doc = json.loads(text)
        except RecursionError:
            raise InputError(source, f"nested deeper than {limits().max_depth} levels") from None
        except ValueError:
            pass  # YAML flow style, or broken: the YAML reader says which
        else:
            _check_json(doc, source)
            return [doc]
    check_yaml(text, source)
    try:
        docs = list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as e:
        raise yaml_error(e, source, "not valid YAML/JSON") from None
    except RecursionError:  # pragma: no cover - check_yaml bounds the depth first
        raise InputError(source, "nested too deeply") from None
    return [d for d in docs if d is not None]


def load_one(text: str, source: str, loader: type[yaml.SafeLoader] = _Loader) -> Any:
    """The one document of ``text`` (None when empty); a stream of several is refused."""
    docs = load_documents(text, source, loader)
    if len(docs) > 1:
        raise InputError(source, f"holds {len(docs)} YAML documents; give one")
    return docs[0] if docs else None


def read_documents(path: str, loader: type[yaml.SafeLoader] = _Loader) -> list[Any]:
    """``read_text`` then ``load_documents``."""
    return load_documents(read_text(path), source_name(path), loader)


def read_one(path: str, loader: type[yaml.SafeLoader] = _Loader) -> Any:
    """``read_text`` then ``load_one``."""
    return load_one(read_text(path), source_name(path), loader)


# a PEM bundle of CAs is a few hundred KiB at most (the whole Mozilla set is about 220 KiB)
PEM_MAX_BYTES = 2**20


def read_pem(path: str, what: str = "certificate file") -> str:
    """A PEM file (CA bundle, certificate, key) as text, or one line naming the file and
    what is wrong with it: missing, too large, not text, no PEM block."""
    text = read_text(path, PEM_MAX_BYTES)
    if "-----BEGIN " not in text:
        raise InputError(path, f"is not a PEM {what} (no '-----BEGIN' line)")
    return text
