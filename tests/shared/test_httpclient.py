"""The serving loop's HTTP/1.1 to Prometheus (shared/httpclient.py).

Against a real Prometheus: answers whole (framed by length and chunked), connections kept
alive and reused. The failures a healthy Prometheus does not produce on demand -- a kept-alive
connection closed under a request, an answer that never comes, one that ends with its
connection, a compressing proxy, a malformed answer -- come from a scripted server on
loopback that writes exactly those bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

import pytest

from shared.httpclient import Connections
from shared.httpclient import Origin
from shared.httpclient import form_encode
from shared.httpconnection import ProtocolError
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import wait_until

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":")[1]))
    return head


async def scripted(script: Script, body: Callable[[str], Awaitable[Any]]) -> Any:
    """Run ``body(url)`` against a loopback server answering every connection with ``script``."""
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            await script(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await body(f"http://127.0.0.1:{port}")
    finally:
        server.close()
        for w in writers:
            w.close()
        await server.wait_closed()
        await asyncio.sleep(0)


def answer(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\n{head}\r\n".encode() + body


def test_origin_keeps_a_path_prefix_and_names_the_host_as_http_does() -> None:
    o = Origin.of("https://thanos.example:443/query/")
    assert (o.scheme, o.host, o.port, o.prefix, o.host_header) == (
        "https", "thanos.example", 443, "/query", "thanos.example",
    )  # fmt: skip
    assert o.tls is not None
    plain = Origin.of("http://[::1]:9090")
    assert (plain.port, plain.prefix, plain.host_header, plain.tls) == (9090, "", "[::1]:9090", None)


def test_origin_refuses_what_is_not_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Origin.of("unix:///run/prometheus.sock")


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async def go(url: str) -> None:
        async with Connections() as c:
            await c.request(Origin.of(url), "GET", "/", {"X-Scope-OrgID": "a\r\nEvil: 1"})

    async def never(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise AssertionError("nothing should reach the server")

    with pytest.raises(ValueError, match="line break"):
        asyncio.run(scripted(never, go))


def test_prometheus_answers_come_back_whole_over_one_kept_alive_connection(
    exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    for i in range(300):
        exporter.set(f'promhttp_probe{{namespace="p",pod="pod-{i:04d}"}}', i)
    wait_until(lambda: len(prometheus.query("promhttp_probe")) == 300, what="300 series scraped")
    query = urllib.parse.urlencode({"query": "promhttp_probe"})
    with urllib.request.urlopen(f"{prometheus.url}/api/v1/query?{query}", timeout=5) as r:
        assert r.headers["Transfer-Encoding"] == "chunked"  # the big answer is chunked

    async def go() -> tuple[list[int], list[int], int]:
        origin = Origin.of(prometheus.url)
        async with Connections() as c:
            sizes, statuses = [], []
            for target in (f"/api/v1/query?{query}", "/api/v1/query?query=count(promhttp_probe)"):
                for _ in range(3):
                    status, body = await c.request(origin, "GET", target, {})
                    statuses.append(status)
                    sizes.append(len(json.loads(body)["data"]["result"]))
            form = urllib.parse.urlencode({"query": "promhttp_probe"}).encode()
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            status, body = await c.request(origin, "POST", "/api/v1/query", headers, form)
            sizes.append(len(json.loads(body)["data"]["result"]))
            statuses.append(status)
            return statuses, sizes, c.idle(origin)

    statuses, sizes, idle = asyncio.run(go())
    assert statuses == [200] * 7
    assert sizes == [300, 300, 300, 1, 1, 1, 300]
    assert idle == 1  # seven requests one after another: one connection


def test_concurrent_requests_each_get_a_connection_that_is_kept_for_the_next(
    prometheus: PrometheusProcess,
) -> None:
    async def go() -> tuple[int, int]:
        origin = Origin.of(prometheus.url)
        async with Connections() as c:
            for _ in range(2):
                answers = await asyncio.gather(
                    *(c.request(origin, "GET", "/api/v1/query?query=vector(1)", {}) for _ in range(5))
                )
                assert {status for status, _ in answers} == {200}
            return c.idle(origin), len(answers)

    assert asyncio.run(go()) == (5, 5)


def test_a_kept_alive_connection_closed_under_a_request_is_retried_on_a_new_one() -> None:
    seen: list[int] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(1)
        await read_request(reader)
        writer.write(answer(b"first", "Content-Length: 5"))
        await writer.drain()
        if len(seen) == 1:
            await read_request(reader)  # the second request arrives ... and the server hangs up
        writer.close()

    async def go(url: str) -> list[bytes]:
        origin = Origin.of(url)
        async with Connections() as c:
            a = await c.request(origin, "GET", "/", {})
            b = await c.request(origin, "GET", "/", {})
            return [a[1], b[1]]

    assert asyncio.run(scripted(script, go)) == [b"first", b"first"]
    assert len(seen) == 2  # the second request went out again, on a second connection


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"ok", "Content-Length: 2"))  # kept alive by HTTP/1.1 ...
        await writer.drain()
        writer.close()  # ... then an idle timeout

    async def go(url: str) -> tuple[int, bytes]:
        origin = Origin.of(url)
        async with Connections() as c:
            await c.request(origin, "GET", "/", {})
            await asyncio.sleep(0.1)
            assert c.idle(origin) == 0
            return await c.request(origin, "GET", "/", {})

    assert asyncio.run(scripted(script, go)) == (200, b"ok")


def test_an_answer_that_ends_with_its_connection_is_read_to_the_end() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b'{"status":"success"}', "Connection: close"))
        await writer.drain()
        writer.close()

    async def go(url: str) -> tuple[tuple[int, bytes], int]:
        origin = Origin.of(url)
        async with Connections() as c:
            return await c.request(origin, "GET", "/", {}), c.idle(origin)

    assert asyncio.run(scripted(script, go)) == ((200, b'{"status":"success"}'), 0)


def test_a_compressed_answer_is_decoded() -> None:
    payload = b'{"status":"success","data":[]}' * 10
    packed = gzip.compress(payload)

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(packed, "Content-Encoding: gzip", f"Content-Length: {len(packed)}"))
        await writer.drain()

    async def go(url: str) -> tuple[int, bytes]:
        async with Connections() as c:
            return await c.request(Origin.of(url), "GET", "/", {})

    assert asyncio.run(scripted(script, go)) == (200, payload)


def test_a_malformed_answer_is_a_connection_error_and_the_connection_is_dropped() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        await writer.drain()

    async def go(url: str) -> int:
        origin = Origin.of(url)
        async with Connections() as c:
            with pytest.raises(ProtocolError, match="malformed HTTP answer"):
                await c.request(origin, "GET", "/", {})
            return c.idle(origin)

    assert asyncio.run(scripted(script, go)) == 0


async def under_the_callers_timeout(c: Connections, origin: Origin) -> object:
    async with asyncio.timeout(0.2):
        return await c.request(origin, "GET", "/", {})


async def with_its_own_timeout(c: Connections, origin: Origin) -> object:
    return await c.request(origin, "GET", "/", {}, timeout=0.2)


@pytest.mark.parametrize("deadline", [under_the_callers_timeout, with_its_own_timeout])
def test_a_deadline_closes_the_connection_instead_of_keeping_it(
    deadline: Callable[[Connections, Origin], Awaitable[object]],
) -> None:
    hung: list[asyncio.StreamReader] = []

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        hung.append(reader)
        await reader.read()  # never answers; returns when the client hangs up

    async def go(url: str) -> tuple[int, bool, float]:
        origin = Origin.of(url)
        async with Connections() as c:
            start = time.monotonic()
            with pytest.raises(TimeoutError):
                await deadline(c, origin)
            took = time.monotonic() - start
            await asyncio.sleep(0.05)
            return c.idle(origin), hung[0].at_eof(), took

    idle, hung_up, took = asyncio.run(scripted(script, go))
    assert (idle, hung_up) == (0, True)
    assert 0.15 < took < 2


def test_an_answered_requests_timeout_leaves_its_kept_alive_connection_alone() -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(answer(b"ok", "Content-Length: 2"))
            await writer.drain()

    async def go(url: str) -> tuple[int, tuple[int, bytes]]:
        origin = Origin.of(url)
        async with Connections() as c:
            await c.request(origin, "GET", "/", {}, timeout=0.1)
            await asyncio.sleep(0.3)  # past the first request's deadline
            idle = c.idle(origin)
            return idle, await c.request(origin, "GET", "/", {}, timeout=0.1)

    assert asyncio.run(scripted(script, go)) == (1, (200, b"ok"))


def test_a_non_200_answer_comes_back_with_its_body(prometheus: PrometheusProcess) -> None:
    async def go() -> tuple[int, Any]:
        async with Connections() as c:
            status, body = await c.request(Origin.of(prometheus.url), "GET", "/api/v1/query?query=sum(", {})
            return status, json.loads(body)["errorType"]

    assert asyncio.run(go()) == (400, "bad_data")


@pytest.mark.parametrize(
    "params",
    [
        {"query": 'sum(x{namespace="a",pod=~"web-1|web-2"}) by (pod)', "timeout": "9.500"},
        {"query": "rate(x[5m]) > 0 and on() vector(1) + -2 * 3 / 4 % 5 ^ 6", "dedup": "true"},
        {"match[]": '{__name__=~"^x_(.*)$",ns!=""}', "start": "1764000000.123"},
        {"query": 'x{l="ünïcödé ✓",m="tab\there"}', "k y": "v&w=z~_.-"},
        {"query": "|".join(f"web-{i}-abcde" for i in range(1000))},
        {"": ""},
        {"every ascii": "".join(map(chr, range(128))) * 2, "%": "%25%%"},
    ],
)
def test_form_encoding_is_urllibs(params: dict[str, str]) -> None:
    assert form_encode(params) == urllib.parse.urlencode(params)


def accepted_connections(prometheus: PrometheusProcess) -> float:
    """Connections Prometheus' HTTP listener has accepted so far (its own count)."""
    with urllib.request.urlopen(f"{prometheus.url}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('net_conntrack_listener_conn_accepted_total{listener_name="http"}')
    )


