"""How the adapter reaches its default Prometheus: our flags, and prometheus-adapter's
``--prometheus-auth-config`` / ``--prometheus-auth-incluster`` filling what ours leave unset."""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from promclient.prometheus import PrometheusSettings
from shared.cliflags import deprecated_alias, duration

from . import compat

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _header(text: str) -> tuple[str, str]:
    """'Name: value', or prometheus-adapter's 'Name=value': whichever separator comes first
    after a valid header name."""
    for sep in sorted((s for s in ":=" if s in text), key=text.index):
        name, _, value = text.partition(sep)
        if _TOKEN.match(name.strip()):
            return name.strip(), value.strip()
    raise argparse.ArgumentTypeError(f"{text!r} is not a header; use 'Name: value' (or 'Name=value')")


def prometheus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus-url", required=True, help="Prometheus base URL, e.g. http://prometheus:9090")
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
        "--prometheus-method",
        choices=("GET", "POST"),
        default="GET",
        help="HTTP method for queries (default GET; a query longer than --prometheus-post-over is "
        "always POSTed)",
    )
    p.add_argument(
        "--prometheus-post-over",
        type=int,
        default=4096,
        metavar="BYTES",
        help="POST queries whose encoded PromQL is longer than this (default 4096; 0: never), so a "
        "pods/* request over thousands of pods never exceeds a proxy's URL limit",
    )
    p.add_argument(
        "--prometheus-timeout",
        type=duration,
        default=timedelta(seconds=10),
        help="deadline of each Prometheus call, retry included (default 10s): past it the request "
        "gets a 504 Timeout Status; keep it below the HPA controller's metrics timeout",
    )
    p.add_argument(
        "--prometheus-retries",
        type=int,
        choices=(0, 1),
        default=1,
        help="one more attempt after a refused connection or a 502/503/504, only inside the deadline "
        "(default 1; 0: none)",
    )
    p.add_argument(
        "--prometheus-max-connections",
        type=int,
        default=64,
        metavar="N",
        help="connections open at once to one Prometheus backend (default 64; 0: no bound): a query "
        "past it waits, inside its own deadline, for one to come free",
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


def prometheus_settings(a: argparse.Namespace) -> PrometheusSettings:
    """Our Prometheus flags, with prometheus-adapter's --prometheus-auth-config and
    --prometheus-auth-incluster filling what ours leave unset."""
    basic = None
    if a.prometheus_auth_username:
        password = (
            Path(a.prometheus_auth_password_file).read_text().strip()
            if a.prometheus_auth_password_file
            else ""
        )
        basic = (a.prometheus_auth_username, password)
    extra: dict[str, Any] = {}
    if getattr(a, "prometheus_auth_config", None):
        extra = compat.auth_from_kubeconfig(a.prometheus_auth_config)
    elif getattr(a, "prometheus_auth_incluster", None) not in (None, "false"):
        extra = {
            "token_file": str(compat.IN_CLUSTER / "token"),
            "ca_file": str(compat.IN_CLUSTER / "ca.crt"),
        }
    headers = dict(a.prometheus_header)
    if extra.get("token"):
        headers.setdefault("Authorization", f"Bearer {extra['token']}")
    return PrometheusSettings(
        url=a.prometheus_url,
        headers=headers,
        ca_file=a.prometheus_ca_file or extra.get("ca_file"),
        token_file=a.prometheus_token_file or extra.get("token_file"),
        client_cert=a.prometheus_client_cert or extra.get("client_cert"),
        client_key=a.prometheus_client_key or extra.get("client_key"),
        basic_auth=basic or extra.get("basic_auth"),
        password_file=a.prometheus_auth_password_file if basic else None,
        method=a.prometheus_method,
        post_over=a.prometheus_post_over,
        timeout=a.prometheus_timeout.total_seconds(),
        retries=a.prometheus_retries,
        insecure_skip_verify=a.prometheus_insecure_skip_verify or bool(extra.get("insecure_skip_verify")),
    )
