"""HTTP/1.1 on the event loop: kept-alive connections, requests framed here, answers parsed
by httptools (llhttp, in C). The adapter's queries to Prometheus and the controller's calls
to the Kubernetes API (``shared.kube.http``) both go this way.

Why not aiohttp's client (which it replaced on both paths): measured against a real
Prometheus on one loop, an instant query cost ~175 us of the adapter's CPU through an aiohttp
ClientSession and ~40 us this way (``benchmarks`` and docs/adapter.md have the serving
figures). aiohttp's client carries a general-purpose machinery -- cookie jars, tracing,
redirects, proxies, multidict headers, URL objects, timers per request -- that a call to
one known HTTP API with a fixed set of headers never uses: on the external-metrics path
it was a third of the adapter's CPU per request, and in the controller at 2,000 HPAs the
two API reads of a reconcile were most of its CPU (py-spy). aiohttp still serves the APIs.

What is covered: GET and POST with any headers, ``http`` and ``https`` (the client's own TLS
context), a path prefix in the URL (Thanos, Mimir, a proxy's route), answers with a
Content-Length, chunked or ending with the connection, ``Connection: close``, gzip or deflate
should a proxy compress regardless of the request. A request may carry its own deadline
(``timeout``: one timer on the loop, where ``asyncio.timeout`` cost ~3.4 us a query), and the
caller's ``asyncio.timeout`` works as well: an exchange that times out or is cancelled closes
its connection, never returns it to the pool.
A kept-alive connection the server closed while it waited is noticed (``connection_lost``) and
dropped; one that fails before the first byte of its answer is retried once on a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

from .httpconnection import Connection, ProtocolError

__all__ = ["Connections", "Origin", "ProtocolError", "Proxy", "form_encode"]

MAX_IDLE = 256  # kept-alive connections per origin (Prometheus takes 512 by default); more close


@dataclass(frozen=True)
class Origin:
    """Where a backend listens, parsed once: the connection pool's key."""

    scheme: str
    host: str
    port: int
    prefix: str  # the URL's path, without a trailing slash ("" for none)
    tls: ssl.SSLContext | None
    # the name TLS verifies the server's certificate against and sends as SNI, when it is
    # not ``host`` (a kubeconfig's tls-server-name)
    server_name: str | None = None
    # reached through this HTTP proxy's CONNECT tunnel (a kubeconfig's proxy-url)
    proxy: Proxy | None = None
    # (level, option, value) set on each new socket (the kubernetes client's socket_options)
    socket_options: tuple[tuple[int, int, int], ...] = ()

    @classmethod
    def of(cls, url: str, verify: ssl.SSLContext | bool = True) -> Origin:
        """``verify`` as the settings have it: a context, True (the system's CAs) or False."""
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        tls: ssl.SSLContext | None = None
        if u.scheme == "https":
            tls = verify if isinstance(verify, ssl.SSLContext) else _default_tls(verify)
        port = u.port or (443 if u.scheme == "https" else 80)
        return cls(u.scheme, u.hostname, port, u.path.rstrip("/"), tls)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True)
