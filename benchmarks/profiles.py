"""Where a process' CPU goes, from py-spy's collapsed stacks: the shares a table can show.

Why: a path that misses its CPU goal needs the profile that says why, printed beside the
figures it explains rather than left in a file nobody opens. Each sample is charged to
the code it was running (its innermost Python frame): the event loop's own C code (uvloop:
TLS, sockets, callbacks -- the innermost Python frame is the call that entered the loop),
aiohttp's server, the standard library, or a function of ours. Beside that, the share of
samples with any of our frames on the stack (the process' entry and the loop's start, on
every stack, aside): all the CPU our code could give back.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

OURS = ("adapter", "controller", "shared", "rules", "promclient")
_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
_LOOP_ENTRIES = ("run_until_complete", "run_forever", "run")


@dataclass(frozen=True)
class Profile:
    samples: int
    self_shares: list[tuple[str, float]]  # (where, share of samples), largest first
    ours_inclusive: float  # share of samples with any of our frames on the stack


@functools.lru_cache(maxsize=4096)  # the same frames recur in every sample; a bare name walks the tree
def _our_module(file: str, root: str) -> str | None:
    """The dotted name of our module ``file`` is, or None. py-spy shortens paths: absolute,
    relative to a ``sys.path`` entry (``adapter/serving/app.py``), or just the file's name
    when its package's directory is itself on the path (``prometheus.py``)."""
    path = file.replace("\\", "/")
    if root and path.startswith(root + "/"):
        path = path[len(root) + 1 :]
    if path.startswith("/") or path.startswith("<"):
        return None
    if path.split("/", 1)[0] in OURS:
        return path.removesuffix(".py").replace("/", ".")
    if "/" not in path and root:
        found = [
            f"{package}.{sub.relative_to(Path(root) / package).with_suffix('').as_posix().replace('/', '.')}"
            for package in OURS
            for sub in (Path(root) / package).rglob(path)
        ]
        if len(found) == 1:
            return found[0]
    return None


def _where(file: str, func: str, root: str) -> str:
    """The name a frame's CPU is charged to: our module and function, or a library."""
    ours = _our_module(file, root)
    if ours is not None:
        return f"promhpa: {ours} ({func})"
    path = "/" + file.replace("\\", "/").lstrip("/")
    for marker, name in (
        ("/aiohttp/", "aiohttp (request parsing, responses)"),
        ("/multidict/", "aiohttp (headers, URLs)"),
        ("/yarl/", "aiohttp (headers, URLs)"),
        ("/structlog/", "structlog"),
        ("/ssl.py", "ssl module"),
    ):
        if marker in path:
            return name
    if "/asyncio/" in path or "/uvloop/" in path:
        if func.rsplit(".", 1)[-1] in _LOOP_ENTRIES:
            return "event loop's C code (uvloop: TLS, sockets, callbacks)"
        return "asyncio (Python)"
    if "/site-packages/" in path:
        return path.split("/site-packages/", 1)[1].split("/", 1)[0]
    top = path.lstrip("/").split("/", 1)
    if len(top) == 2 and not file.startswith("/"):  # a library, relative to its sys.path entry
        return top[0]
    return "Python standard library"


# our frames under which every sample of the serving thread runs (the process' entry and the
# loop's start): on every stack, so they say nothing about which work is ours
ENTRY_MODULES = frozenset({"shared.entry", "shared.eventloop", "adapter.__main__", "controller.__main__"})


def _is_ours(file: str, root: str) -> bool:
    module = _our_module(file, root)
    return module is not None and module not in ENTRY_MODULES


def summarize(text: str, root: str) -> Profile:
    """``text``: py-spy's ``raw`` output (``frame;frame;... count``, outermost first)."""
    charged: Counter[str] = Counter()
    ours, total = 0, 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [m for m in (_FRAME.match(f) for f in stack.split(";")) if m]
        if not frames:
            continue
        total += count
        leaf = frames[-1]
        charged[_where(leaf["file"], leaf["func"], root)] += count
        if any(_is_ours(m["file"], root) for m in frames):
            ours += count
    if total == 0:
        return Profile(0, [], 0.0)
    shares = sorted(((k, v / total) for k, v in charged.items()), key=lambda kv: (-kv[1], kv[0]))
    return Profile(total, shares, ours / total)


def rows(path: str, profile: Profile, top: int = 6) -> list[str]:
    """Table rows for one path: its largest shares, the rest summed, our code's inclusive share."""
    if not profile.samples:
        return [f"| {path} | (no samples) | |"]
    shown = profile.self_shares[:top]
    rest = sum(s for _, s in profile.self_shares[top:])
    out = [f"| {path} | {where} | {share:.0%} |" for where, share in shown]
    if rest:
        out.append(f"| {path} | everything else | {rest:.0%} |")
    out.append(f"| {path} | **promhpa's own code, inclusive** | **{profile.ours_inclusive:.0%}** |")
    return out


PROFILE_HEADER = "| path | where the samples were | share |"
PROFILE_ALIGN = "|---|---|---:|"


def read(path: Path, root: Path) -> Profile:
    return summarize(path.read_text() if path.exists() else "", str(root))
