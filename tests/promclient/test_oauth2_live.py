"""OAuth2's client-credentials grant against a real OAuth2 server (Ory Hydra,
``tests.oauth2_peer``): the adapter gets its token from Hydra and a proxy in front of a real
Prometheus lets a request through only if Hydra's introspection calls its token active."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.promhpa import external_rules
from tests.oauth2_peer import CLIENT_ID
from tests.oauth2_peer import Hydra
from tests.oauth2_peer import IntrospectingProxy
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import adapter_says
from tests.support import answer_after
from tests.support import hydra_binary
from tests.support import probe_scraped
from tests.support import serve_and_stop
from tests.support import soak_and_stop
from tests.support import start_adapter

METRIC = "oauth2_probe"
PATH = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/oa/{METRIC}"
SOAK = float(os.environ.get("PROMHPA_OAUTH2_SOAK_SECONDS", "20"))


@pytest.fixture(scope="module")
def hydra(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hydra]:
    h = Hydra(hydra_binary(), tmp_path_factory.mktemp("hydra"), token_lifetime="9s").start()
    yield h
    h.stop()


@pytest.fixture
def gateway(prometheus: PrometheusProcess, exporter: Exporter, hydra: Hydra) -> Iterator[IntrospectingProxy]:
    probe_scraped(prometheus, exporter, METRIC, "oa", 6)
    with contextlib.closing(IntrospectingProxy(prometheus.url, hydra)) as proxy:
        yield proxy


@pytest.fixture
def insecure_token_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hydra serves plain HTTP here; oauthlib refuses that unless told (docs/cloud.md)."""
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")


def _adapter(tmp_path: Path, hydra: Hydra, url: str, secret: str) -> AdapterProcess:
    (tmp_path / "client-secret").write_text(secret + "\n")
    return start_adapter(
        tmp_path, url, external_rules(METRIC, by=""), f"--prometheus-oauth2-token-url={hydra.token_url}",
        f"--prometheus-oauth2-client-id={CLIENT_ID}",
        f"--prometheus-oauth2-client-secret-file={tmp_path / 'client-secret'}",
        "--prometheus-oauth2-scopes=metrics.read", "--query-cache-ttl=0s", "--metrics-relist-interval=5s",
    )  # fmt: skip


def test_a_client_credentials_token_from_hydra_authorizes_the_queries(
    gateway: IntrospectingProxy, hydra: Hydra, tmp_path: Path, insecure_token_url: None
) -> None:
    adapter = _adapter(tmp_path, hydra, gateway.url, hydra.secret)
    code, body = serve_and_stop(adapter, PATH)
    assert code == 200, body
    assert '"value":"6"' in body
    assert gateway.accepted > 0


def test_a_wrong_client_secret_is_an_error_naming_the_client_and_the_token_url(
    gateway: IntrospectingProxy, hydra: Hydra, tmp_path: Path, insecure_token_url: None
) -> None:
    """Hydra refuses the secret: the adapter never discovers anything and says why."""
    (tmp_path / "client-secret").write_text("not-the-secret\n")
    expected = (
        f"oauth2 credentials from the client credentials of '{CLIENT_ID}' at {hydra.token_url} "
        "could not be fetched"
    )
    log = adapter_says(
        tmp_path, gateway.url, external_rules(METRIC, by=""), expected,
        f"--prometheus-oauth2-token-url={hydra.token_url}", f"--prometheus-oauth2-client-id={CLIENT_ID}",
        f"--prometheus-oauth2-client-secret-file={tmp_path / 'client-secret'}",
    )  # fmt: skip
    assert "invalid_client" in log
    assert gateway.accepted == 0


def test_revoked_tokens_are_replaced_without_a_failed_read(
    gateway: IntrospectingProxy, hydra: Hydra, tmp_path: Path, insecure_token_url: None
) -> None:
    adapter = _adapter(tmp_path, hydra, gateway.url, hydra.secret)
    code, body = answer_after(adapter, PATH, hydra.revoke_all)
    assert code == 200, body
    assert gateway.refused  # the revoked token was refused once, then replaced


@pytest.mark.timeout(SOAK + 120)
def test_short_lived_tokens_refresh_with_no_failed_read(
    gateway: IntrospectingProxy, hydra: Hydra, tmp_path: Path, insecure_token_url: None
) -> None:
    """Hydra's tokens last 9 s; a read every 250 ms for 20 s (``PROMHPA_OAUTH2_SOAK_SECONDS``)."""
    adapter = _adapter(tmp_path, hydra, gateway.url, hydra.secret)
    reader, refused = soak_and_stop(adapter, PATH, SOAK, lambda: len(gateway.refused))
    assert reader.failures == [], reader.report
    assert refused == 0  # never sent an expired token
