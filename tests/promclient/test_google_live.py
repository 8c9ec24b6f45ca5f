"""Google's credentials against their real protocol peers (``tests.gcp_peer``): the adapter,
with ``--prometheus-google-auth``, gets its token from a metadata server by GKE's protocol
(google-auth's Application Default Credentials, as in a pod with Workload Identity) and a
proxy in front of a real Prometheus accepts only a current token that server issued."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.promhpa import external_rules
from rules.backend import MONITORING_READ
from tests.gcp_peer import MetadataServer
from tests.gcp_peer import TokenCheckingProxy
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import adapter_says
from tests.support import answer_after
from tests.support import assert_soak_passed
from tests.support import probe_scraped
from tests.support import serve_and_stop
from tests.support import serving
from tests.support import soak_and_stop
from tests.support import start_adapter
from tests.support import stop_adapter

METRIC = "google_probe"
PATH = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/gcp/{METRIC}"
SOAK = float(os.environ.get("PROMHPA_GOOGLE_SOAK_SECONDS", "20"))


@pytest.fixture
def metadata(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[MetadataServer]:
    """A pod's view of GKE: the metadata server (here), no key file, no gcloud configuration."""
    md = MetadataServer()
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    for k, v in md.env().items():
        monkeypatch.setenv(k, v)
    yield md
    md.close()


@pytest.fixture
def gmp(
    prometheus: PrometheusProcess, exporter: Exporter, metadata: MetadataServer
) -> Iterator[TokenCheckingProxy]:
    probe_scraped(prometheus, exporter, METRIC, "gcp", 4)
    proxy = TokenCheckingProxy(prometheus.url, metadata)
    yield proxy
    proxy.close()


def _adapter(tmp_path: Path, url: str) -> AdapterProcess:
    return start_adapter(
        tmp_path, url, external_rules(METRIC, by=""), "--prometheus-google-auth", "--query-cache-ttl=0s",
        "--metrics-relist-interval=5s",
    )  # fmt: skip


def test_a_workload_identity_token_authorizes_the_adapters_queries(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path
) -> None:
    adapter = _adapter(tmp_path, gmp.url)
    code, body = serve_and_stop(adapter, PATH)
    assert code == 200, body
    assert '"value":"4"' in body
    assert gmp.accepted > 0
    assert metadata.tokens  # issued by the metadata server
    assert metadata.without_flavor == 0  # every request carried Metadata-Flavor: Google
    assert all(MONITORING_READ in s for s in metadata.scopes)


def test_without_google_credentials_the_error_names_the_backend_and_the_source(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No metadata server and no key file: the adapter cannot discover anything (it never
    becomes ready), and says why with the backend and where it looked."""
    metadata.close()
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    expected = (
        f"Prometheus at {gmp.url}: google credentials from Application Default Credentials could not "
        "be fetched: Your default credentials were not found"
    )
    adapter_says(tmp_path, gmp.url, external_rules(METRIC, by=""), expected, "--prometheus-google-auth")
    assert gmp.accepted == 0


def test_a_revoked_token_is_replaced_without_a_failed_read(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path
) -> None:
    """The server refuses a token before its expiry (revoked): the 401 makes the adapter fetch
    a new one and ask again."""
    adapter = _adapter(tmp_path, gmp.url)
    code, body = answer_after(adapter, PATH, metadata.revoke_all)
    assert code == 200, body
    assert "unknown or revoked token" in gmp.refused


@pytest.mark.timeout(SOAK + 120)
def test_short_lived_tokens_refresh_with_no_failed_read(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path
) -> None:
    """Tokens lasting 9 s, read every 250 ms for 20 s (``PROMHPA_GOOGLE_SOAK_SECONDS``)."""
    metadata.lifetime = 9
    adapter = _adapter(tmp_path, gmp.url)
    reader, refreshed = soak_and_stop(adapter, PATH, SOAK, lambda: len(metadata.tokens))
    assert_soak_passed(reader, refreshed, SOAK, 9, gmp.refused)


def test_a_service_account_key_file_is_exchanged_for_tokens(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside GKE: a key in GOOGLE_APPLICATION_CREDENTIALS, its signed assertion exchanged at
    the key's token_uri (verified with the key's public half); no metadata server is asked."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(metadata.key_file(tmp_path / "key.json")))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    adapter = _adapter(tmp_path, gmp.url)
    try:
        serving(adapter, PATH)
    finally:
        stop_adapter(adapter)
    assert metadata.assertions >= 1
    assert gmp.accepted > 0
    assert all(MONITORING_READ in s for s in metadata.scopes)


def test_a_key_google_does_not_know_is_refused_naming_the_key_file_source(
    gmp: TokenCheckingProxy, metadata: MetadataServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = metadata.key_file(tmp_path / "key.json", known=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    expected = (
        "google credentials from a service account key (GOOGLE_APPLICATION_CREDENTIALS) could not be fetched"
    )
    log = adapter_says(tmp_path, gmp.url, external_rules(METRIC, by=""), expected, "--prometheus-google-auth")
    assert "invalid_grant" in log
    assert gmp.accepted == 0
