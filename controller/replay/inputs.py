"""Where a replay's HPA and its pods' requests come from: a file, standard input, or the
cluster (NAMESPACE/NAME), told apart so that a mistyped path is "no such file", never a
cluster read."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import yaml

from shared.textfile import decode_text


def _looks_like_a_file(arg: str) -> bool:
    """A path as a user writes one: a YAML or JSON name, or more than one slash, or a
    leading ``.``, ``/`` or ``~`` -- never NAMESPACE/NAME, whose parts are DNS labels."""
    return (
        arg == "-"
        or arg.endswith((".yaml", ".yml", ".json"))
        or arg.count("/") != 1
        or arg.startswith((".", "/", "~"))
    )


def load_hpa(arg: str, kubeconfig: str | None) -> dict[str, Any]:
    """An HPA from a file (``-``: standard input) or, for NAMESPACE/NAME, from the cluster.
    A path that names no file is "no such file", never a cluster read."""
    path = Path(arg)
    if arg == "-" or path.exists():
        where = "standard input" if arg == "-" else arg
        try:
            raw = sys.stdin.buffer.read() if arg == "-" else path.read_bytes()
            data = yaml.safe_load(decode_text(raw))
        except ValueError as e:  # not UTF-8 text
            raise ValueError(f"{where}: {e}") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = f"line {mark.line + 1}: " if mark is not None else ""
            raise ValueError(f"{where}: {line}not valid YAML: {getattr(e, 'problem', None) or e}") from None
        except OSError as e:
            raise ValueError(f"{where}: cannot read it: {e.strerror or e}") from None
        if not isinstance(data, dict) or data.get("kind") != "HorizontalPodAutoscaler":
            raise ValueError(f"{where}: not a HorizontalPodAutoscaler")
        return data
    if _looks_like_a_file(arg):
        raise ValueError(f"{arg}: no such file")
    ns, _, name = arg.partition("/")
    if not ns or not name:
        raise ValueError(f"{arg}: no such file, and not NAMESPACE/NAME")
    from shared.kube.client import Kube, load
    from shared.kube.resources import HPA

    kube = Kube(load(kubeconfig))
    return dict(asyncio.run(kube.get(HPA.path(ns, name))))


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
