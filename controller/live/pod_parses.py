"""The informer's pods as the engine's ``Pod``s, each converted once.

Every reconcile of an HPA reads its pods, and between reconciles almost none of them
change: the informer replaces a pod object when the pod changes and never edits one in
place. So a pod is parsed again only when its object is a different one, which the
identity test here notices (the object is held, so its ``id`` is not reused meanwhile).
The pods of one template share one spec object (``pod_fields``), and its parse is shared
the same way, so their ``Pod``s share their containers and quantities: at 100,000 pods,
tens of MiB. A malformed pod is parsed every time, so its error is the parser's.
"""

from __future__ import annotations

from typing import Any

from controller.engine.model import Pod
from controller.engine.parse import PodSpecParts, parse_pod, parse_pod_spec
from controller.engine.reader import _Reader

Key = tuple[str, str]
# distinct pod specs remembered (a cluster has far fewer templates than pods); past it the
# table starts again, and only pods parsed after that stop sharing with those before
SPECS = 65_536


class PodParses:
    def __init__(self, limit: int = 1_000_000) -> None:
        # bounds what deleted pods leave behind; above the pods a cluster holds (a limit at
        # 100,000 emptied the table at every turn with 100,000 pods)
        self.limit = limit
        self._pods: dict[Key, tuple[Any, Pod]] = {}
        # pods' specs, by the identity of the (shared) object each was parsed from
        self._specs: dict[int, tuple[Any, PodSpecParts]] = {}

    def pods(self, objects: list[dict[str, Any]]) -> tuple[Pod, ...]:
        """``objects`` (as the informer holds them, in the order given) as ``Pod``s; a
        malformed one raises ``SnapshotError`` under its snapshot path, ``pods[i]``."""
        return tuple(self.pod(_Reader(o, f"pods[{i}]")) for i, o in enumerate(objects))

    def pod(self, r: _Reader) -> Pod:
        meta = r.data.get("metadata")
        ns, name = (meta.get("namespace"), meta.get("name")) if isinstance(meta, dict) else (None, None)
        if not isinstance(ns, str) or not isinstance(name, str):
            return parse_pod(r)  # malformed: parse_pod says what is wrong
        hit = self._pods.get((ns, name))
        if hit is not None and hit[0] is r.data:
            return hit[1]
        labels = meta.get("labels")
        if not (
            isinstance(labels, dict) and all(type(k) is str and type(v) is str for k, v in labels.items())
        ):
            labels = None  # parse_pod reads (or rejects) them itself
        pod = parse_pod(r, self._spec(r), labels)
        if len(self._pods) >= self.limit:
            self._pods.clear()
        self._pods[(ns, name)] = (r.data, pod)
        return pod

    def _spec(self, r: _Reader) -> PodSpecParts | None:
        """The parse of the pod's spec if that very object was parsed before; None:
        ``parse_pod`` parses it itself."""
        raw = r.data.get("spec")
        if not isinstance(raw, dict):
            return None
        hit = self._specs.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        parsed = parse_pod_spec(r.obj("spec"))
        if len(self._specs) >= SPECS:
            self._specs.clear()
        self._specs[id(raw)] = (raw, parsed)
        return parsed
