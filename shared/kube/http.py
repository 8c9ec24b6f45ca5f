"""Kubernetes calls on the event loop, over the kubernetes client's configuration.

The controller makes two or three API calls per reconcile (scale, metrics, sometimes a
status write). Through the official client each one is a hop to a worker thread and a
request through urllib3 and http.client; profiled beside kube-controller-manager at 100
HPAs, that transport was most of our CPU per reconcile. An aiohttp session on the loop
replaced it, and was in turn most of the CPU per reconcile at 2,000 HPAs (py-spy: its
request machinery, not the decision). This module sends the same requests from the event
loop over kept-alive connections of ``shared.httpclient`` (framed by us, parsed by
httptools), with
everything that decides *who we are* still taken from the kubernetes client's
``Configuration``: the server, the CA, the client certificate and the bearer token, read
through ``auth_settings()`` so the in-cluster token file and exec or OIDC credentials
refresh exactly as they do for the client. Where the configuration has a refresh hook
(which may read a file or run an exec credential plugin) it runs in a thread, at most once
every ``AUTH_REFRESH`` seconds, with concurrent callers sharing one refresh: never on the
event loop. The rest of the configuration is honoured as the client honours it: a proxy
(``proxy``, ``proxy_headers``, ``no_proxy``; https through a CONNECT tunnel), a TLS server
name or a pinned hostname (the name the certificate is checked against), socket options.
Watches stream on connections of their own (``watch``).
"""

from __future__ import annotations

import asyncio
import http
import ssl
import urllib.parse
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any

import orjson

from shared.httpclient import Connections, Origin, Proxy

from .errors import KubeError, Timeout, from_status

if TYPE_CHECKING:
    from kubernetes.client import Configuration

_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
AUTH_REFRESH = 10.0  # seconds a refreshed credential is reused before the hook is asked again

# a request's query parameters, in order (a key may repeat)
Query = list[tuple[str, str]] | None


def origin_of(conf: Configuration, tls: ssl.SSLContext | None) -> Origin:
    """Where and how to connect, as the client would: its server, its TLS name, its proxy
    unless ``no_proxy`` (or the environment's NO_PROXY) exempts the server, its socket options."""
    from requests.utils import should_bypass_proxies  # the kubernetes client's own rule

    base = Origin.of(conf.host.rstrip("/"), tls or False)
    name = conf.tls_server_name or (conf.assert_hostname if isinstance(conf.assert_hostname, str) else None)
    proxy = None
    if conf.proxy and not should_bypass_proxies(conf.host, no_proxy=getattr(conf, "no_proxy", None) or ""):
        proxy = Proxy.of(conf.proxy, conf.proxy_headers)
    options = tuple((int(a), int(b), int(c)) for a, b, c in conf.socket_options or ())
    return Origin(base.scheme, base.host, base.port, base.prefix, base.tls, name or None, proxy, options)


def ssl_context(conf: Configuration) -> ssl.SSLContext:
    """The client's TLS settings as one context: CA file or data, client certificate."""
    if not conf.verify_ssl:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    else:
        ctx = ssl.create_default_context(
            cafile=conf.ssl_ca_cert or None, cadata=getattr(conf, "ca_cert_data", None) or None
        )
        if conf.assert_hostname is False:
            ctx.check_hostname = False
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, conf.key_file or None)
    return ctx


