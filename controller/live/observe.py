"""What one reconcile sees: the one path from live state to a snapshot.

The reconciler and ``python -m controller snapshot`` both call ``Observer.observe``, with
the same informers (so the same label index picks the same pods), the same scale lookup
through discovery and the same metrics reads; the engine's input stays plain data
(``assemble.snapshot``). That is what makes a saved snapshot replay the live decision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controller.engine.memo import ParseMemo
from controller.engine.model import History, Settings
from shared.kube.client import Kube
from shared.kube.discovery import RESTMapper
from shared.kube.errors import KubeError
from shared.kube.informer import Informer
from shared.kube.resources import HPA
from shared.selectors import SelectorError
from shared.selectors import parse_cached as parse_selector

from . import assemble
from .hpa_selectors import SelectorRegistry
from .metrics_fetch import fetch
from .scale_objects import ScaleConversionError, as_scale_client_returns
from .scale_reads import ScaleReads


@dataclass(frozen=True)
class Observation:
    snapshot: dict[str, Any]
    hpa: dict[str, Any]
    scale_path: str | None  # where to write a rescale; None when the scale could not be read


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
    memo: ParseMemo | None = None  # the reconciler's: the flags and memory as it last wrote them
    scales: ScaleReads | None = None  # None: GET every scale (``snapshot``, ``--scale-reads=get``)

    def __post_init__(self) -> None:
        # one document for the flags, the same object every reconcile (the memo parses it once)
        self._settings_doc = assemble.settings_to_wire(self.settings)

    async def _scale(self, hpa: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None, str | None]:
        ref = hpa.get("spec", {}).get("scaleTargetRef") or {}
        try:
            api_version, kind = ref.get("apiVersion", ""), ref.get("kind", "")
            # discovery (a thread) only the first time a kind is seen, not every reconcile
            mapping = self.mapper.cached_mapping(api_version, kind)
            if mapping is None:
                mapping = await asyncio.to_thread(self.mapper.mapping, api_version, kind)
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
        """The live snapshot of one HPA, with the HPA object and scale path it came from."""
        hpa = self.hpas.get(namespace, name) or await self.kube.get(HPA.path(namespace, name))
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
        metrics: dict[str, list[Any]] = {}
        if scale is not None and selector:
            metrics = await fetch(self.kube, self.mapper, hpa, selector, self.metrics_timeout)
        history_doc = None
        if history is not None and self.memo is not None:
            history_doc = self.memo.history_wire((namespace, name), history)
        snap = assemble.snapshot(
            now,
            self.settings,
            hpa,
            scale,
            scale_error,
            pods,
            metrics,
            history,
            history_doc,
            self._settings_doc,
        )
        if len(selecting) > 1:
            snap["selectingHPAs"] = selecting
        return Observation(snap, hpa, path)

    def forget(self, namespace: str, name: str) -> None:
        self.selectors.remove((namespace, name))
