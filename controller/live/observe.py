"""What one reconcile sees: the one path from live state to the engine's input.

The reconciler and ``python -m controller snapshot`` both call ``Observer.observe``, with
the same informers (so the same label index picks the same pods), the same scale lookup
through discovery and the same metrics reads. The reconciler decides on the typed view
(``engine.parse.observed``: what was read, parsed once, no document in between); the
snapshot command writes the same reads as a document (``Observation.document``), which
``parse_snapshot`` reads back into that very call. That is what makes a saved snapshot
replay the live decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controller.engine.model import History, Settings, Snapshot
from controller.engine.parse import observed
from shared.kube.client import Kube
from shared.kube.discovery import RESTMapper
from shared.kube.errors import KubeError
from shared.kube.informer import Informer
from shared.kube.resources import HPA, Resource
from shared.selectors import SelectorError
from shared.selectors import parse_cached as parse_selector

from . import assemble
from .hpa_selectors import SelectorRegistry
from .metrics_fetch import fetch
from .pod_parses import PodParses
from .scale_objects import ScaleConversionError, as_scale_client_returns
from .scale_reads import ScaleReads


@dataclass(frozen=True)
class Observation:
    """What one reconcile read, as read."""

    now: datetime
    settings: Settings
    hpa: dict[str, Any]  # the HPA object (status writes and events go against it)
    scale: dict[str, Any] | None  # None: ``scale_error`` says why
    scale_error: str | None
    scale_path: str | None  # where to write a rescale; None when the scale could not be read
    pods: list[dict[str, Any]]
    metrics: dict[str, list[Any]]
    history: History | None  # the HPA's memory; None: none kept (``snapshot`` without one)
    selecting: tuple[str, ...]  # the HPAs whose selectors match these pods, when more than one

    def view(self, parses: PodParses) -> Snapshot:
        """What the engine decides on; ``SnapshotError`` names a malformed field."""
        return observed(
            self.now,
            self.settings,
            self.hpa,
            self.scale,
            self.scale_error,
            parses.pods(self.pods),
            self.metrics,
            self.history if self.history is not None else History(),
            self.selecting,
        )

    def document(self) -> dict[str, Any]:
        """These reads as a snapshot file (``python -m controller snapshot``)."""
        doc = assemble.snapshot(
            self.now,
            self.settings,
            self.hpa,
            self.scale,
            self.scale_error,
            self.pods,
            self.metrics,
            self.history,
        )
        if self.selecting:
            doc["selectingHPAs"] = list(self.selecting)
        return doc


@dataclass
class Observer:
    kube: Kube
    mapper: RESTMapper
    hpas: Informer
    pods: Informer
    settings: Settings
    metrics_timeout: float = 15.0
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    selectors: SelectorRegistry = field(default_factory=SelectorRegistry)
    scales: ScaleReads | None = None  # None: GET every scale (``snapshot``, ``--scale-reads=get``)
    kind: Resource = HPA  # the built-in HPAs, or promhpa's own kind
    # promhpa's own kind: the built-in HPAs' selectors too, so that a target claimed by both
    # kinds is upstream's AmbiguousSelector for ours (the built-in controller cannot see ours)
    other_selectors: SelectorRegistry | None = None

    async def _scale(self, hpa: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None, str | None]:
        ref = hpa.get("spec", {}).get("scaleTargetRef") or {}
        try:
            api_version, kind = ref.get("apiVersion", ""), ref.get("kind", "")
            # discovery (a thread) only the first time a kind is seen, not every reconcile
            mapping = self.mapper.cached_mapping(api_version, kind)
            if mapping is None:
                mapping = await self.mapper.mapping(api_version, kind)
            namespace, name = hpa["metadata"]["namespace"], ref.get("name", "")
            path = mapping.scale_path(namespace, name)
            if self.scales is not None:
                scale = await self.scales.read(mapping, namespace, name)
            else:
                scale = await self.kube.get(path)
            return as_scale_client_returns(scale), None, path
        except KubeError as e:
            return None, e.message, None
        except ScaleConversionError as e:
            return None, str(e), None

    async def observe(self, namespace: str, name: str, history: History | None) -> Observation:
        """Everything one reconcile of this HPA reads."""
        hpa = self.hpas.get(namespace, name) or await self.kube.get(self.kind.path(namespace, name))
        now = self.clock()
        scale, scale_error, path = await self._scale(hpa)
        selector = (scale or {}).get("status", {}).get("selector", "")
        try:  # only the pods the engine would select, found through the informer's label index
            chosen = parse_selector(selector) if selector else None
        except SelectorError:
            chosen = None  # the engine reports the bad selector itself
        pods = self.pods.select(namespace, chosen)
        selecting: list[str] = []
        if chosen is not None:
            self.selectors.put((namespace, name), chosen)
            selecting = self.selectors.selecting(namespace, pods)
            if self.other_selectors is not None:
                others = self.other_selectors.selecting(namespace, pods)
                selecting = sorted([*selecting, *(f"{o} ({HPA.api_version})" for o in others)])
        metrics: dict[str, list[Any]] = {}
        if scale is not None and selector:
            metrics = await fetch(self.kube, self.mapper, hpa, selector, self.metrics_timeout)
        return Observation(
            now,
            self.settings,
            hpa,
            scale,
            scale_error,
            path,
            pods,
            metrics,
            history,
            tuple(selecting) if len(selecting) > 1 else (),
        )

    def forget(self, namespace: str, name: str) -> None:
        self.selectors.remove((namespace, name))
