"""Kubernetes API access for both processes: the kubernetes client, off the event loop.

One small surface -- ``get``, ``post``, ``put``, ``watch`` on raw paths -- over the
official client's ``ApiClient`` (authentication, TLS and kubeconfig/in-cluster loading are
the client's). Callers work with plain dicts in the wire format. Lists and watches run in
worker threads; the async ``get``/``post``/``put`` do too, unless ``on_loop`` gave the
client an ``http`` transport (``shared.kube.http``), which sends them from the event loop.
Failures are typed errors built from the server's ``Status`` (``errors``); the client's
own retries are off, so a timeout means what it says.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from shared import inputfiles
from shared.version import promhpa_version

from .errors import KubeconfigError, KubeError, Timeout, from_status
from .http import AsyncHTTP, Query, unsupported
from .ratelimit import PerClient, TokenBucket

if TYPE_CHECKING:
    import kubernetes

# Kubernetes calls get threads of their own: asyncio's default pool is min(32, cores + 4) --
# 6 threads on two cores -- shared with every other blocking call, so five controller
# workers plus the adapter's authorization checks queued behind one another
CALLS = 16
_POOL = ThreadPoolExecutor(max_workers=CALLS, thread_name_prefix="kube")


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
    # no hidden retries: urllib3's default (3, each waiting out the timeout) turned a 2 s
    # metrics timeout into 8 s; every caller here retries on its own schedule
    conf.retries = 0
    conf.connection_pool_maxsize = CALLS  # one kept-alive connection per calling thread
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
    # the async calls' transport when set (``on_loop``); else the client's, in a thread
    http: AsyncHTTP | None = None
    # client-side rate limit on every request, lists and watches included (``limited``)
    limiter: TokenBucket | PerClient | None = None

    def limited(self, qps: float, burst: int, per_client: bool = False) -> Kube:
        """The same client, at most ``qps`` requests a second after a ``burst`` (client-go's
        QPS and Burst; ``qps <= 0``: no limit), in one bucket or, ``per_client``, in one per
        client kube-controller-manager's HPA controller builds. Copies share the buckets."""
        if qps <= 0:
            return replace(self, limiter=None)
        return replace(self, limiter=PerClient(qps, burst) if per_client else TokenBucket(qps, burst))

    def on_loop(self) -> Kube:
        """The same client with its async calls sent from the event loop (``http``), where
        the configuration allows it; the owner calls ``aclose`` before its loop ends."""
        if self.http is not None or unsupported(self.api.configuration) is not None:
            return self
        return replace(self, http=AsyncHTTP(self.api.configuration, self.api.user_agent))

    async def aclose(self) -> None:
        if self.http is not None:
            await self.http.close()

    def guarded(self, guard: Callable[[], None]) -> Kube:
        """The same client, refusing every write for which ``guard`` raises."""
        return replace(self, write_guard=guard)

    def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Query = None,
        timeout: float | tuple[float, float] = 30,
    ) -> Any:
        """One request through the client's auth and TLS; raises KubeError on non-2xx.
        ``timeout``: seconds for the whole request, or (connect, each read)."""
        # imported by ``load`` already (there is no ``api`` without it): a dictionary lookup
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError as Urllib3Error
        from urllib3.exceptions import NewConnectionError
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        if method != "GET" and self.write_guard is not None:
            self.write_guard()
        if self.limiter is not None:
            self.limiter.bucket(path).wait_sync()
        try:
            # the raw answer (not preloaded, not deserialized): kubernetes 36's call_api
            resp = self.api.call_api(
                path,
                method,
                query_params=query or [],
                header_params={"Accept": "application/json", "Content-Type": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _preload_content=False,
                _request_timeout=timeout,
            )
        except ApiException as e:
            raise from_status(e.status or 0, e.body, f"{method} {path}", str(e.reason or e)) from None
        except (Urllib3Error, OSError) as e:
            reason = getattr(e, "reason", None) or e
            # urllib3's NewConnectionError (refused, no route) is a ConnectTimeoutError too
            if isinstance(reason, Urllib3Timeout) and not isinstance(reason, NewConnectionError):
                raise Timeout(
                    0, f"no answer within {_secs(timeout)} ({reason})", request=f"{method} {path}"
                ) from None
            said = str(reason).split("): ", 1)[-1] if isinstance(reason, NewConnectionError) else str(reason)
            raise KubeError(0, f"cannot connect: {said}", request=f"{method} {path}") from None
        if not 200 <= resp.status < 300:
            raise from_status(resp.status, resp.read() or b"", f"{method} {path}", str(resp.reason))
        return resp

    def _call(
        self, method: str, path: str, body: Any = None, query: Query = None, timeout: float = 30
    ) -> Any:
        return orjson.loads(self._request(method, path, body, query, timeout).read() or b"{}")

    def get_sync(self, path: str, query: Query = None) -> Any:
        return self._call("GET", path, query=query)

    async def _async(
        self, method: str, path: str, body: Any = None, query: Query = None, timeout: float = 30
    ) -> Any:
        if self.limiter is not None:  # here, not in the worker thread: waiting holds no thread
            await self.limiter.bucket(path).wait()
        if self.http is None:
            return await _off_loop(self._unlimited()._call, method, path, body, query, timeout)
        if method != "GET" and self.write_guard is not None:
            self.write_guard()
        return await self.http.request(method, path, body, query, timeout)

    def _unlimited(self) -> Kube:
        return replace(self, limiter=None) if self.limiter is not None else self

    async def get(self, path: str, query: Query = None, timeout: float = 30) -> Any:
        return await self._async("GET", path, None, query, timeout)

    async def post(self, path: str, body: Any) -> Any:
        return await self._async("POST", path, body)

    async def put(self, path: str, body: Any, query: Query = None) -> Any:
        return await self._async("PUT", path, body, query)

    def watch_sync(
        self,
        path: str,
        resource_version: str,
        timeout_seconds: int = 300,
        extra: list[tuple[str, str]] | None = None,
        idle_timeout: float | None = None,
    ) -> Generator[dict[str, Any], None, None]:
        """Blocking iterator of watch events (type, object) until the server ends the watch.
        The request is sent before the first event is asked for. ``idle_timeout``: ``Timeout``
        when nothing at all arrives for that long (default: the watch's own length + 30 s)."""
        query = [
            *(extra or []),
            ("watch", "1"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        from urllib3.exceptions import HTTPError as Urllib3Error
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        read = idle_timeout if idle_timeout is not None else timeout_seconds + 30
        stream = self._request("GET", path, None, query, (min(30.0, read), read))  # urllib3 response
        return self._events(stream, path, read, Urllib3Error, Urllib3Timeout)

    @staticmethod
    def _events(
        stream: Any, path: str, idle: float, http_error: type[Exception], timeout_error: type[Exception]
    ) -> Generator[dict[str, Any], None, None]:
        buffer = b""
        try:
            for chunk in stream.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield orjson.loads(line)
        except (http_error, OSError) as e:
            if isinstance(e, timeout_error) or isinstance(getattr(e, "reason", None), timeout_error):
                raise Timeout(0, f"nothing received for {idle:g}s", request=f"watch {path}") from None
            raise KubeError(0, str(e), request=f"watch {path}") from None
        finally:
            stream.release_conn()


def _secs(timeout: float | tuple[float, float]) -> str:
    return f"{timeout[1]:g}s" if isinstance(timeout, tuple) else f"{timeout:g}s"


async def _off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a Kubernetes thread, with the caller's context (as ``to_thread``)."""
    ctx = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_POOL, functools.partial(ctx.run, fn, *args))