class AsyncHTTP:
    """One connection pool per event loop, opened on first use; ``close`` before the loop ends."""

    def __init__(self, conf: Configuration, user_agent: str, connections: int = 32) -> None:
        self.conf = conf
        self.base = conf.host.rstrip("/")
        self.user_agent = user_agent
        self.connections = connections
        self._where: Origin | None = None  # made on first use: a client may be built unconfigured
        self._pool: Connections | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.auth_refresh = AUTH_REFRESH
        self._auth_cached: tuple[float, dict[str, str]] | None = None
        self._auth_refresh: asyncio.Future[dict[str, str]] | None = None

    def _origin(self) -> Origin:
        """Where to connect and how (ValueError: the configuration names no usable server)."""
        if self._where is None:
            tls = ssl_context(self.conf) if self.base.startswith("https:") else None
            self._where = origin_of(self.conf, tls)
        return self._where

    def _connections(self) -> Connections:
        """This loop's pool (a pool's connections belong to the loop that opened them)."""
        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            self._loop = loop
            self._pool = Connections(self.user_agent, max_per_origin=self.connections)
        return self._pool

    async def _auth(self) -> dict[str, str]:
        """The client's auth headers. Without a refresh hook they are plain fields, read here
        each time; with one, the hook runs in a thread (``AUTH_REFRESH``)."""
        if getattr(self.conf, "refresh_api_key_hook", None) is None:
            return self._auth_headers()
        loop = asyncio.get_running_loop()
        if self._auth_cached is not None and loop.time() - self._auth_cached[0] < self.auth_refresh:
            return self._auth_cached[1]
        if self._auth_refresh is None or self._auth_refresh.done():
            self._auth_refresh = asyncio.ensure_future(asyncio.to_thread(self._auth_headers))
        headers = await asyncio.shield(self._auth_refresh)
        self._auth_cached = (loop.time(), headers)
        return headers

    def _auth_headers(self) -> dict[str, str]:
        """Headers from the client's auth settings (may run the refresh hook: a thread's job)."""
        out: dict[str, str] = {}
        settings: dict[str, dict[str, Any]] = dict(self.conf.auth_settings())
        for setting in settings.values():
            if setting.get("in") == "header" and setting.get("value"):
                out[str(setting["key"])] = str(setting["value"])
        return out

    async def request(
        self, method: str, path: str, body: Any = None, query: Query = None, timeout: float = 30
    ) -> Any:
        """The decoded JSON answer; a non-2xx answer raises its typed ``KubeError``."""
        what = f"{method} {path}"
        data = orjson.dumps(body) if body is not None else None
        target = _target(path, query)
        try:
            headers = await self._auth()
            status, raw = await self._connections().request(
                self._origin(), method, target, {**_HEADERS, **headers}, data, timeout
            )
        except TimeoutError:
            raise Timeout(0, f"no answer within {timeout:g}s", request=what) from None
        except (OSError, ValueError) as e:  # ConnectionError and ssl.SSLError are OSErrors
            raise KubeError(0, str(e) or type(e).__name__, request=what) from None
        if not 200 <= status < 300:
            raise from_status(status, raw, what, _reason(status))
        return orjson.loads(raw) if raw else {}

    async def watch(
        self, path: str, query: Query, idle: float, opened: Callable[[], None] | None = None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The watch events of ``GET path?query`` as they arrive, until the server ends the
        watch. ``Timeout`` when nothing at all arrives for ``idle`` seconds; a refusal raises
        its typed ``KubeError`` before the first event. ``opened`` is called once the server
        has accepted the watch."""
        what = f"watch {path}"
        target = _target(path, query)
        try:
            headers = await self._auth()
            async with self._connections().stream(self._origin(), target, {**_HEADERS, **headers}, idle) as (
                status,
                raw,
                chunks,
            ):
                if not 200 <= status < 300:
                    raise from_status(status, raw, f"GET {path}", _reason(status))
                if opened is not None:
                    opened()
                buffer = b""
                async for chunk in chunks:
                    buffer += chunk
                    if b"\n" not in buffer:
                        continue
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield orjson.loads(line)
        except TimeoutError:
            raise Timeout(0, f"nothing received for {idle:g}s", request=what) from None
        except (OSError, ValueError) as e:
            raise KubeError(0, str(e) or type(e).__name__, request=what) from None

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()


def _target(path: str, query: Query) -> str:
    return urllib.parse.quote(path, safe="/:@!$&'()*+,;=-._~%") + (
        "?" + urllib.parse.urlencode(query) if query else ""
    )


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""
