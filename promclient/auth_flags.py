"""How a command says who it is to Prometheus: the flags the adapter, ``check-config`` and
the controller's ``replay`` share (headers, TLS, a bearer token, Basic auth, the clouds' and
OAuth2's tokens), and the settings they make. One place, so a way to authenticate added for
the adapter reaches every tool that queries Prometheus."""

from __future__ import annotations

import argparse
from typing import Any

from rules.backend import (
    AZURE_CLOUDS,
    HEADER_NAME,
    MONITORING_READ,
    AzureConfig,
    GoogleConfig,
    OAuth2Config,
    SigV4Config,
)
from shared.cliflags import deprecated_alias
from shared.rereadfile import read_secret


def _header(text: str) -> tuple[str, str]:
    """'Name: value', or prometheus-adapter's 'Name=value': whichever separator comes first
    after a valid header name."""
    for sep in sorted((s for s in ":=" if s in text), key=text.index):
        name, _, value = text.partition(sep)
        if HEADER_NAME.match(name.strip()):
            return name.strip(), value.strip()
    raise argparse.ArgumentTypeError(f"{text!r} is not a header; use 'Name: value' (or 'Name=value')")


def auth_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prometheus-header",
        type=_header,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="extra HTTP header for every Prometheus request (repeatable)",
    )
    tls_files = "looked at every second and reloaded when it changes, as a rotated Secret does"
    read_again = "read again every 10s and at once when Prometheus refuses it, as a rotated Secret is"
    p.add_argument("--prometheus-ca-file", help=f"CA bundle to verify Prometheus' certificate ({tls_files})")
    p.add_argument("--prometheus-token-file", help=f"bearer token file ({read_again})")
    p.add_argument("--prometheus-client-cert", help=f"client certificate for Prometheus ({tls_files})")
    p.add_argument("--prometheus-client-key", help=f"client key for Prometheus ({tls_files})")
    p.add_argument("--prometheus-auth-username", help="basic auth user name")
    p.add_argument(
        "--prometheus-auth-password-file", help=f"file holding the basic auth password ({read_again})"
    )
    p.add_argument(
        "--prometheus-sigv4-region",
        help="sign every request with AWS SigV4 for this region (Amazon Managed Service for "
        "Prometheus; credentials from the AWS chain: IRSA, EKS Pod Identity, environment, "
        "profiles; needs the aws extra; docs/cloud.md)",
    )
    p.add_argument(
        "--prometheus-sigv4-service", default="aps", help="SigV4's service name (default %(default)s)"
    )
    p.add_argument("--prometheus-sigv4-role-arn", help="a role to assume on top of the AWS credential chain")
    p.add_argument(
        "--prometheus-google-auth",
        action="store_true",
        help="an OAuth2 token from Google's Application Default Credentials on every request "
        "(Google Cloud Managed Service for Prometheus: GKE Workload Identity, a key file in "
        "GOOGLE_APPLICATION_CREDENTIALS; needs the google extra; docs/cloud.md)",
    )
    p.add_argument(
        "--prometheus-azure-auth",
        action="store_true",
        help="a Microsoft Entra ID token on every request (Azure Monitor managed Prometheus: "
        "Azure Workload Identity, or a managed identity; needs the azure extra; docs/cloud.md)",
    )
    p.add_argument(
        "--prometheus-azure-cloud",
        default="AzurePublic",
        choices=sorted(AZURE_CLOUDS),
        help="the Azure cloud for --prometheus-azure-auth: its token audience and Entra ID "
        "authority (default %(default)s; AZURE_AUTHORITY_HOST wins for the authority)",
    )
    p.add_argument(
        "--prometheus-azure-audience",
        help="the token audience for --prometheus-azure-auth, if not the cloud's "
        "(e.g. https://prometheus.monitor.azure.com)",
    )
    p.add_argument(
        "--prometheus-azure-client-id",
        help="the user-assigned managed identity's client ID for --prometheus-azure-auth, when "
        "the node has several (Workload Identity takes AZURE_CLIENT_ID)",
    )
    p.add_argument(
        "--prometheus-oauth2-token-url",
        help="OAuth2 client credentials: the token endpoint; a token from it on every request "
        "(with --prometheus-oauth2-client-id and --prometheus-oauth2-client-secret-file)",
    )
    p.add_argument("--prometheus-oauth2-client-id", help="OAuth2 client credentials: the client's id")
    p.add_argument(
        "--prometheus-oauth2-client-secret-file",
        help="OAuth2 client credentials: the file holding the client's secret (read at each token fetch)",
    )
    p.add_argument("--prometheus-oauth2-scopes", default="", help="OAuth2: comma-separated scopes to ask for")
    p.add_argument(
        "--prometheus-oauth2-param",
        type=_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="OAuth2: a parameter for the token endpoint, e.g. audience=https://prometheus (repeatable)",
    )
    p.add_argument(
        "--prometheus-google-scopes",
        default=MONITORING_READ,
        help="comma-separated OAuth2 scopes for --prometheus-google-auth (default %(default)s)",
    )
    p.add_argument(
        "--prometheus-insecure-skip-tls-verify",
        "--prometheus-insecure-skip-verify",
        dest="prometheus_insecure_skip_verify",
        action=deprecated_alias(
            "--prometheus-insecure-skip-tls-verify", "--prometheus-insecure-skip-verify", store_true=True
        ),
        help="do not verify Prometheus' certificate (testing only; kubectl's spelling, as "
        "--insecure-skip-tls-verify and a backend's insecureSkipTLSVerify)",
    )


