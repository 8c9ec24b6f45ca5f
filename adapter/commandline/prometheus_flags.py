"""How the adapter reaches its default Prometheus: our flags, and prometheus-adapter's
``--prometheus-auth-config`` / ``--prometheus-auth-incluster`` filling what ours leave unset."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from promclient.auth_flags import auth_flags, auth_settings
from promclient.prometheus import PrometheusSettings
from shared.cliflags import duration

from . import compat


def prometheus_flags(p: argparse.ArgumentParser, url_help: str | None = None) -> None:
    """How to reach and authenticate to Prometheus: the adapter's flags, and check-config's
    (``url_help`` given: there the URL is optional) so a rule file is checked against a
    Prometheus that needs credentials with the same flags the adapter runs with."""
    if url_help is None:
        p.add_argument(
            "--prometheus-url", required=True, help="Prometheus base URL, e.g. http://prometheus:9090"
        )
    else:
        p.add_argument("--prometheus-url", help=url_help)
    auth_flags(p)
    p.add_argument(
        "--prometheus-method",
        choices=("GET", "POST"),
        default="GET",
        help="HTTP method for queries (default %(default)s; a query longer than --prometheus-post-over is "
        "always POSTed)",
    )
    p.add_argument(
        "--prometheus-post-over",
        type=int,
        default=4096,
        metavar="BYTES",
        help="POST queries whose encoded PromQL is longer than this (default %(default)s; 0: never), so a "
        "pods/* request over thousands of pods never exceeds a proxy's URL limit",
    )
    p.add_argument(
        "--prometheus-timeout",
        type=duration,
        default=timedelta(seconds=10),
        help="deadline of each Prometheus call, retry included (default %(default)s): past it the request "
        "gets a 504 Timeout Status; keep it below the HPA controller's metrics timeout",
    )
    p.add_argument(
        "--prometheus-retries",
        type=int,
        choices=(0, 1),
        default=1,
        help="one more attempt after a refused connection or a 502/503/504, only inside the deadline "
        "(default %(default)s; 0: none)",
    )
    p.add_argument(
        "--prometheus-max-connections",
        type=int,
        default=64,
        metavar="N",
        help="connections open at once to one Prometheus backend (default %(default)s; 0: no bound): a query "
        "past it waits, inside its own deadline, for one to come free",
    )


def prometheus_settings(a: argparse.Namespace) -> PrometheusSettings:
    """Our Prometheus flags, with prometheus-adapter's --prometheus-auth-config and
    --prometheus-auth-incluster filling what ours leave unset."""
    extra: dict[str, Any] = {}
    if getattr(a, "prometheus_auth_config", None):
        extra = compat.auth_from_kubeconfig(a.prometheus_auth_config)
    elif getattr(a, "prometheus_auth_incluster", None) not in (None, "false"):
        extra = {
            "token_file": str(compat.IN_CLUSTER / "token"),
            "ca_file": str(compat.IN_CLUSTER / "ca.crt"),
        }
    auth = auth_settings(a)
    if extra.get("token"):
        auth["headers"].setdefault("Authorization", f"Bearer {extra['token']}")
    for key in ("ca_file", "token_file", "client_cert", "client_key", "basic_auth"):
        auth[key] = auth[key] or extra.get(key)
    auth["insecure_skip_verify"] = auth["insecure_skip_verify"] or bool(extra.get("insecure_skip_verify"))
    return PrometheusSettings(
        url=a.prometheus_url,
        method=a.prometheus_method,
        post_over=a.prometheus_post_over,
        timeout=a.prometheus_timeout.total_seconds(),
        retries=a.prometheus_retries,
        **auth,
    )
