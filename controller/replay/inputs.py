"""Where a replay's HPA and its pods' requests come from: a file, standard input, or the
cluster (NAMESPACE/NAME), told apart so that a mistyped path is "no such file", never a
cluster read."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from shared import inputfiles


def _looks_like_a_file(arg: str) -> bool:
    """A path as a user writes one: a YAML or JSON name, or more than one slash, or a
    leading ``.``, ``/`` or ``~`` -- never NAMESPACE/NAME, whose parts are DNS labels."""
    return (
        arg == "-"
        or arg.endswith((".yaml", ".yml", ".json"))
        or arg.count("/") != 1
        or arg.startswith((".", "/", "~"))
    )


def load_hpa(arg: str, kubeconfig: str | None, kind: str = "hpa") -> dict[str, Any]:
    """An HPA from a file (``-``: standard input) or, for NAMESPACE/NAME, from the cluster
    (``kind`` phpa: one of promhpa's own kind). A path that names no file is "no such file",
    never a cluster read."""
    if arg == "-" or Path(arg).exists():
        data = inputfiles.read_one(arg)  # InputError: one line, exit 2
        if not isinstance(data, dict) or data.get("kind") != "HorizontalPodAutoscaler":
            raise inputfiles.InputError(inputfiles.source_name(arg), "not a HorizontalPodAutoscaler")
        return data
    if _looks_like_a_file(arg):
        raise ValueError(f"{arg}: no such file")
    ns, _, name = arg.partition("/")
    if not ns or not name:
        raise ValueError(f"{arg}: no such file, and not NAMESPACE/NAME")
    from shared.kube.client import Kube, load
    from shared.kube.resources import HPA, OWN_HPA

    kube = Kube(load(kubeconfig))
    return dict(asyncio.run(kube.get((OWN_HPA if kind == "phpa" else HPA).path(ns, name))))


def live_requests(hpa: dict[str, Any], kubeconfig: str | None) -> dict[str, str]:
    """The first container's requests in the scale target's pod template (for Resource
    utilization), read live; empty when the target is not a well-known workload."""
    from shared.kube.client import Kube, load
    from shared.kube.resources import by_kind

    ref = hpa["spec"]["scaleTargetRef"]
    group = ref.get("apiVersion", "").rpartition("/")[0]
    kind = by_kind(group, ref.get("kind", ""))
    if kind is None:
        return {}
    obj = asyncio.run(Kube(load(kubeconfig)).get(kind.path(hpa["metadata"]["namespace"], ref["name"])))
    containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return {k: str(v) for k, v in ((containers[0].get("resources") or {}).get("requests") or {}).items()}


def server_version(kubeconfig: str | None) -> str | None:
    """The cluster's release, which a replay of a live HPA decides as by default."""
    from shared.kube.client import Kube, load

    return str(asyncio.run(Kube(load(kubeconfig)).get("/version")).get("gitVersion") or "") or None
