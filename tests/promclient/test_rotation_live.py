"""Credentials that rotate under a running adapter, against a real Prometheus that requires
TLS, a client certificate and Basic auth (its web config is read again on every handshake
and request, so the server side rotates too). Each file is rotated as the kubelet rotates a
mounted Secret (a new directory, then one symlink swapped) while a reader asks the adapter
for a metric every 250 ms: no read may fail.

A rotation the adapter ignored would still pass on its kept-alive connections, so each TLS
test also checks that every connection to Prometheus after the rotation was opened after it
(by socket inode): a connection made then presents, and verifies with, the new files.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from localcluster.promhpa import external_rules
from tests.rotation import Pki
from tests.rotation import Secret
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import Reader
from tests.support import failed_read
from tests.support import free_port
from tests.support import prometheus_binary
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

METRIC = "rotation_probe"
READ = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/rot/{METRIC}"


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


class SecuredPrometheus:
    """A real Prometheus serving only TLS, requiring a client certificate and Basic auth; its
    server files live in a Secret-like directory the test rotates."""

    def __init__(self, d: Path, exporter_port: int) -> None:
        self.d, self.pki = d, Pki(d / "pki")
        self.pki.d.mkdir()
        self.files = Secret(d / "server")
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        (d / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: test\n  honor_labels: true\n"
            f"  static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n"
        )

    def serve(self, cert: tuple[bytes, bytes], client_cas: bytes, password: str) -> None:
        """What the server presents, whom it trusts and the password it takes, from now on."""
        self.files.write({"tls.crt": cert[0], "tls.key": cert[1], "client-ca.crt": client_cas})
        web = self.d / "web.yml"
        tmp = web.with_suffix(".tmp")
        f = self.files
        tmp.write_text(
            f"tls_server_config:\n  cert_file: {f / 'tls.crt'}\n  key_file: {f / 'tls.key'}\n"
            f"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {f / 'client-ca.crt'}\n"
            f"basic_auth_users:\n  adapter: '{_hash(password)}'\n"
        )
        os.replace(tmp, web)

    def start(self) -> subprocess.Popen[bytes]:
        with open(self.d / "prometheus.log", "ab") as log:
            return subprocess.Popen(
                [prometheus_binary(), f"--config.file={self.d / 'prometheus.yml'}",
                 f"--storage.tsdb.path={self.d / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
                 f"--web.config.file={self.d / 'web.yml'}"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    def connections(self) -> set[int]:
        """The socket inodes of the established TCP connections to this Prometheus (only the
        adapter connects to it)."""
        out: set[int] = set()
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "01" and int(f[2].split(":")[1], 16) == self.port:
                out.add(int(f[9]))
        return out


@pytest.fixture(scope="module")
def secured(exporter: Exporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredPrometheus]:
    p = SecuredPrometheus(tmp_path_factory.mktemp("secured-prometheus"), exporter.port)
    p.pki.ca("server-ca-1")
    p.serve(p.pki.cert("prometheus-1", "server-ca-1", server=True), p.pki.ca("client-ca-1"), "first")
    exporter.set(f'{METRIC}{{namespace="rot"}}', 7)
    proc = p.start()
    try:
        yield p
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def rotating(
    secured: SecuredPrometheus, tmp_path: Path
) -> Iterator[tuple[SecuredPrometheus, Secret, AdapterProcess]]:
    """The server reset to its first files; the adapter started with a client Secret of its own."""
    pki = secured.pki
    secured.serve(
        pki.cert("prometheus-1", "server-ca-1", server=True),
        (pki.d / "client-ca-1.crt").read_bytes(),
        "first",
    )
    client = Secret(tmp_path / "client")
    cert = pki.cert("adapter-1", "client-ca-1")
    client.write({"ca.crt": (pki.d / "server-ca-1.crt").read_bytes(), "tls.crt": cert[0], "tls.key": cert[1],
                  "password": b"first\n"})  # fmt: skip
    adapter = start_adapter(
        tmp_path, secured.url, external_rules(METRIC, by=""),
        f"--prometheus-ca-file={client / 'ca.crt'}", f"--prometheus-client-cert={client / 'tls.crt'}",
        f"--prometheus-client-key={client / 'tls.key'}", "--prometheus-auth-username=adapter",
        f"--prometheus-auth-password-file={client / 'password'}", "--query-cache-ttl=0s",
        "--metrics-relist-interval=2s",
    )  # fmt: skip
    try:
        wait_until(lambda: _serves(adapter), timeout=60, what=f"the adapter serving {METRIC}")
        yield secured, client, adapter
    finally:
        stop_adapter(adapter)


def _serves(adapter: AdapterProcess) -> bool:
    return failed_read(adapter, READ, b'"value":"7"') is None


@contextlib.contextmanager
def _reading(adapter: AdapterProcess) -> Iterator[Reader]:
    """A client reading the adapter all along the block; not one read may fail."""
    reader = Reader(lambda: failed_read(adapter, READ, b'"value":"7"'))
    wait_until(lambda: reader.reads >= 4, timeout=10, what="the reader's first reads")
    try:
        yield reader
    finally:
        reader.stop()
    assert reader.failures == [], reader.report


def _all_new(before: set[int], after: set[int], what: str) -> None:
    assert after, "no connection to Prometheus after the rotation"
    assert not after & before, f"connections {what} are still in use"


def _client_files(client: Secret, **changed: bytes) -> dict[str, bytes]:
    names = ("ca.crt", "tls.crt", "tls.key", "password")
    return {n: changed.get(n.replace(".", "_"), (client / n).read_bytes()) for n in names}


def test_a_rotated_client_certificate_is_used_without_a_failed_read(
    rotating: tuple[SecuredPrometheus, Secret, AdapterProcess],
) -> None:
    server, client, adapter = rotating
    pki = server.pki
    server_cert = ((pki.d / "prometheus-1.crt").read_bytes(), (pki.d / "prometheus-1.key").read_bytes())
    old_ca, new_ca = (pki.d / "client-ca-1.crt").read_bytes(), pki.ca("client-ca-2")
    with _reading(adapter):
        before = server.connections()
        assert before, "the adapter keeps no connection to Prometheus"
        server.serve(server_cert, old_ca + new_ca, "first")  # the new CA is published first
        cert, key = pki.cert("adapter-2", "client-ca-2")
        client.write(_client_files(client, tls_crt=cert, tls_key=key))  # cert-manager renews
        time.sleep(3)
        server.serve(server_cert, new_ca, "first")  # the old CA is withdrawn
        time.sleep(3)
        after = server.connections()
    _all_new(before, after, "made with the old certificate")


def test_a_rotated_ca_bundle_verifies_the_new_server_certificate_without_a_failed_read(
    rotating: tuple[SecuredPrometheus, Secret, AdapterProcess],
) -> None:
    server, client, adapter = rotating
    pki = server.pki
    old_ca, new_ca = (pki.d / "server-ca-1.crt").read_bytes(), pki.ca("server-ca-2")
    client_ca = (pki.d / "client-ca-1.crt").read_bytes()
    with _reading(adapter):
        before = server.connections()
        client.write(_client_files(client, ca_crt=old_ca + new_ca))  # trust both, as trust-manager does
        time.sleep(3)
        server.serve(pki.cert("prometheus-2", "server-ca-2", server=True), client_ca, "first")
        client.write(_client_files(client, ca_crt=new_ca))  # then the old CA goes
        time.sleep(3)
        after = server.connections()
    _all_new(before, after, "verified with the old CA")


def test_a_rotated_password_is_sent_without_a_failed_read(
    rotating: tuple[SecuredPrometheus, Secret, AdapterProcess],
) -> None:
    server, client, adapter = rotating
    pki = server.pki
    cert = ((pki.d / "prometheus-1.crt").read_bytes(), (pki.d / "prometheus-1.key").read_bytes())
    with _reading(adapter) as reader:
        # one Secret update seen by both sides: the adapter's file, then the server's users
        client.write(_client_files(client, password=b"second\n"))
        server.serve(cert, (pki.d / "client-ca-1.crt").read_bytes(), "second")
        time.sleep(4)
        reads_after = reader.reads
        time.sleep(1)
    assert reader.reads > reads_after  # still reading after the switch


def test_a_broken_rotation_keeps_the_last_good_files(
    rotating: tuple[SecuredPrometheus, Secret, AdapterProcess],
) -> None:
    """A certificate written without its key (or a half-written one) does not load: the
    adapter goes on with the files it had and says which backend and why."""
    server, client, adapter = rotating
    with _reading(adapter):
        client.write(_client_files(client, tls_key=b"-----BEGIN RSA PRIVATE KEY-----\nbroken\n"))
        time.sleep(3)
    log = adapter.log.read_text()
    assert "TLS files changed but do not load; keeping the last ones" in log
    with urllib.request.urlopen(f"http://127.0.0.1:{adapter.health_port}/readyz", timeout=5) as r:
        ready = r.read().decode()
    assert r.status == 200  # the last good files serve
    assert "[!]backend default Prometheus at" in ready, ready
    assert "TLS files do not load" in ready, ready
    assert server.url in log
