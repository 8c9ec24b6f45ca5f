"""The informer's indexes (client-go's ``Indexers``): named functions mapping each object
to index keys, and the narrowing of a label selection by them, so one HPA's pods are found
without scanning its namespace."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from shared.selectors import Requirement

Key = tuple[str, str]  # (namespace, name)
IndexFunc = Callable[[dict[str, Any]], Iterable[Hashable]]
Indexes = dict[str, dict[Hashable, set[Key]]]


def namespace_index(obj: dict[str, Any]) -> Iterable[Hashable]:
    return (obj["metadata"].get("namespace", ""),)


INDEXED_OPERATORS = ("=", "==", "in")  # the operators the label index answers exactly


def label_index(obj: dict[str, Any]) -> Iterable[Hashable]:
    ns = obj["metadata"].get("namespace", "")
    return [(ns, k, v) for k, v in (obj["metadata"].get("labels") or {}).items()]


def default_indexers() -> dict[str, IndexFunc]:
    return {"namespace": namespace_index, "label": label_index}


def add_to_indexes(
    indexes: dict[str, dict[Hashable, set[Key]]],
    indexers: dict[str, IndexFunc],
    key: Key,
    obj: dict[str, Any],
) -> None:
    for name, fn in indexers.items():
        index = indexes.setdefault(name, {})
        for value in fn(obj):
            index.setdefault(value, set()).add(key)


def selected_keys(indexes: Indexes, namespace: str | None, requirements: Sequence[Requirement]) -> set[Key]:
    """The keys of one namespace's objects (every namespace's for None) that the label index
    says meet every equality and ``in`` requirement given; the other operators are the
    caller's to check."""
    namespaces = [namespace] if namespace is not None else [str(ns) for ns in indexes.get("namespace", {})]
    labels = indexes.get("label", {})
    keys: set[Key] = set()
    for ns in namespaces:
        narrowed: set[Key] | None = None
        for r in requirements:
            if r.operator in INDEXED_OPERATORS:
                hit: set[Key] = set()
                for v in r.values:
                    hit |= labels.get((ns, r.key, v), set())
                narrowed = hit if narrowed is None else narrowed & hit
        keys |= narrowed if narrowed is not None else indexes.get("namespace", {}).get(ns, set())
    return keys
