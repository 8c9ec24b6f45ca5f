"""Rules change without a restart: the rule file is re-read when it changes.

A ConfigMap mounted as a volume is updated in place by the kubelet (an atomic swap of the
``..data`` link), so the file's content is what is watched, every ``--config-reload-interval``.
A changed file is validated first, with the checks ``check-config`` makes without
Prometheus; a valid one replaces the rules at once and discovery runs again (the old index
serves until the new one is whole); an invalid one changes nothing: the adapter keeps
serving the old rules, logs the errors (file:line:key), counts the refusal in
``promhpa_adapter_rules_reloads_total{result="error"}`` and stays ready -- a bad edit must
not take the metrics away.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import structlog

from promclient.promapi import PrometheusUnavailable
from rules.admission import judge
from rules.config import ConfigError
from shared import inputfiles

log = structlog.get_logger("adapter")


class RuleReloader:
    def __init__(
        self,
        path: str,
        apply: Callable[[Any], None],
        relist: Callable[[], Any],
        on_result: Callable[[str], None],
        interval: float,
    ) -> None:
        self.path, self.apply, self.relist, self.on_result, self.interval = (
            path,
            apply,
            relist,
            on_result,
            interval,
        )
        self.digest = self._digest(self._read())

    def _read(self) -> str | inputfiles.InputError | None:
        """The file's text; None while it is missing (a ConfigMap's files are swapped by
        renaming, so it can be for a moment); the bounded loader's error when it cannot be
        used (too large, not UTF-8), which refuses the reload like any broken rule."""
        if not os.path.exists(self.path):
            return None
        try:
            return inputfiles.read_text(self.path)
        except inputfiles.InputError as e:
            return e

    @staticmethod
    def _digest(text: str | inputfiles.InputError | None) -> str | None:
        return hashlib.sha256(str(text).encode()).hexdigest() if text is not None else None

    async def check(self) -> str:
        """unchanged | reloaded | refused"""
        text = self._read()
        digest = self._digest(text)
        if digest == self.digest or text is None:
            return "unchanged"  # a missing file (mid-swap) is retried at the next look
        self.digest = digest
        try:
            if isinstance(text, inputfiles.InputError):
                raise ConfigError(str(text))
            config = judge(text, self.path).usable()  # the verdict start-up gives
        except ConfigError as e:
            log.error("rule file refused; still serving the previous rules", file=self.path, error=str(e))
            self.on_result("error")
            return "refused"
        self.apply(config)
        self.on_result("success")
        log.info(
            "rule file reloaded",
            file=self.path,
            custom_rules=len(config.rules),
            external_rules=len(config.external_rules),
        )
        with contextlib.suppress(PrometheusUnavailable):  # the periodic relist retries
            await self.relist()
        return "reloaded"

    async def run(self, _: Any) -> AsyncIterator[None]:
        """An aiohttp cleanup context: the watch runs while the app does."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.interval)
                try:
                    await self.check()
                except Exception as e:  # the watch must outlive any one bad look
                    log.warning("rule file check failed", file=self.path, error=str(e))

        task = asyncio.create_task(loop())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
