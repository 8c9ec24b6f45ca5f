"""The regex differential test: rules.goregexp against Go's own regexp, over generated
patterns, names and ``as`` templates (compile errors, matches, expansions), through both
of its paths (RE2, and Python's re on the subset both dialects read alike)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localcluster.tools import Binaries
from localcluster.tools import cache_bin
from rules import goregexp
from tests.support import missing

pytestmark = [pytest.mark.tools]
CASES = 3000

ATOMS = [
    "a", "b", "x", "_", ":", "0", "9", "total", "é", " ", "-", "/",
    r"\.", ".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\p{L}", r"\pL", r"\PL", r"\p{Greek}",
    "[a-c]", "[[:alpha:]_]", "[[:digit:]]", "[^a]", r"[\d_]", "[a-zA-Z0-9_:]", "[_.]", "[]a]",
    r"\z", r"\b", r"\B", r"\A", r"\Q.+\E", "^", "$", r"\n", r"\x41", r"\101",
    "(?i)", "(?s)", "(?U)", "(?m)", "(?!x)", "(?=x)", r"\1", "{,3}", "}", "{", "x{1001}",
]  # fmt: skip
QUANTIFIERS = ["", "", "", "*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{2,}", "**", "{1,3}?"]
NAME_CHARS = "abcxyz_:019 é]\n.-"
TEMPLATES = [
    "$0", "$1", "${1}", "$2", "$n1", "${n1}", "$1_per_second", "${1}_per_second", "$$", "$01",
    "${a-b}", "$", "x", "_total", "${", "$é", "$n1$1", "${10}", "prefix_${n2}_$2",
]  # fmt: skip


def regex_binary() -> str:
    path = Path(Binaries(cache_bin()).goregexp)
    if not path.exists():
        missing(f"Go's regexp driver is not built at {path}: run `make cluster-tools`")
    return str(path)


def piece(r: random.Random, depth: int) -> str:
    x = r.random()
    if depth < 3 and x < 0.15:
        inner = "".join(piece(r, depth + 1) for _ in range(r.randint(1, 3)))
        if r.random() < 0.3:
            inner += "|" + "".join(piece(r, depth + 1) for _ in range(r.randint(0, 2)))
        opener = r.choice(["(", "(", "(?:", "(?P<n1>", "(?P<n2>", "(?<n2>", "(?i:"])
        return opener + inner + ")" + r.choice(QUANTIFIERS)
    return r.choice(ATOMS) + r.choice(QUANTIFIERS)


def pattern(r: random.Random) -> str:
    body = "".join(piece(r, 0) for _ in range(r.randint(1, 5)))
    return r.choice(["", "", "^"]) + body + r.choice(["", "", "$"])


def names(r: random.Random, rx: str) -> list[str]:
    out = ["http_requests_total", "a_]]_total", "", "x", "x\n"]
    for _ in range(6):
        out.append("".join(r.choice(NAME_CHARS) for _ in range(r.randint(0, 12))))
    return out


def cases(seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    fixed = [
        r"^[[:alpha:]_]+_total$", r"^\p{L}+_total$", r"^(?!x)(.*)$", r"^(.*)_total$",
        r"^container_(.*)_seconds_total$", r"^(.*)_total\z", r"(?P<name>[a-z]+)_(\d+)", "",
    ]  # fmt: skip
    patterns = fixed + [pattern(r) for _ in range(CASES - len(fixed))]
    return [{"pattern": p, "template": r.choice(TEMPLATES), "names": names(r, p)} for p in patterns]


def go_answers(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stdin = "".join(json.dumps(c) + "\n" for c in batch)
    out = subprocess.run(
        [regex_binary()], input=stdin, capture_output=True, text=True, timeout=120, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def ours(case: dict[str, Any], allow_fast: bool) -> dict[str, Any]:
    try:
        rx = goregexp.compile(case["pattern"], allow_fast=allow_fast)
    except goregexp.GoRegexpError as e:
        return {"error": str(e)}
    results = []
    for name in case["names"]:
        m = rx.search(name)
        results.append(
            {"matched": m is not None, "expanded": goregexp.expand(rx, case["template"], m) if m else ""}
        )
    return {"groups": rx.groups, "results": results}


def known_difference(pattern: str, name: str) -> bool:
    """RE2 evaluates ``\\B`` between the bytes of a multi-byte UTF-8 character, where Go's
    regexp (which steps by rune) never looks: the one difference found, and documented
    (docs/migration.md)."""
    return r"\B" in pattern and not name.isascii()


def compare(theirs: dict[str, Any], mine: dict[str, Any]) -> str | None:
    if bool(theirs.get("error")) != bool(mine.get("error")):
        return f"Go error {theirs.get('error')!r}, ours {mine.get('error')!r}"
    if theirs.get("error"):
        return None
    if theirs["groups"] != mine["groups"]:
        return f"groups {theirs['groups']} != {mine['groups']}"
    if theirs["results"] != mine["results"]:
        return f"results {theirs['results']} != {mine['results']}"
    return None


@pytest.mark.parametrize("allow_fast", [True, False], ids=["as-served", "re2-only"])
def test_matching_and_expansion_equal_gos_regexp(allow_fast: bool) -> None:
    batch = cases(2026)
    theirs = go_answers(batch)
    differing = []
    fast = 0
    for case, answer in zip(batch, theirs, strict=True):
        if allow_fast and not answer.get("error"):
            fast += goregexp.compile(case["pattern"]).fast
        mine = ours(case, allow_fast)
        for i, name in enumerate(case["names"]):
            if known_difference(case["pattern"], name) and "results" in answer and "results" in mine:
                answer["results"][i] = mine["results"][i]
        diff = compare(answer, mine)
        if diff:
            differing.append(f"{case['pattern']!r} / {case['template']!r}: {diff}")
    refused = sum(1 for a in theirs if a.get("error"))
    print(f"{len(batch)} patterns ({refused} refused by Go, {fast} searched by re): {len(differing)} differ")
    assert differing == [], f"{len(differing)} differ; first:\n" + "\n".join(differing[:10])
    assert refused > 100  # not vacuous: errors are compared too
    if allow_fast:
        assert fast > 100  # and the fast path is exercised


def test_the_issues_patterns_behave_as_in_go() -> None:
    alpha = goregexp.compile(r"^[[:alpha:]_]+_total$")
    assert alpha.search("http_requests_total") is not None
    assert alpha.search("a_]]_total") is None
    assert goregexp.compile(r"^\p{L}+_total$").search("héllo_total") is not None
    with pytest.raises(goregexp.GoRegexpError, match="invalid perl operator"):
        goregexp.compile(r"^(?!x)(.*)$")
    rx = goregexp.compile(r"^(.*)_total$")
    m = rx.search("http_requests_total")
    assert m is not None
    assert goregexp.expand(rx, "$1_per_second", m) == ""  # Go reads the name "1_per_second"
    assert goregexp.expand(rx, "${1}_per_second", m) == "http_requests_per_second"
