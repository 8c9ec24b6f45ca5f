"""Which HPAs claim which pods: upstream's AmbiguousSelector needs, for the pods one HPA
selects, every HPA whose (last seen) scale selector also matches them.

Selectors are registered as each HPA is reconciled and forgotten when it is deleted, as
upstream's controller does. A lookup must not test every HPA of a namespace against every
pod (2,000 HPAs x 10 pods per reconcile): selectors are indexed by their equality
requirements, so only those that can match one of the pods' label pairs are tested.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shared.selectors import Selector

Key = tuple[str, str]  # (namespace, name)
Pair = tuple[str, str, str]  # (namespace, label key, label value)


class SelectorRegistry:
    def __init__(self) -> None:
        self._selectors: dict[Key, Selector] = {}
        self._by_pair: dict[Pair, set[Key]] = {}
        self._unindexed: dict[str, set[Key]] = {}  # selectors without an equality requirement

    def put(self, key: Key, selector: Selector) -> None:
        if self._selectors.get(key) == selector:
            return
        self._drop(key)
        self._selectors[key] = selector
        for entries in self._entries(key[0], selector, make=True):
            entries.add(key)

    def remove(self, key: Key) -> None:
        self._drop(key)

    def selecting(self, namespace: str, pods: Iterable[dict[str, Any]]) -> list[str]:
        """NAMESPACE/NAME of every registered HPA whose selector matches one of ``pods``."""
        labels = [p["metadata"].get("labels") or {} for p in pods]
        candidates = set(self._unindexed.get(namespace, set()))
        for ls in labels:
            for k, v in ls.items():
                candidates |= self._by_pair.get((namespace, k, v), set())
        chosen = [(key, self._selectors[key]) for key in candidates]
        return sorted(f"{ns}/{name}" for (ns, name), sel in chosen if any(sel.matches(ls) for ls in labels))

    def _drop(self, key: Key) -> None:
        old = self._selectors.pop(key, None)
        for entries in self._entries(key[0], old, make=False) if old is not None else ():
            entries.discard(key)

    def _entries(self, namespace: str, selector: Selector, make: bool) -> list[set[Key]]:
        """The index entries a selector is filed under: one per equality pair it requires,
        or its namespace's unindexed set (``make``: created where missing)."""
        pairs = _index_pairs(namespace, selector)
        if pairs is None:
            found = self._unindexed.get(namespace)
            if found is None and make:
                found = self._unindexed[namespace] = set()
            return [found] if found is not None else []
        out = []
        for pair in pairs:
            entry = self._by_pair.get(pair)
            if entry is None and make:
                entry = self._by_pair[pair] = set()
            if entry is not None:
                out.append(entry)
        return out


def _index_pairs(namespace: str, selector: Selector) -> list[Pair] | None:
    """The label pairs one of which a pod must carry to match (from the first equality or
    `in` requirement), or None when the selector has no such requirement."""
    for r in selector.requirements:
        if r.operator in ("=", "==", "in"):
            return [(namespace, r.key, v) for v in r.values]
    return None
