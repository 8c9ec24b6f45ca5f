"""SigV4 against its real protocol peers (``tests.aws_peer``): credentials from the AWS chain's
IRSA path (a projected web-identity token exchanged at an STS, moto's server), every request
signed by botocore, and a proxy in front of a real Prometheus that recomputes each signature
with botocore's signer and the secret STS issued. Wrong region, wrong service, forged or
expired credentials are refused with 403 and a clear error; short-lived credentials are
refreshed off the event loop with no failed request."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import botocore.session
import pytest

from localcluster.promhpa import external_rules
from promclient.promapi import PrometheusUnavailable
from promclient.prometheus import Prometheus
from promclient.prometheus import PrometheusSettings
from rules.backend import SigV4Config
from tests.aws_peer import ROLE_ARN
from tests.aws_peer import Sts
from tests.aws_peer import VerifyingProxy
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import failed_read
from tests.support import probe_scraped
from tests.support import query_values
from tests.support import read_for
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

METRIC = "sigv4_probe"
REGION = "us-west-2"
SOAK = float(os.environ.get("PROMHPA_SIGV4_SOAK_SECONDS", "30"))


@pytest.fixture(scope="module")
def sts() -> Iterator[Sts]:
    s = Sts().start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def amp(prometheus: PrometheusProcess, exporter: Exporter, sts: Sts) -> Iterator[VerifyingProxy]:
    probe_scraped(prometheus, exporter, METRIC, "aws", 9)
    proxy = VerifyingProxy(prometheus.url, sts, region=REGION, service="aps")
    yield proxy
    proxy.close()


@pytest.fixture
def irsa(sts: Sts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment EKS' pod identity webhook gives a pod with an IRSA ServiceAccount (its
    STS here on 127.0.0.1; no shared files; no instance metadata: nothing leaves the machine)."""
    token = tmp_path / "token"
    token.write_text(
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6cHJvbWhwYTphZGFwdGVyIn0.c2ln\n"
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    env = {
        "AWS_WEB_IDENTITY_TOKEN_FILE": str(token), "AWS_ROLE_ARN": ROLE_ARN,
        "AWS_ROLE_SESSION_NAME": "promhpa-adapter", "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
        "AWS_STS_REGIONAL_ENDPOINTS": "regional", "AWS_ENDPOINT_URL_STS": sts.url,
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }  # fmt: skip
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return token


def _client(url: str, region: str = REGION, service: str = "aps") -> Prometheus:
    return Prometheus(
        PrometheusSettings(url, timeout=5, name="amp", sigv4=SigV4Config(region, service)), cache_ttl=0
    )


def _query(p: Prometheus, transport: str = "loop") -> object:
    try:
        return query_values(p, transport, METRIC)
    except PrometheusUnavailable as e:
        return e
    finally:
        p.close()


@pytest.mark.parametrize("transport", ["loop", "own"])
def test_irsa_credentials_sign_queries_the_verifier_accepts(
    transport: str, amp: VerifyingProxy, sts: Sts, irsa: Path
) -> None:
    exchanges, accepted = sts.exchanges, amp.accepted
    assert _query(_client(amp.url), transport) == [9.0]
    assert sts.exchanges == exchanges + 1  # the projected token went to STS
    assert amp.accepted == accepted + 1
    assert all(k.startswith(("ASIA", "FSIA")) for k in amp.keys)  # STS-issued, temporary


def test_a_wrong_region_is_refused_with_the_gateways_reason(amp: VerifyingProxy, irsa: Path) -> None:
    error = _query(_client(amp.url, region="eu-central-1"))
    assert isinstance(error, PrometheusUnavailable)
    assert 'backend "amp"' in str(error)
    assert "HTTP 403" in str(error)
    assert "region eu-central-1 does not match us-west-2" in str(error)


def test_a_wrong_service_is_refused(amp: VerifyingProxy, irsa: Path) -> None:
    error = _query(_client(amp.url, service="execute-api"))
    assert isinstance(error, PrometheusUnavailable)
    assert "service execute-api does not match aps" in str(error)


def test_forged_credentials_are_refused(
    amp: VerifyingProxy, irsa: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAFORGEDFORGEDFORG")  # the environment comes first
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "forged-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "forged-token")
    error = _query(_client(amp.url))
    assert isinstance(error, PrometheusUnavailable)
    assert "unknown access key ASIAFORGEDFORGEDFORG" in str(error)


def test_expired_credentials_are_refused(
    amp: VerifyingProxy, sts: Sts, irsa: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = botocore.session.get_session().create_client("sts", region_name=REGION, endpoint_url=sts.url)
    sts.lifetime = 1
    try:
        issued = client.assume_role_with_web_identity(
            RoleArn=ROLE_ARN, RoleSessionName="old", WebIdentityToken=irsa.read_text().strip()
        )["Credentials"]
    finally:
        sts.lifetime = None
    time.sleep(1.5)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", issued["AccessKeyId"])  # static: signed as they are
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", issued["SecretAccessKey"])
    monkeypatch.setenv("AWS_SESSION_TOKEN", issued["SessionToken"])
    error = _query(_client(amp.url))
    assert isinstance(error, PrometheusUnavailable)
    assert "the security token included in the request is expired" in str(error)


def test_without_any_credentials_the_error_names_the_backend_and_the_chain(
    amp: VerifyingProxy, irsa: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE")
    monkeypatch.delenv("AWS_ROLE_ARN")
    error = _query(_client(amp.url))
    assert isinstance(error, PrometheusUnavailable)
    assert 'backend "amp"' in str(error)
    assert "no AWS credentials found" in str(error)


@pytest.mark.timeout(SOAK + 120)
def test_short_lived_credentials_refresh_with_no_failed_read(
    amp: VerifyingProxy, sts: Sts, irsa: Path, tmp_path: Path
) -> None:
    """The adapter, its credentials lasting 15 s, read every 250 ms for 30 s
    (``PROMHPA_SIGV4_SOAK_SECONDS`` for longer): refreshed in the background, never failing."""
    sts.lifetime = 15
    adapter = start_adapter(
        tmp_path, amp.url, external_rules(METRIC, by=""), f"--prometheus-sigv4-region={REGION}",
        "--query-cache-ttl=0s", "--metrics-relist-interval=5s",
    )  # fmt: skip
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/aws/{METRIC}"
    try:
        wait_until(lambda: adapter.get(path)[0] == 200, timeout=30, what="serving")
        exchanges = sts.exchanges
        reader = read_for(lambda: failed_read(adapter, path), SOAK)
        refreshed = sts.exchanges - exchanges
    finally:
        sts.lifetime = None
        stop_adapter(adapter)
    assert reader.failures == [], reader.report
    assert reader.reads >= SOAK * 3
    assert refreshed >= SOAK / 15  # at least one refresh per lifetime
    assert amp.refused == [] or all("region" in r or "service" in r or "access key" in r or "expired" in r
                                    for r in amp.refused)  # fmt: skip


def test_check_config_signs_its_queries_with_the_adapters_flags(
    amp: VerifyingProxy, irsa: Path, tmp_path: Path
) -> None:
    from tests.support import python_m

    cfg = tmp_path / "rules.yaml"
    cfg.write_text(external_rules(METRIC, by=""))
    accepted = amp.accepted
    out = python_m("adapter", "check-config", str(cfg), f"--prometheus-url={amp.url}",
                   f"--prometheus-sigv4-region={REGION}")  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert METRIC in out.stdout
    assert amp.accepted > accepted