class Proxy:
    """An HTTP proxy that tunnels with CONNECT (as kubectl's proxy-url does for https)."""

    host: str
    port: int
    headers: tuple[tuple[str, str], ...] = field(default=())  # Proxy-Authorization, say

    @classmethod
    def of(cls, url: str, headers: Mapping[str, str] | None = None) -> Proxy:
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"proxy {url!r}: only an http:// proxy is supported (it tunnels with CONNECT)")
        extra = dict(headers or {})
        if u.username is not None and not any(k.lower() == "proxy-authorization" for k in extra):
            import base64

            user = urllib.parse.unquote(u.username) + ":" + urllib.parse.unquote(u.password or "")
            extra["Proxy-Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
        return cls(u.hostname, u.port or 80, tuple(extra.items()))


_TLS: dict[bool, ssl.SSLContext] = {}


def _default_tls(verify: bool) -> ssl.SSLContext:
    """One context per verification mode, made on first use (each reads the CA bundle)."""
    ctx = _TLS.get(verify)
    if ctx is None:
        ctx = ssl.create_default_context()
        if not verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        _TLS[verify] = ctx
    return ctx


# application/x-www-form-urlencoded, as urllib.parse.urlencode writes it (quote_plus: nothing
# safe but the unreserved characters). urllib quotes a string that needs any quoting one byte
# at a time in Python, and a 1,000-pod regex is 13 KB of it. ASCII text here is quoted with
# one str.replace per distinct character that needs it ('%' first, ' ' last); which ones
# those are is found by deleting every safe byte in one bytes.translate (C, a table lookup
# a byte: 13 KB in a few microseconds, where a regex findall built a string per match)
_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~-"
_ENCODED = {c: f"%{c:02X}" for c in range(128)}


def _form_quote(text: str) -> str:
    if not text.isascii():
        return urllib.parse.quote_plus(text, safe="")
    found = set(text.encode("ascii").translate(None, _SAFE))
    if not found:
        return text
    if 0x25 in found:  # '%' before anything that would put one in
        text = text.replace("%", "%25")
    for c in found:
        if c != 0x25 and c != 0x20:
            text = text.replace(chr(c), _ENCODED[c])
    return text.replace(" ", "+") if 0x20 in found else text


def form_encode(params: Mapping[str, str]) -> str:
    """``urllib.parse.urlencode(params)``, the same text, faster (see _form_quote)."""
    return "&".join(f"{_form_quote(k)}={_form_quote(v)}" for k, v in params.items())


def _header_block(headers: Mapping[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0"):
            raise ValueError(f"HTTP header {name!r} holds a line break or NUL")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("latin-1")


class Connections:
    """One loop's connections to every origin (backend or API server), pooled per ``Origin``."""

    def __init__(self, user_agent: str = "promhpa-adapter", max_per_origin: int = 0) -> None:
        self._idle: dict[Origin, list[Connection]] = {}
        self._busy: set[Connection] = set()
        self._agent = user_agent
        self._closed = False
        # at most this many requests (so connections) to one origin at once (0: no bound): a
        # burst of distinct queries must not open a connection each to a struggling backend
        self.max_per_origin = max_per_origin
        self._slots: dict[Origin, asyncio.Semaphore] = {}
        self._retired: set[Origin] = set()

    async def __aenter__(self) -> Connections:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def request(
        self,
        origin: Origin,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None = None,
        answer: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """``method`` ``origin.prefix + target``: the status and the (decoded) body, or
        TimeoutError after ``timeout`` seconds (connecting, retrying and answering).
        ``answer``, if given, gets the answer's ``retry-after`` header when it has one."""
        request = self._frame(origin, method, target, headers, body)
        if self.max_per_origin <= 0:
            return await self._request(origin, request, timeout, answer)
        slots = self._slots.get(origin)
        if slots is None:
            slots = self._slots[origin] = asyncio.Semaphore(self.max_per_origin)
        if slots.locked():  # waiting for a slot counts against the request's own deadline
            loop = asyncio.get_running_loop()
            start = loop.time()
            async with asyncio.timeout(timeout):
                await slots.acquire()
            timeout = None if timeout is None else max(0.0, timeout - (loop.time() - start))
        else:
            await slots.acquire()
        try:
            return await self._request(origin, request, timeout, answer)
        finally:
            slots.release()

    def _frame(
        self, origin: Origin, method: str, target: str, headers: Mapping[str, str], body: bytes | None
    ) -> bytes:
        if self._closed:
            raise ConnectionError("these connections are closed")
        head = (
            f"{method} {origin.prefix}{target} HTTP/1.1\r\nHost: {origin.host_header}\r\n"
            f"User-Agent: {self._agent}\r\n"
        ).encode("latin-1") + _header_block(headers)
        if body is not None or method in ("POST", "PUT"):
            head += b"Content-Length: %d\r\n" % len(body or b"")
        return head + b"\r\n" + (body or b"")

    @contextlib.asynccontextmanager
    async def stream(
        self, origin: Origin, target: str, headers: Mapping[str, str], idle: float
    ) -> AsyncIterator[tuple[int, bytes, AsyncIterator[bytes]]]:
        """A GET whose answer streams (``Connection.stream``), on a connection of its own,
        outside the pool and its bound: a watch holds it for minutes, and it is closed after
        (its socket too, before this returns: a loop may end right after)."""
        request = self._frame(origin, "GET", target, headers, None)
        async with asyncio.timeout(idle):
            conn = await self._connect(origin)
        self._busy.add(conn)
        try:
            yield await conn.stream(request, idle)
        finally:
            self._busy.discard(conn)
            conn.close()
            await conn.wait_lost(1.0)

    async def _request(
        self, origin: Origin, request: bytes, timeout: float | None, answer: dict[str, str] | None
    ) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        conn = self._checkout(origin)
        if conn is not None:
            try:
                return await self._exchange(origin, conn, request, timeout, answer)
            except ConnectionError:
                if conn.started:
                    raise
                # a kept-alive connection closed under us before answering: once more, afresh
        if deadline is None:
            return await self._exchange(origin, await self._connect(origin), request, None, answer)
        async with asyncio.timeout_at(deadline):  # connecting: rare, and bounded the usual way
            conn = await self._connect(origin)
        return await self._exchange(origin, conn, request, deadline - loop.time(), answer)

    def _checkout(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None

    async def _connect(self, origin: Origin) -> Connection:
        loop = asyncio.get_running_loop()
        name = (origin.server_name or origin.host) if origin.tls is not None else None
        if origin.proxy is not None:
            conn = await _tunnel(origin, name)
        else:
            _, conn = await loop.create_connection(
                Connection, origin.host, origin.port, ssl=origin.tls, server_hostname=name
            )
        if origin.socket_options and conn.transport is not None:
            sock: socket.socket | None = conn.transport.get_extra_info("socket")
            for level, option, value in origin.socket_options if sock is not None else ():
                sock.setsockopt(level, option, value)  # type: ignore[union-attr]
        return conn

    async def _exchange(
        self,
        origin: Origin,
        conn: Connection,
        request: bytes,
        timeout: float | None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        self._busy.add(conn)
        try:
            answer = await conn.exchange(request, timeout)
            if headers is not None and conn.retry_after is not None:
                headers["retry-after"] = conn.retry_after
        except BaseException:
            conn.close()  # cancelled (the deadline) or failed: its stream is unknown now
            raise
        finally:
            self._busy.discard(conn)
        idle = self._idle.setdefault(origin, []) if origin not in self._retired else None
        if (
            idle is not None
            and conn.keep_alive
            and not conn.closed
            and not self._closed
            and len(idle) < MAX_IDLE
        ):
            idle.append(conn)
        else:
            conn.close()
        return answer

    def retire(self, origin: Origin) -> None:
        """No more connections to ``origin`` are kept (its TLS files rotated: a new origin with
        the new context replaces it): its idle ones close now, its busy ones after their answer."""
        self._retired.add(origin)
        for conn in self._idle.pop(origin, []):
            conn.close()
        self._slots.pop(origin, None)

    def idle(self, origin: Origin) -> int:
        """Kept-alive connections waiting (what the pool holds, for tests and metrics)."""
        return sum(1 for c in self._idle.get(origin, ()) if not c.closed)

    async def close(self) -> None:
        self._closed = True
        conns = [*self._busy, *(c for pool in self._idle.values() for c in pool)]
        for conn in conns:
            conn.close()
        self._idle.clear()
        # plain transports close on the next loop iteration, TLS ones after the peer's
        # close_notify: wait for both (briefly), so the caller's loop may end right after
        await asyncio.gather(*(c.wait_lost(1.0) for c in conns))


async def _tunnel(origin: Origin, server_name: str | None) -> Connection:
    """A connection to ``origin`` through its proxy: CONNECT, then TLS inside the tunnel."""
    proxy = origin.proxy
    assert proxy is not None
    where = f"[{origin.host}]:{origin.port}" if ":" in origin.host else f"{origin.host}:{origin.port}"
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
    try:
        extra = _header_block(dict(proxy.headers))
        writer.write(f"CONNECT {where} HTTP/1.1\r\nHost: {where}\r\n".encode("latin-1") + extra + b"\r\n")
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            raise ConnectionResetError(f"proxy {proxy.host}:{proxy.port} closed the CONNECT") from None
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit() or not 200 <= int(parts[1]) < 300:
            raise ConnectionRefusedError(
                f"proxy {proxy.host}:{proxy.port} refused CONNECT {where}: {status_line or 'no answer'}"
            )
        if origin.tls is not None:
            await writer.start_tls(origin.tls, server_hostname=server_name)
    except BaseException:
        writer.close()
        raise
    conn = Connection()
    transport = writer.transport
    transport.set_protocol(conn)
    conn.connection_made(transport)
    return conn
