"""``check-config`` of MetricRule and ClusterMetricRule manifests: the verdict the adapter
would write on each object's status, before it is applied.

Why the same judging workers as the adapter: the verdict must be the adapter's, word for
word, with the same limits (the ``--team-rule-*`` flags are accepted here too). A query
that would crash or stall the parser costs this command one worker, as it costs the adapter
one, and is reported like any other invalid rule.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import yaml

from adapter.metricrules.judging import RuleJudge
from adapter.metricrules.team_rules import CLUSTER, NAMESPACED, Limits, Verdict, key_of
from shared import inputfiles

from .check_config import MAX_LINES, print_capped, print_document

KINDS = (NAMESPACED, CLUSTER)
_KIND = re.compile(r"""kind["']?\s*:\s*["']?(Cluster)?MetricRule\b""")
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def manifests(text: str, source: str) -> list[tuple[int, dict[str, Any]]] | None:
    """The MetricRule objects of a YAML stream with their first lines, or None when the
    stream is not made of them (it is then a rule file, whose reader reports any syntax
    error). The bounded loader's limits hold first (``InputError``)."""
    if not _KIND.search(text):  # a rule file: not composed twice
        return None
    inputfiles.check_yaml(text, source)
    found: list[tuple[int, dict[str, Any]]] = []
    builder = _Loader("")
    try:
        for node in yaml.compose_all(text, Loader=_Loader):
            obj = builder.construct_document(node)
            if not (isinstance(obj, dict) and obj.get("kind") in KINDS):
                return None
            found.append((node.start_mark.line + 1, obj))
    except yaml.YAMLError:
        return None
    return found or None


async def check_manifests(
    path: str, found: list[tuple[int, dict[str, Any]]], limits: Limits, timeout: float, output: str = "text"
) -> int:
    """Each object's verdict, one line each; 0 when every one would be served, 2 otherwise."""
    judge = RuleJudge(limits, timeout=timeout)
    await asyncio.to_thread(judge.start)
    try:
        now = time.time()
        verdicts = await asyncio.gather(*(judge.judge(obj["kind"], obj, now) for _, obj in found))
    finally:
        await asyncio.to_thread(judge.close)
    bad: list[str] = []
    objects: list[dict[str, Any]] = []
    for (line, obj), got in zip(found, verdicts, strict=True):
        kind, ns, name = key_of(obj["kind"], obj)
        where = f"{path}:{line}: {kind} {ns + '/' if ns else ''}{name}"
        entry: dict[str, Any] = {"line": line, "kind": kind, "namespace": ns, "name": name}
        if isinstance(got, Verdict):
            bad.append(f"{where}: {got.reason}: {got.message}")
            entry.update(valid=False, reason=got.reason, message=got.message)
        else:
            entry.update(valid=True, metric=got.metric)
            if output == "text":
                print(f"{where}: valid" + (f" (served as {got.metric!r})" if got.metric else ""))
        objects.append(entry)
    code = 2 if bad else 0
    if output != "text":
        print_document(
            {"file": path, "valid": not bad, "exitCode": code, "objects": objects[:MAX_LINES]}, output
        )
        return code
    print_capped(bad)
    print(f"{len(bad)} error(s)" if bad else "OK")
    return code
