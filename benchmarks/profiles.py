"""Where a process' CPU goes, from py-spy's collapsed stacks: the shares a table can show.

Why: a path that misses its CPU goal needs the profile that says why, printed beside the
figures it explains rather than left in a file nobody opens. Each sample is charged to
the code it was running (its innermost Python frame): the event loop's own C code (uvloop:
TLS, sockets, callbacks -- the innermost Python frame is the call that entered the loop),
aiohttp's server, the standard library, or a module of ours. Beside that, the share of
samples with any of our frames on the stack: all the CPU our code could give back.
"""

from __future__ import annotations

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


def _where(file: str, func: str, root: str) -> str:
    """The name a frame's CPU is charged to."""
    path = file.replace("\\", "/")
    if root and path.startswith(root):
        module = path[len(root) :].lstrip("/").removesuffix(".py").replace("/", ".")
        if module.split(".", 1)[0] in OURS:
            return f"promhpa: {module}"
    for marker, name in (
        ("/aiohttp/", "aiohttp (request parsing, responses)"),
        ("/multidict/", "aiohttp (headers, URLs)"),
        ("/yarl/", "aiohttp (headers, URLs)"),
        ("/structlog/", "structlog"),
        ("/ssl.py", "ssl module"),
    ):
        if marker in path:
            return name
    if "/asyncio/" in path or path.endswith("eventloop.py"):
        if func in _LOOP_ENTRIES:
            return "event loop's C code (uvloop: TLS, sockets, callbacks)"
        return "asyncio (Python)"
    if "/site-packages/" in path:
        return path.split("/site-packages/", 1)[1].split("/", 1)[0]
    return "Python standard library"


def _is_ours(file: str, root: str) -> bool:
    if not root or not file.startswith(root):
        return False
    return file[len(root) :].lstrip("/").split("/", 1)[0] in OURS


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
