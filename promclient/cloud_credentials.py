"""Credentials a cloud issues for a while (AWS' from STS or the Pod Identity agent, Google's
and Azure's access tokens): held, used to sign or authorize each request, and refreshed
before they expire -- never on the event loop, since fetching them is network I/O.

The loop signs with the credentials it holds; when a third of their lifetime (at most 5
minutes) is left a refresh goes to a worker thread, once at a time. A refresh that fails
keeps the old credentials until they expire and is reported (``error``, and the
``on_failure`` callback for the metric) naming the backend and the credential source; only a
request with no valid credentials left waits for (or fails on) a fetch.

Each cloud is a subclass: ``fetch_blocking`` asks its library for credentials and their
lifetime, ``sign`` puts them on one request.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

import structlog

log = structlog.get_logger("promhpa.prometheus")
REFRESH_AT_MOST = 300.0  # seconds before expiry
NO_EXPIRY = float("inf")


class CloudCredentials:
    """One backend's credentials from a cloud's library; see the module docstring."""

    scheme = "credentials"  # how errors name the kind ("sigv4", "google")

    def __init__(self, who: str, on_failure: Callable[[], None] | None = None) -> None:
        self.who = who
        self._held: tuple[Any, float, float] | None = None  # (credentials, fetched at, expires at), monotonic
        self._lock = threading.Lock()
        self._refreshing: asyncio.Future[None] | None = None
        self._on_failure = on_failure or (lambda: None)
        self.source = "not resolved yet"  # where the library found them, once it has
        self.error: str | None = None  # the last refresh failure, until one succeeds

    # --- what each cloud provides -------------------------------------------------------------

    def fetch_blocking(self) -> tuple[Any, float | None]:
        """Fresh credentials and the seconds they last (None: for ever); a worker thread's job."""
        raise NotImplementedError

    def sign(
        self, held: Any, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> dict[str, str]:
        """``headers`` with what authorizes this request, exactly as it will be sent."""
        raise NotImplementedError

    # --- fetching (worker threads) --------------------------------------------------------------

    def fetch(self) -> None:
        with self._lock:
            try:
                value, lasts = self.fetch_blocking()
            except Exception as e:  # each library raises its own kinds; each is one failed refresh
                self.error = (
                    f"{self.who}: {self.scheme} credentials from {self.source} could not be fetched: {e}"
                )
                self._on_failure()
                log.warning(
                    f"{self.scheme} credentials not refreshed; the old ones are used until they expire",
                    backend=self.who,
                    source=self.source,
                    error=str(e),
                )
                raise
            now = time.monotonic()
            self._held = (value, now, now + lasts if lasts is not None else NO_EXPIRY)
            self.error = None

    def refused(self) -> None:
        """The server refused what we signed with (revoked, or expired early): the next
        request fetches anew instead of using what is held."""
        if self._held is not None:
            value, fetched, _ = self._held
            self._held = (value, fetched, time.monotonic())

    # --- the loop's side -------------------------------------------------------------------------

    def _valid(self, now: float) -> bool:
        return self._held is not None and now < self._held[2]

    def _needs_fetch(self, now: float) -> bool:
        if self._held is None:
            return True
        _, fetched, expires = self._held
        if expires == NO_EXPIRY:
            return False
        return now >= expires - min(REFRESH_AT_MOST, (expires - fetched) / 3)

    async def held(self, pool: Executor) -> Any:
        """The credentials to sign with now: held ones while valid (refreshed in the
        background when due), else the outcome of a fetch."""
        now = time.monotonic()
        if self._needs_fetch(now) and self._refreshing is None:
            self._refreshing = asyncio.ensure_future(self._refresh(pool))
        if not self._valid(now):
            if self._refreshing is not None:
                await asyncio.shield(self._refreshing)
            if not self._valid(time.monotonic()):
                raise PermissionError(self.error or f"{self.who}: no valid {self.scheme} credentials")
        assert self._held is not None
        return self._held[0]

    async def _refresh(self, pool: Executor) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self.fetch)
        except Exception as e:  # logged and kept in ``error`` by fetch; the held ones serve while valid
            log.debug("credentials refresh failed", backend=self.who, error=str(e))
        finally:
            self._refreshing = None