def _param(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


def _oauth2(a: argparse.Namespace) -> OAuth2Config | None:
    if not a.prometheus_oauth2_token_url:
        return None
    if not a.prometheus_oauth2_client_id or not a.prometheus_oauth2_client_secret_file:
        raise ValueError(
            "--prometheus-oauth2-token-url needs --prometheus-oauth2-client-id and "
            "--prometheus-oauth2-client-secret-file"
        )
    return OAuth2Config(
        token_url=a.prometheus_oauth2_token_url,
        client_id=a.prometheus_oauth2_client_id,
        client_secret_file=a.prometheus_oauth2_client_secret_file,
        scopes=tuple(s.strip() for s in a.prometheus_oauth2_scopes.split(",") if s.strip()),
        endpoint_params=tuple(a.prometheus_oauth2_param),
    )


def auth_settings(a: argparse.Namespace) -> dict[str, Any]:
    """``PrometheusSettings``' fields from the flags above; ValueError for two ways to
    authenticate at once, OSError for a password file that cannot be read."""
    basic = None
    if a.prometheus_auth_username:
        password_file = a.prometheus_auth_password_file
        basic = (a.prometheus_auth_username, read_secret(password_file) if password_file else "")
    ways = [
        flag
        for flag, given in (
            ("--prometheus-token-file", a.prometheus_token_file),
            ("--prometheus-auth-username", basic),
            ("--prometheus-sigv4-region", a.prometheus_sigv4_region),
            ("--prometheus-google-auth", a.prometheus_google_auth),
            ("--prometheus-oauth2-token-url", a.prometheus_oauth2_token_url),
            ("--prometheus-azure-auth", a.prometheus_azure_auth),
        )
        if given
    ]
    if len(ways) > 1:
        raise ValueError(f"{' and '.join(ways)}: Prometheus is authenticated one way; keep one of them")
    sigv4 = None
    if a.prometheus_sigv4_region:
        sigv4 = SigV4Config(
            a.prometheus_sigv4_region, a.prometheus_sigv4_service, a.prometheus_sigv4_role_arn
        )
    return {
        "headers": dict(a.prometheus_header),
        "ca_file": a.prometheus_ca_file,
        "token_file": a.prometheus_token_file,
        "client_cert": a.prometheus_client_cert,
        "client_key": a.prometheus_client_key,
        "basic_auth": basic,
        "password_file": a.prometheus_auth_password_file if basic else None,
        "sigv4": sigv4,
        "google": GoogleConfig(tuple(s.strip() for s in a.prometheus_google_scopes.split(",") if s.strip()))
        if a.prometheus_google_auth
        else None,
        "oauth2": _oauth2(a),
        "azure": AzureConfig(
            a.prometheus_azure_cloud, a.prometheus_azure_audience, a.prometheus_azure_client_id
        )
        if a.prometheus_azure_auth
        else None,
        "insecure_skip_verify": a.prometheus_insecure_skip_verify,
    }
