"""The product's import graph has no cycle: every pair of modules depends one way only, so
each module can be read, tested and moved after what it imports. import-linter's contracts
(pyproject.toml) hold the layers; this finds any cycle they do not name, function-level
imports included (grimp reads every import statement, those only a type checker sees too),
in the product and in its tooling alike."""

from __future__ import annotations

import grimp

# the product and its tooling: tests, the local cluster, benchmarks and the release scripts
PACKAGES = (
    "shared",
    "rules",
    "promclient",
    "adapter",
    "controller",
    "localcluster",
    "tests",
    "benchmarks",
    "release",
)


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other_even_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)  # a cache could hold another checkout
    assert len(graph.modules) > 300  # the whole product and its tooling were read
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_third_module() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")):
        graph.add_import(importer=importer, imported=imported)
    assert cycles(graph) == [["a", "b", "c"]]
