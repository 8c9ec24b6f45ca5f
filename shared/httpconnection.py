"""One kept-alive HTTP/1.1 client connection as an asyncio protocol: a request's bytes out,
its answer parsed by httptools (llhttp, in C) back into (status, body). The pool, request
framing and retries are ``shared.httpclient``'s; this module owns what one exchange on one
socket can do: complete on Content-Length, chunked or the connection's end, decode gzip or
deflate, time out on one loop timer, and notice a close while idle. ``stream`` is the other
kind of exchange, for an answer that never ends on its own (a Kubernetes watch): the status
once the headers are in, then the body chunk by chunk, with a deadline on each silence
rather than on the whole."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from typing import cast

import httptools

__all__ = ["Connection", "ProtocolError"]


class ProtocolError(ConnectionError):
    """An answer that is not HTTP/1.1 as we read it (the connection is closed)."""


class Connection(asyncio.Protocol):
    """One kept-alive connection; one exchange at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._body: list[bytes] = []
        self._encoding = b""
        self._framed = False  # a Content-Length or chunked answer: its end is in the stream
        self._started = False  # a byte of the answer arrived
        self._headers_done = False
        self._timer: asyncio.TimerHandle | None = None
        self._lost: asyncio.Future[None] | None = None  # done once the socket is really closed
        self.keep_alive = True
        self.retry_after: str | None = None  # the last answer's Retry-After, if it had one
        # a streamed answer's body as it arrives (``stream``): chunks, then None at its end,
        # or the exception that ended it
        self._chunks: asyncio.Queue[bytes | BaseException | None] | None = None
        self._idle = 0.0  # a streamed answer's deadline on silence

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._lost = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if self._waiter is None and self._chunks is None:  # nothing asked: not a server to keep
            self.close()
            return
        self._started = True
        if self._chunks is not None and self._timer is not None:
            self._timer.cancel()  # every byte of a streamed answer restarts its silence
            self._timer = asyncio.get_running_loop().call_later(self._idle, self._expired)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(ProtocolError(f"malformed HTTP answer: {e}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)
        if self._chunks is not None and self._waiter is None:  # a stream, mid-body
            self._stop_timer()
            ended = self._headers_done and not self._framed
            self._chunks.put_nowait(None if ended else ConnectionResetError("connection closed mid-stream"))
            return
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._framed:
            self._complete()  # an answer that ends with its connection
            return
        why = f": {exc}" if exc else ""
        self._fail(ConnectionResetError(f"connection closed before the answer ended{why}"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-encoding":
            self._encoding = value.strip().lower()
        elif name == b"retry-after":
            self.retry_after = value.decode("latin-1").strip()
        elif name in (b"content-length", b"transfer-encoding"):
            self._framed = True

    def on_headers_complete(self) -> None:
        self._headers_done = True
        status = self._parser.get_status_code()
        if self._chunks is not None and 200 <= status < 300 and self._waiter is not None:
            waiter, self._waiter = self._waiter, None  # the body streams from here
            if not waiter.done():
                waiter.set_result((status, b""))

    def on_body(self, body: bytes) -> None:
        if self._chunks is not None and self._waiter is None:
            self._chunks.put_nowait(body)
        else:
            self._body.append(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self._parser.should_keep_alive()
        if self._chunks is not None and self._waiter is None:
            self._stop_timer()
            self._chunks.put_nowait(None)
            return
        self._complete()

    def _complete(self) -> None:
        waiter, body = self._waiter, b"".join(self._body)
        self._waiter, self._body = None, []
        self._stop_timer()
        if waiter is None or waiter.done():
            return
        try:
            body = _decoded(self._encoding, body)
        except (ValueError, zlib.error) as e:
            waiter.set_exception(ProtocolError(str(e)))
            self.keep_alive = False
            return
        waiter.set_result((self._parser.get_status_code(), body))

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        self._stop_timer()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._chunks is not None and self._waiter is None:
            self._chunks.put_nowait(TimeoutError())
        self._fail(TimeoutError())
        self.close()  # the answer may still come: this stream cannot carry another exchange

    async def exchange(self, request: bytes, timeout: float | None = None) -> tuple[int, bytes]:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        self._body, self._encoding = [], b""
        self.retry_after = None
        self._framed = self._started = self._headers_done = False
        if timeout is not None:
            self._timer = loop.call_later(max(timeout, 0.0), self._expired)
        self.transport.write(request)
        return await self._waiter

    async def stream(self, request: bytes, idle: float) -> tuple[int, bytes, AsyncIterator[bytes]]:
        """Send ``request``; its status, and either its whole body (an answer other than 2xx,
        read to its end) or an iterator of its body's chunks as they arrive. TimeoutError when
        nothing at all arrives for ``idle`` seconds, before the headers or between chunks;
        ConnectionError when the connection ends before the answer does. The connection
        carries nothing else afterwards: close it."""
        assert self.transport is not None
        self._chunks = asyncio.Queue()
        self._idle = idle
        status, body = await self.exchange(request, idle)
        if not 200 <= status < 300:
            return status, body, _nothing()
        if self._encoding not in (b"", b"identity"):
            said = self._encoding.decode(errors="replace")
            raise ProtocolError(f"unsupported Content-Encoding {said!r} on a stream")
        return status, b"", self._read_chunks(self._chunks)  # the exchange's timer, re-armed per chunk

    @staticmethod
    async def _read_chunks(chunks: asyncio.Queue[bytes | BaseException | None]) -> AsyncIterator[bytes]:
        while True:
            chunk = await chunks.get()
            if chunk is None:
                return
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    @property
    def started(self) -> bool:
        return self._started

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def wait_lost(self, seconds: float) -> None:
        """Until the socket is closed, at most ``seconds``; then it is aborted. A TLS
        connection's close waits for the peer's close_notify, which a loop that ends first
        never sees (its socket is then left open)."""
        if self._lost is None or self.transport is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._lost), seconds)
        except TimeoutError:
            self.transport.abort()


async def _nothing() -> AsyncIterator[bytes]:
    none: tuple[bytes, ...] = ()
    for chunk in none:  # an async generator that yields nothing
        yield chunk


def _decoded(encoding: bytes, body: bytes) -> bytes:
    if not encoding or encoding == b"identity":
        return body
    if encoding in (b"gzip", b"x-gzip"):
        return zlib.decompress(body, wbits=16 + zlib.MAX_WBITS)
    if encoding == b"deflate":
        return zlib.decompress(body)
    raise ValueError(f"unsupported Content-Encoding {encoding.decode(errors='replace')!r}")
