"""An ``argparse.Namespace`` stays at the command-line edge.

A function of the product that takes a Namespace must live in a module that declares
flags itself (calls ``add_argument``): the module reads its own flags into typed options
(a command, or a flag group such as ``prometheus_flags`` or ``DecisionFlags``), and nothing
below the edge sees the Namespace. Only a module that builds a parser sets attributes on
one (the compatibility translators return their values instead of setting them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("adapter", "controller", "shared", "promclient", "rules", "release", "localcluster")


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out.append((str(path.relative_to(ROOT)), ast.parse(path.read_text(), str(path))))
    return out


def _takes_namespace(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    params = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    return any(p.annotation is not None and "Namespace" in ast.unparse(p.annotation) for p in params)


def _calls(tree: ast.Module, method: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
        for n in ast.walk(tree)
    )


def test_a_namespace_is_taken_only_where_its_flags_are_declared() -> None:
    strays = [
        f"{path}: {fn.name}"
        for path, tree in _modules()
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and _takes_namespace(fn)
        if not _calls(tree, "add_argument")
    ]
    assert strays == []


def test_a_namespace_is_changed_only_where_a_parser_is_built() -> None:
    """``setattr(a, ...)`` or ``vars(a).update`` on a Namespace parameter: only in a module
    that builds a parser (``parse_args``), where the command line is read."""
    changed = []
    for path, tree in _modules():
        if _calls(tree, "parse_args"):
            continue
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or not _takes_namespace(fn):
                continue
            names = {
                p.arg
                for p in [*fn.args.args, *fn.args.kwonlyargs]
                if p.annotation is not None and "Namespace" in ast.unparse(p.annotation)
            }
            for n in ast.walk(fn):
                target = n.targets[0] if isinstance(n, ast.Assign) and len(n.targets) == 1 else None
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) in names:
                    changed.append(f"{path}: {fn.name} sets {ast.unparse(target)}")
                called = ast.unparse(n.func) if isinstance(n, ast.Call) else ""
                if called == "setattr" and ast.unparse(n.args[0]) in names:  # type: ignore[attr-defined]
                    changed.append(f"{path}: {fn.name} calls setattr on {ast.unparse(n.args[0])}")  # type: ignore[attr-defined]
                if called in {f"vars({x}).update" for x in names}:
                    changed.append(f"{path}: {fn.name} calls {called}")
    assert changed == []