def test_connections_to_one_backend_are_bounded(exporter: Exporter, prometheus: PrometheusProcess) -> None:
    """50 distinct queries at once with --prometheus-max-connections=2: every one is answered,
    over at most 2 new connections, as Prometheus itself counts them."""
    exporter.set('promhttp_bound{namespace="p"}', 1)
    wait_until(lambda: prometheus.query("promhttp_bound") != [], what="scrape")
    origin = Origin.of(prometheus.url)

    async def go() -> list[int]:
        async with Connections(max_per_origin=2) as c:
            answers = await asyncio.gather(
                *(c.request(origin, "GET", f"/api/v1/query?query=promhttp_bound%2B{i}", {}, timeout=30)
                  for i in range(50))
            )  # fmt: skip
            return [status for status, _ in answers]

    before = accepted_connections(prometheus)
    statuses = asyncio.run(go())
    opened = accepted_connections(prometheus) - before - 1  # the count's own scrape is one
    assert statuses == [200] * 50
    assert 1 <= opened <= 2, f"{opened:g} connections opened"


def test_waiting_for_a_free_connection_counts_against_the_deadline(
    exporter: Exporter, prometheus: PrometheusProcess
) -> None:
    """One slot, held by a query whose answer never comes (a frozen link): the next query
    fails at its own deadline instead of waiting for the slot forever."""
    from tests.netproxy import Proxy

    proxy = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    proxy.freeze()
    origin = Origin.of(f"http://127.0.0.1:{proxy.port}")

    async def go() -> float:
        async with Connections(max_per_origin=1) as c:
            hung = asyncio.create_task(c.request(origin, "GET", "/api/v1/query?query=1", {}, timeout=10))
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            with pytest.raises(TimeoutError):
                await c.request(origin, "GET", "/api/v1/query?query=2", {}, timeout=1.0)
            took = time.monotonic() - t0
            hung.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await hung
            return took

    try:
        took = asyncio.run(go())
    finally:
        proxy.close()
    assert 0.9 < took < 1.5 * 1.0
