"""An upstream metrics server's client certificate and CA bundle rotate under the forwarding
client (``adapter.forwarding.upstreams``), as cert-manager renews a mounted Secret: a TLS
server on 127.0.0.1 that requires a client certificate records which one each connection
presented; after the files are swapped, the next connections present the new one, and no
request fails on the way."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapter.forwarding.upstreams import UpstreamClient
from rules.upstream_config import Upstream
from tests.gateway import LoopbackServer
from tests.gateway import QuietHandler
from tests.rotation import Pki
from tests.rotation import Secret

LIST = {"kind": "APIResourceList", "groupVersion": "external.metrics.k8s.io/v1beta1", "resources": []}


class MetricsServer(LoopbackServer):
    """Answers the external metrics API's resource list to clients the CA vouches for, and
    keeps each connection's client certificate (its common name)."""

    def __init__(self, ctx: ssl.SSLContext) -> None:
        self.presented: list[str] = []
        lock, server = threading.Lock(), self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                cert: Any = self.connection.getpeercert()  # type: ignore[attr-defined]
                cn = dict(x[0] for x in cert["subject"])["commonName"]
                with lock:
                    server.presented.append(cn)
                found = self.path == "/apis/external.metrics.k8s.io/v1beta1"
                self.answer(200 if found else 404, json.dumps(LIST).encode() if found else b"{}")

        super().__init__(Handler, tls=ctx)


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    p = Pki(tmp_path / "pki")
    p.d.mkdir()
    p.ca("server-ca")
    p.ca("client-ca")
    return p


@pytest.fixture
def server(pki: Pki) -> Iterator[MetricsServer]:
    pki.cert("metrics-server", "server-ca", server=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.d / "metrics-server.crt", pki.d / "metrics-server.key")
    ctx.load_verify_locations(pki.d / "client-ca.crt")
    ctx.verify_mode = ssl.CERT_REQUIRED
    s = MetricsServer(ctx)
    yield s
    s.close()


def test_a_renewed_client_certificate_is_presented_without_a_failed_request(
    pki: Pki, server: MetricsServer, tmp_path: Path
) -> None:
    secret = Secret(tmp_path / "upstream-tls")
    cert, key = pki.cert("promhpa-1", "client-ca")
    secret.write({"tls.crt": cert, "tls.key": key, "ca.crt": pki.ca("server-ca")})
    spec = Upstream(
        name="keda", url=server.url, ca_file=str(secret / "ca.crt"),
        client_cert=str(secret / "tls.crt"), client_key=str(secret / "tls.key"), external=(),
    )  # fmt: skip
    client = UpstreamClient(spec)

    async def read_for(seconds: float) -> list[int]:
        codes = []
        for _ in range(int(seconds / 0.25)):
            code, _ = await client.get("/apis/external.metrics.k8s.io/v1beta1")
            codes.append(code)
            await asyncio.sleep(0.25)
        return codes

    async def run() -> tuple[list[int], list[int]]:
        try:
            before = await read_for(1.0)
            cert, key = pki.cert("promhpa-2", "client-ca")  # renewed: same CA, new key
            secret.write({"tls.crt": cert, "tls.key": key, "ca.crt": pki.ca("server-ca")})
            return before, await read_for(3.0)
        finally:
            await client.close()

    before, after = asyncio.run(run())
    assert set(before) | set(after) == {200}
    assert server.presented[0] == "promhpa-1"
    # within the one-second look at the files, every request presents the new certificate
    assert server.presented[-6:] == ["promhpa-2"] * 6, server.presented
