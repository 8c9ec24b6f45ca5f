"""Azure's credentials against their real protocol peers (``tests.azure_peer``): the adapter,
with ``--prometheus-azure-auth``, exchanges a projected service account token at Entra ID
(Azure Workload Identity) or asks the Instance Metadata Service (a managed identity), through
Microsoft's azure-identity, and a proxy in front of a real Prometheus accepts only a current
token they issued."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.promhpa import external_rules
from tests.azure_peer import Entra
from tests.azure_peer import Imds
from tests.azure_peer import ServiceAccountIssuer
from tests.azure_peer import TokenCheckingProxy
from tests.azure_peer import Tokens
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import adapter_says
from tests.support import answer
from tests.support import assert_soak_passed
from tests.support import probe_scraped
from tests.support import serve_and_stop
from tests.support import serving
from tests.support import soak_and_stop
from tests.support import start_adapter
from tests.support import stop_adapter

METRIC = "azure_probe"
PATH = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/azure/{METRIC}"
SOAK = float(os.environ.get("PROMHPA_AZURE_SOAK_SECONDS", "20"))
PUBLIC = "https://prometheus.monitor.azure.com"
_ENV = (
    "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IMDS_ENDPOINT",
    "MSI_ENDPOINT", "MSI_SECRET",
)  # fmt: skip


@pytest.fixture
def tokens(monkeypatch: pytest.MonkeyPatch) -> Tokens:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return Tokens()


@pytest.fixture
def issuer() -> ServiceAccountIssuer:
    return ServiceAccountIssuer()


@pytest.fixture
def entra(
    tokens: Tokens, issuer: ServiceAccountIssuer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Entra]:
    """A pod labelled for Azure Workload Identity: the webhook's environment and its projected token."""
    with contextlib.closing(Entra(issuer, tokens, tmp_path / "entra")) as server:
        for k, v in server.env(issuer.project(tmp_path / "azure-identity-token")).items():
            monkeypatch.setenv(k, v)
        yield server


@pytest.fixture
def amw(prometheus: PrometheusProcess, exporter: Exporter, tokens: Tokens) -> Iterator[TokenCheckingProxy]:
    """An Azure Monitor workspace's query endpoint."""
    probe_scraped(prometheus, exporter, METRIC, "azure", 6)
    with contextlib.closing(TokenCheckingProxy(prometheus.url, tokens)) as proxy:
        yield proxy


def _adapter(tmp_path: Path, url: str, *flags: str) -> AdapterProcess:
    return start_adapter(
        tmp_path, url, external_rules(METRIC, by=""), "--prometheus-azure-auth", "--query-cache-ttl=0s",
        "--metrics-relist-interval=5s", *flags,
    )  # fmt: skip


def test_a_workload_identity_token_authorizes_the_adapters_queries(
    amw: TokenCheckingProxy, entra: Entra, tokens: Tokens, tmp_path: Path
) -> None:
    adapter = _adapter(tmp_path, amw.url)
    code, body = serve_and_stop(adapter, PATH)
    assert code == 200, body
    assert '"value":"6"' in body
    assert entra.exchanges >= 1
    assert entra.refusals == []
    assert amw.accepted > 0
    assert set(tokens.asked) == {f"{PUBLIC}/.default"}


def test_a_federated_token_entra_does_not_trust_is_refused_naming_the_source(
    amw: TokenCheckingProxy, entra: Entra, issuer: ServiceAccountIssuer, tmp_path: Path
) -> None:
    """The projected token's subject matches no federated credential of the app (a wrong
    ServiceAccount): Entra's AADSTS700213, in an error naming the backend and the source."""
    issuer.project(tmp_path / "azure-identity-token", subject="system:serviceaccount:default:default")
    expected = (
        f"Prometheus at {amw.url}: azure credentials from Azure Workload Identity "
        "(AZURE_FEDERATED_TOKEN_FILE) could not be fetched"
    )
    log = adapter_says(tmp_path, amw.url, external_rules(METRIC, by=""), expected, "--prometheus-azure-auth")
    assert "AADSTS700213" in log
    assert entra.refusals
    assert amw.accepted == 0


def test_the_clouds_audience_is_asked_for(
    amw: TokenCheckingProxy, entra: Entra, tokens: Tokens, tmp_path: Path
) -> None:
    adapter = _adapter(tmp_path, amw.url, "--prometheus-azure-cloud=AzureUSGovernment")
    code, body = serve_and_stop(adapter, PATH)
    assert code == 200, body
    assert set(tokens.asked) == {"https://prometheus.monitor.azure.us/.default"}


def test_a_revoked_token_is_replaced_without_a_failed_read(
    amw: TokenCheckingProxy, entra: Entra, tokens: Tokens, tmp_path: Path
) -> None:
    """The endpoint refuses a token before its expiry: the 401 makes the adapter drop it (and
    azure-identity's cache of it) and ask Entra again."""
    adapter = _adapter(tmp_path, amw.url)
    try:
        serving(adapter, PATH)
        exchanged = entra.exchanges
        tokens.revoke_all()
        code, body = answer(adapter, PATH)
    finally:
        stop_adapter(adapter)
    assert code == 200, body
    assert "unknown or revoked token" in amw.refused
    assert entra.exchanges > exchanged


@pytest.mark.timeout(SOAK + 120)
def test_short_lived_tokens_refresh_with_no_failed_read(
    amw: TokenCheckingProxy, entra: Entra, tokens: Tokens, tmp_path: Path
) -> None:
    """Tokens lasting 9 s, read every 250 ms for 20 s (``PROMHPA_AZURE_SOAK_SECONDS``)."""
    tokens.lifetime = 9
    adapter = _adapter(tmp_path, amw.url)
    reader, refreshed = soak_and_stop(adapter, PATH, SOAK, lambda: entra.exchanges)
    assert_soak_passed(reader, refreshed, SOAK, 9, amw.refused)


def test_a_user_assigned_managed_identity_gets_tokens_from_imds(
    amw: TokenCheckingProxy, tokens: Tokens, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Workload Identity: the node's managed identity, the one named by client ID among
    several, asked with the ``Metadata: true`` header for the Prometheus resource."""
    imds = Imds(tokens, assigned=("id-a", "id-b"), system=False)
    for k, v in imds.env().items():
        monkeypatch.setenv(k, v)
    try:
        adapter = _adapter(tmp_path, amw.url, "--prometheus-azure-client-id=id-b")
        code, body = serve_and_stop(adapter, PATH)
    finally:
        imds.close()
    assert code == 200, body
    assert imds.without_metadata == 0
    assert set(tokens.asked) == {PUBLIC}


def test_a_managed_identity_the_node_lacks_is_refused_naming_imds(
    amw: TokenCheckingProxy, tokens: Tokens, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imds = Imds(tokens, assigned=("id-a",), system=False)
    for k, v in imds.env().items():
        monkeypatch.setenv(k, v)
    try:
        expected = f"azure credentials from a managed identity (IMDS at {imds.url}) could not be fetched"
        log = adapter_says(
            tmp_path, amw.url, external_rules(METRIC, by=""), expected, "--prometheus-azure-auth",
            "--prometheus-azure-client-id=id-z",
        )  # fmt: skip
    finally:
        imds.close()
    assert "Identity not found" in log
    assert amw.accepted == 0
