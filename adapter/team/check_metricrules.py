"""``check-config`` of MetricRule and ClusterMetricRule manifests: the verdict the adapter
would write on each object's status, before it is applied.

Why the same judging workers as the adapter: the verdict must be the adapter's, word for
word, with the same limits (the ``--team-rule-*`` flags are accepted here too). A query
that would crash or stall the parser costs this command one worker, as it costs the adapter
one, and is reported like any other invalid rule.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import yaml

from .judging import RuleJudge
from .team_rules import CLUSTER, NAMESPACED, Limits, Verdict, key_of

KINDS = (NAMESPACED, CLUSTER)


def manifests(text: str) -> list[tuple[int, dict[str, Any]]] | None:
    """The MetricRule objects of a YAML stream with their first lines, or None when the
    stream is not made of them (it is then a rule file)."""
    found: list[tuple[int, dict[str, Any]]] = []
    try:
        for node in yaml.compose_all(text):
            obj = yaml.safe_load(yaml.serialize(node))
            if not (isinstance(obj, dict) and obj.get("kind") in KINDS):
                return None
            found.append((node.start_mark.line + 1, obj))
    except yaml.YAMLError:
        return None
    return found or None


async def check_manifests(
    path: str, found: list[tuple[int, dict[str, Any]]], limits: Limits, timeout: float
) -> int:
    """Each object's verdict, one line each; 0 when every one would be served, 2 otherwise."""
    judge = RuleJudge(limits, timeout=timeout)
    await asyncio.to_thread(judge.start)
    try:
        now = time.time()
        verdicts = await asyncio.gather(*(judge.judge(obj["kind"], obj, now) for _, obj in found))
    finally:
        await asyncio.to_thread(judge.close)
    bad = 0
    for (line, obj), got in zip(found, verdicts, strict=True):
        kind, ns, name = key_of(obj["kind"], obj)
        where = f"{path}:{line}: {kind} {ns + '/' if ns else ''}{name}"
        if isinstance(got, Verdict):
            bad += 1
            print(f"error: {where}: {got.reason}: {got.message}", file=sys.stderr)
        else:
            print(f"{where}: valid" + (f" (served as {got.metric!r})" if got.metric else ""))
    print(f"{bad} error(s)" if bad else "OK")
    return 2 if bad else 0
