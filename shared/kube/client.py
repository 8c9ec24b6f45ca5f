"""Kubernetes API access for both processes, on the event loop.

One small surface -- ``get``, ``post``, ``put``, ``watch`` on raw paths -- with who we are
taken from the official client's configuration (kubeconfig or in-cluster loading, TLS,
tokens and their refresh are the client's) and every request sent by one transport,
``shared.kube.http``, from the event loop. Callers work with plain dicts in the wire
format. Failures are typed errors built from the server's ``Status`` (``errors``); nothing
retries behind the caller's back, so a timeout means what it says.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from shared import inputfiles
from shared.version import promhpa_version

from .errors import KubeconfigError
from .http import AsyncHTTP, Query
from .ratelimit import PerClient, TokenBucket

if TYPE_CHECKING:
    import kubernetes


# the kubeconfig context a command line chose (``--context``), for every load() after it
_CONTEXT: list[str] = []


def use_context(name: str) -> None:
    """Use kubeconfig context ``name`` instead of the current-context from now on (a command
    line's ``--context``, as kubectl's)."""
    _CONTEXT[:] = [name]


def load(kubeconfig: str | None = None) -> kubernetes.client.ApiClient:
    """A client from --kubeconfig, else in-cluster config, else the default kubeconfig.

    The kubernetes package is imported here, not with this module: importing it (its
    configuration loaders pull in yaml, oauthlib, requests, dateutil, pydantic) is about a
    third of a process' start-up, and a caller that loads the client in a worker thread
    (the adapter does, while Prometheus answers its first discovery) overlaps that with
    waiting instead of adding it."""
    import kubernetes

    conf = kubernetes.client.Configuration()
    if kubeconfig:
        _check_kubeconfig(kubeconfig)
        try:
            kubernetes.config.load_kube_config(
                config_file=kubeconfig, client_configuration=conf, context=_context()
            )
        except Exception as e:  # the loader raises ConfigException, and KeyError/TypeError on odd shapes
            raise KubeconfigError(kubeconfig, f"no usable credentials: {_said(e)}") from None
    else:
        try:
            kubernetes.config.load_incluster_config(client_configuration=conf)
        except kubernetes.config.ConfigException:
            default = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or os.path.expanduser(
                "~/.kube/config"
            )
            if not os.path.exists(default):
                raise KubeconfigError(
                    default, "not found, and not running in a cluster: give --kubeconfig"
                ) from None
            _check_kubeconfig(default)
            try:
                kubernetes.config.load_kube_config(client_configuration=conf, context=_context())
            except Exception as e:
                raise KubeconfigError(default, f"no usable credentials: {_said(e)}") from None
    api = kubernetes.client.ApiClient(conf)
    # audit logs and managedFields name us, not the generated client
    api.user_agent = f"promhpa/{promhpa_version()}"
    return api


def _context() -> str | None:
    return _CONTEXT[0] if _CONTEXT else None


def _said(e: Exception) -> str:
    return str(e) or type(e).__name__


def _check_kubeconfig(path: str) -> None:
    """A kubeconfig the loader can read, or KubeconfigError with one line: the loader itself
    answers a broken file with a YAML or Unicode traceback."""
    try:
        text = inputfiles.read_text(path)
        if not text.strip():
            raise KubeconfigError(path, "is empty")
        doc = inputfiles.load_one(text, path)
    except inputfiles.InputError as e:  # too large, too deep, aliases, not YAML
        raise KubeconfigError(path, e.detail()) from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise KubeconfigError(path, "is not a kubeconfig (no clusters)")


@dataclass
class Kube:
    api: kubernetes.client.ApiClient
    # called right before every write leaves this process; raising refuses the write (the
    # controller's "still the leader?" check)
    write_guard: Callable[[], None] | None = None
    # the transport, made from ``api``'s configuration; copies (``limited``, ``guarded``)
    # share it and its connections
    http: AsyncHTTP | None = None
    # client-side rate limit on every request, lists and watches included (``limited``)
    limiter: TokenBucket | PerClient | None = None

    def __post_init__(self) -> None:
        if self.http is None:
            self.http = AsyncHTTP(self.api.configuration, self.api.user_agent)

    def limited(self, qps: float, burst: int, per_client: bool = False) -> Kube:
        """The same client, at most ``qps`` requests a second after a ``burst`` (client-go's
        QPS and Burst; ``qps <= 0``: no limit), in one bucket or, ``per_client``, in one per
        client kube-controller-manager's HPA controller builds. Copies share the buckets."""
        if qps <= 0:
            return replace(self, limiter=None)
        return replace(self, limiter=PerClient(qps, burst) if per_client else TokenBucket(qps, burst))

    async def aclose(self) -> None:
        """Close the connections; the owner calls it before its event loop ends."""
        assert self.http is not None
        await self.http.close()

    def guarded(self, guard: Callable[[], None]) -> Kube:
        """The same client, refusing every write for which ``guard`` raises."""
        return replace(self, write_guard=guard)

    async def _send(
        self, method: str, path: str, body: Any = None, query: Query = None, timeout: float = 30
    ) -> Any:
        if self.limiter is not None:
            await self.limiter.bucket(path).wait()
        if method != "GET" and self.write_guard is not None:
            self.write_guard()
        assert self.http is not None
        return await self.http.request(method, path, body, query, timeout)

    async def get(self, path: str, query: Query = None, timeout: float = 30) -> Any:
        return await self._send("GET", path, None, query, timeout)

    async def post(self, path: str, body: Any, query: Query = None) -> Any:
        return await self._send("POST", path, body, query)

    async def put(self, path: str, body: Any, query: Query = None) -> Any:
        return await self._send("PUT", path, body, query)

    async def delete(self, path: str, body: Any = None) -> Any:
        """DELETE; ``body`` a DeleteOptions (preconditions: delete only the object read)."""
        return await self._send("DELETE", path, body)

    async def watch(
        self,
        path: str,
        resource_version: str,
        timeout_seconds: int = 300,
        extra: Query = None,
        idle_timeout: float | None = None,
        opened: Callable[[], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Watch events (type, object) as they arrive, until the server ends the watch.
        ``idle_timeout``: ``Timeout`` when nothing at all arrives for that long (default: the
        watch's own length + 30 s). ``opened``: called once the server accepted the watch.
        Close it (``aclose``) when done with it early."""
        query = [
            *(extra or []),
            ("watch", "1"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if self.limiter is not None:
            await self.limiter.bucket(path).wait()
        assert self.http is not None
        idle = idle_timeout if idle_timeout is not None else timeout_seconds + 30
        async for event in self.http.watch(path, query, idle, opened):
            yield event
