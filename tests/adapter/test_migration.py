"""Drop-in migration from prometheus-adapter: its charts' arguments and rules, unchanged.

The arguments are those of prometheus-community/prometheus-adapter 5.3.0's Deployment with
default values and of kubernetes-sigs/prometheus-adapter v0.12.0's deploy/manifests; the
rules are the community chart's default ConfigMap (tests/adapter/data).
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
from datetime import timedelta
from pathlib import Path

import pytest

from adapter.commandline import compat
from adapter.commandline.flags import serve_parser
from adapter.commandline.prometheus_flags import prometheus_settings
from localcluster import Cluster
from promclient.auth_flags import _header
from shared.tls import self_signed
from shared.tls import server_context
from tests.live import Live
from tests.support import ROOT
from tests.support import AdapterProcess
from tests.support import wait_until

RULES = Path(__file__).parent / "data" / "prometheus-community-default-config.yaml"
SIGS_CIPHERS = (
    "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,"
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,"
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,"
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,"
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,"
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,TLS_RSA_WITH_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_256_GCM_SHA384,"
    "TLS_RSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_AES_256_CBC_SHA"
)
COMMUNITY = [  # the community chart's container args with its default values
    "/adapter",
    "--secure-port=6443",
    "--cert-dir=/tmp/cert",
    "--prometheus-url=http://prometheus.default.svc:9090",
    "--metrics-relist-interval=1m",
    "--v=4",
    "--config=/etc/adapter/config.yaml",
]
SIGS = [  # kubernetes-sigs/prometheus-adapter deploy/manifests/deployment.yaml
    "--cert-dir=/var/run/serving-cert",
    "--config=/etc/adapter/config.yaml",
    "--metrics-relist-interval=1m",
    "--prometheus-url=https://prometheus.monitoring.svc:9090/",
    "--secure-port=6443",
    SIGS_CIPHERS,
]


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    kept, aside = compat.split_unknown(argv)
    a = serve_parser().parse_args(kept)
    overrides, errors, _ = compat.translate(a, kept, aside)
    vars(a).update(overrides)
    return a, errors


def test_community_chart_arguments_are_accepted_and_mean_the_same() -> None:
    a, errors = parse(COMMUNITY)
    assert errors == []
    assert (a.secure_port, a.cert_dir, a.config) == (6443, "/tmp/cert", "/etc/adapter/config.yaml")
    assert a.metrics_relist_interval == timedelta(minutes=1)
    assert a.v == 4  # debug logs
    assert compat.split_unknown(COMMUNITY)[1] == ["/adapter"]


def test_sigs_manifest_cipher_suites_become_the_servers_tls_1_2_suites(tmp_path: Path) -> None:
    a, errors = parse(SIGS)
    assert errors == []
    cert, key = self_signed(tmp_path, ["promhpa-adapter.promhpa.svc"])
    ctx = server_context(cert, key, a.tls_cipher_suites, a.tls_min_version)
    offered = {c["name"] for c in ctx.get_ciphers() if c["protocol"] != "TLSv1.3"}
    assert offered == {compat.CIPHERS[n] for n in SIGS_CIPHERS.split("=", 1)[1].split(",")}
    assert len(offered) == 15  # exactly the manifest's list: DHE-RSA-..., for one, is not offered


def test_unknown_cipher_suite_is_refused_naming_it() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="unknown cipher suite 'TLS_FAST'"):
        compat.openssl_ciphers("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_FAST")


def test_tls_min_version_is_honoured(tmp_path: Path) -> None:
    a, _ = parse(["--prometheus-url=http://p:9090", "--tls-min-version=VersionTLS13"])
    cert, key = self_signed(tmp_path, ["x"])
    assert server_context(cert, key, None, a.tls_min_version).minimum_version == ssl.TLSVersion.TLSv1_3


def test_prometheus_adapter_flag_names_map_onto_ours() -> None:
    a, errors = parse(
        [
            "--prometheus-url=http://p:9090",
            "--prometheus-verb=post",
            "--prometheus-client-tls-cert-file=/c.crt",
            "--prometheus-client-tls-key-file=/c.key",
            "--lister-kubeconfig=/k",
            "--authentication-kubeconfig=/k",
            "--authorization-kubeconfig=/k",
            "--authentication-token-webhook-cache-ttl=30s",
            "--prometheus-header=X-Scope-OrgID=team-a",
            "--profiling=false",
            "--audit-log-path=-",
        ]
    )
    assert errors == []
    s = prometheus_settings(a)
    assert (s.method, s.client_cert, s.client_key, a.kubeconfig) == ("POST", "/c.crt", "/c.key", "/k")
    assert a.auth_cache_ttl == timedelta(seconds=30)
    assert s.headers == {"X-Scope-OrgID": "team-a"}


def test_our_flag_given_explicitly_wins_and_a_real_conflict_is_an_error() -> None:
    _, errors = parse(["--prometheus-url=http://p", "--prometheus-method=GET", "--prometheus-verb=POST"])
    assert errors == ["--prometheus-verb=POST and --prometheus-method=GET disagree: keep one"]
    _, errors = parse(
        ["--prometheus-url=http://p", "--lister-kubeconfig=/a", "--authentication-kubeconfig=/b"]
    )
    assert errors == ["--authentication-kubeconfig=/b and --kubeconfig=/a disagree: keep one"]


def test_both_header_forms_are_read() -> None:
    assert _header("X-Scope-OrgID=team-a") == ("X-Scope-OrgID", "team-a")
    assert _header("Authorization: Bearer a=b") == ("Authorization", "Bearer a=b")
    with pytest.raises(argparse.ArgumentTypeError, match="is not a header"):
        _header("no separator")


def test_prometheus_auth_config_kubeconfig_supplies_ca_and_credentials(tmp_path: Path) -> None:
    auth = tmp_path / "prometheus-auth.yaml"
    auth.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "p",
                "contexts": [{"name": "p", "context": {"cluster": "prom", "user": "adapter"}}],
                "clusters": [
                    {
                        "name": "prom",
                        "cluster": {
                            "server": "https://ignored",
                            "certificate-authority-data": base64.b64encode(b"PEM").decode(),
                        },
                    }
                ],
                "users": [{"name": "adapter", "user": {"token": "s3cret"}}],
            }
        )
    )
    a, errors = parse(["--prometheus-url=https://p:9090", f"--prometheus-auth-config={auth}"])
    assert errors == []
    s = prometheus_settings(a)
    assert s.ca_file is not None
    assert Path(s.ca_file).read_bytes() == b"PEM"
    assert Path(s.ca_file).stat().st_mode & 0o077 == 0
    assert s.headers["Authorization"] == "Bearer s3cret"


def test_in_cluster_auth_and_an_auth_config_together_are_refused() -> None:
    _, errors = parse(
        ["--prometheus-url=http://p", "--prometheus-auth-incluster", "--prometheus-auth-config=/x"]
    )
    assert errors == ["--prometheus-auth-incluster and --prometheus-auth-config cannot be used together"]


def test_every_compatible_flag_is_on_the_migration_page() -> None:
    page = (ROOT / "docs" / "migration.md").read_text()
    flags = [*compat.COMPAT, "--tls-cipher-suites", "--tls-min-version", "--prometheus-auth-config"]
    flags += ["--prometheus-auth-incluster", "--audit-"]
    missing = [f for f in flags if f"`{f}" not in page]
    assert missing == []


# -- live: the community chart's arguments and rules behind the real aggregator ------------


@pytest.fixture(scope="module")
def community_adapter(live: Live) -> AdapterProcess:
    live.publish({'container_memory_working_set_bytes{namespace="migr",pod="web-0",container="web"}': 2048},
                 "container_memory_working_set_bytes")  # fmt: skip
    work = live.folder("community")
    kubeconfig = work / "adapter.kubeconfig"  # register_and_start_adapter writes it here
    args = [a for a in COMMUNITY if a.startswith(("/adapter", "--metrics-relist", "--v="))]
    return live.adapter(
        RULES.read_text(), *args, SIGS_CIPHERS, f"--lister-kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--logtostderr=true", folder=work,
    )  # fmt: skip


def test_community_chart_arguments_and_rules_serve_through_the_aggregator(
    cluster: Cluster, community_adapter: AdapterProcess
) -> None:
    cluster.kubectl("create", "namespace", "migr", check=False)
    path = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/migr/metrics/memory_working_set_bytes"

    last: list[str] = []

    def served() -> bool:
        out = cluster.kubectl("get", "--raw", path, check=False)
        last[:] = [out.stdout + out.stderr]
        return out.returncode == 0 and json.loads(out.stdout)["items"][0]["value"] == "2048"

    try:
        wait_until(served, timeout=60, what="the community default rules to serve memory_working_set_bytes")
    except AssertionError:
        print(last, community_adapter.log.read_text()[-3000:])
        raise
    log = community_adapter.log.read_text()
    assert "argument accepted for prometheus-adapter compatibility and ignored" in log  # /adapter
    assert '"level": "debug"' in log or "[debug" in log  # --v=4
