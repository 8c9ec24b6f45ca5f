"""The documentation's links lead somewhere: every relative link in the README, docs/ and the
chart's README names a file that exists and, with ``#anchor``, a heading in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "charts/promhpa/README.md",
    *ROOT.glob("docs/*.md"),
]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading slugs: lower case, punctuation dropped, spaces become hyphens."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks are not links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_name_existing_files_and_headings(page: Path) -> None:
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, broken


def test_every_docs_page_is_reachable_from_the_readme_or_another_page() -> None:
    linked = {
        (page.parent / t.partition("#")[0]).resolve()
        for page in PAGES
        for t in links(page)
        if t.partition("#")[0]
    }
    orphans = [p.name for p in ROOT.glob("docs/*.md") if p.resolve() not in linked]
    assert not orphans, orphans


def test_the_readmes_explanation_is_what_decide_prints() -> None:
    """The README's `decide --explain` excerpt is the real output for the first example."""
    import subprocess
    import sys

    readme = (ROOT / "README.md").read_text()
    excerpt = readme.split("`--explain` prints the story instead:\n\n```\n", 1)[1].split("```", 1)[0]
    example = sorted((ROOT / "docs" / "examples").glob("*.yaml"))[0]
    out = subprocess.run(
        [sys.executable, "-m", "controller", "decide", "--explain", str(example)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    printed = [line.rstrip() for line in out.splitlines()]
    assert len(excerpt.strip().splitlines()) >= 5, "the README's excerpt was not found"
    for line in excerpt.rstrip("\n").splitlines():
        assert line.rstrip() in printed, line


def test_architecture_names_every_shared_module_and_only_modules_that_exist() -> None:
    """docs/architecture.md's table of ``shared/`` is drawn from the tree: a module added or
    removed there is added or removed here."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("What each module of `shared/` owns") :]
    table = table[: table.index("\n\n", table.index("| module |"))]
    named = set(re.findall(r"`((?:kube/)?\w+\.py)`", table))
    shared = ROOT / "shared"
    modules = {p.relative_to(shared).as_posix() for p in shared.rglob("*.py") if p.name != "__init__.py"}
    assert named == modules, f"not in the table: {sorted(modules - named)}; gone: {sorted(named - modules)}"


def test_architecture_names_only_modules_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    paths = set(
        re.findall(r"`((?:adapter|controller|shared|rules|promclient|localcluster)/[\w/]+\.py)", text)
    )
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
