"""prometheus-adapter's command line, accepted as it is: a migration changes the image only.

Every flag prometheus-adapter v0.12.0 (and the charts that deploy it) passes is either mapped
onto ours or accepted and ignored with one warning that names it and says why. The table is
the migration page's source (docs/migration.md lists the same rows, kept in step by a test).
"""

from __future__ import annotations

import argparse
import base64
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import inputfiles
from shared.durations import DurationError, parse_duration


@dataclass(frozen=True)
class Compat:
    flag: str
    target: str | None  # our flag it maps onto, or None: accepted and ignored
    why: str


MAPPED = [
    Compat("--prometheus-verb", "--prometheus-method", "the HTTP method for queries"),
    Compat("--prometheus-client-tls-cert-file", "--prometheus-client-cert", "client certificate"),
    Compat("--prometheus-client-tls-key-file", "--prometheus-client-key", "client key"),
    Compat("--lister-kubeconfig", "--kubeconfig", "one kubeconfig serves listing and auth"),
    Compat("--authentication-kubeconfig", "--kubeconfig", "one kubeconfig serves listing and auth"),
    Compat("--authorization-kubeconfig", "--kubeconfig", "one kubeconfig serves listing and auth"),
    Compat("--authentication-token-webhook-cache-ttl", "--auth-cache-ttl", "one TTL for auth answers"),
    Compat("--authorization-webhook-cache-authorized-ttl", "--auth-cache-ttl", "one TTL for auth answers"),
]
IGNORED = [
    Compat(
        "--client-qps",
        None,
        "the adapter reads the Kubernetes API through watches (informers), not per-request calls",
    ),
    Compat(
        "--client-burst",
        None,
        "the adapter reads the Kubernetes API through watches (informers), not per-request calls",
    ),
    Compat(
        "--discovery-interval",
        None,
        "resources are mapped from the rule file's overrides and the well-known table; "
        "check-config --kubeconfig proves them against the cluster's discovery",
    ),
    Compat(
        "--enable-priority-and-fairness",
        None,
        "the adapter bounds concurrent requests itself (--max-requests-inflight)",
    ),
    Compat("--disable-http2", None, "the adapter serves HTTP/1.1 only"),
    Compat("--http2-max-streams-per-connection", None, "the adapter serves HTTP/1.1 only"),
    Compat(
        "--authorization-webhook-cache-unauthorized-ttl",
        None,
        "denials are cached for --auth-cache-ttl like approvals",
    ),
    Compat("--authorization-always-allow-paths", None, "/healthz, /livez, /readyz are always open"),
    Compat("--authentication-skip-lookup", None, "the front-proxy CA is always read from the cluster"),
    Compat(
        "--authentication-tolerate-lookup-failure",
        None,
        "without the front-proxy CA the adapter refuses to start (it could not authenticate the aggregator)",
    ),
    Compat(
        "--client-ca-file", None, "client certificates are trusted from extension-apiserver-authentication"
    ),
    Compat(
        "--requestheader-client-ca-file", None, "read from kube-system/extension-apiserver-authentication"
    ),
    Compat("--requestheader-allowed-names", None, "read from kube-system/extension-apiserver-authentication"),
    Compat(
        "--requestheader-username-headers", None, "read from kube-system/extension-apiserver-authentication"
    ),
    Compat("--requestheader-group-headers", None, "read from kube-system/extension-apiserver-authentication"),
    Compat("--requestheader-uid-headers", None, "read from kube-system/extension-apiserver-authentication"),
    Compat(
        "--requestheader-extra-headers-prefix",
        None,
        "read from kube-system/extension-apiserver-authentication",
    ),
    Compat("--tls-sni-cert-key", None, "one serving certificate (--tls-cert-file)"),
    Compat("--permit-port-sharing", None, "the port is bound once"),
    Compat("--permit-address-sharing", None, "the address is bound once"),
    Compat("--profiling", None, "no profiling endpoints are served"),
    Compat("--contention-profiling", None, "no profiling endpoints are served"),
    Compat("--debug-socket-path", None, "no profiling endpoints are served"),
    Compat("--logtostderr", None, "logs always go to stderr"),
    Compat("--alsologtostderr", None, "logs always go to stderr"),
    Compat("--vmodule", None, "structured logs; use --log-level"),
    Compat("--log-flush-frequency", None, "logs are written at once"),
    Compat("--log-dir", None, "logs go to stderr"),
    Compat("--log-file", None, "logs go to stderr"),
    Compat("--log-file-max-size", None, "logs go to stderr"),
    Compat("--skip-headers", None, "structured logs"),
    Compat("--skip-log-headers", None, "structured logs"),
    Compat("--add-dir-header", None, "structured logs"),
    Compat("--one-output", None, "structured logs"),
    Compat("--stderrthreshold", None, "logs go to stderr"),
    Compat("--logging-format", None, "use --log-format (json or console)"),
]
AUDIT_PREFIX = "--audit-"  # the adapter keeps no audit log: the kube-apiserver's covers these requests
PREFIXES = (AUDIT_PREFIX,)
COMPAT = {c.flag: c for c in MAPPED + IGNORED}
# Go's cipher-suite names (IANA) -> OpenSSL's, for --tls-cipher-suites (TLS 1.2; TLS 1.3's
# suites are fixed, as in Go)
CIPHERS = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_AES_128_GCM_SHA256": "",  # TLS 1.3: always on
    "TLS_AES_256_GCM_SHA384": "",
    "TLS_CHACHA20_POLY1305_SHA256": "",
}
TLS_VERSIONS = {
    "VersionTLS10": "TLSv1",
    "VersionTLS11": "TLSv1_1",
    "VersionTLS12": "TLSv1_2",
    "VersionTLS13": "TLSv1_3",
}


def openssl_ciphers(text: str) -> str:
    """``--tls-cipher-suites`` (Go's names, comma-separated) as an OpenSSL cipher list."""
    out = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        if name not in CIPHERS:
            raise argparse.ArgumentTypeError(
                f"unknown cipher suite {name!r}; known: {', '.join(sorted(CIPHERS))}"
            )
        if CIPHERS[name]:
            out.append(CIPHERS[name])
    return ":".join(out)


def tls_version(text: str) -> str:
    if text not in TLS_VERSIONS:
        raise argparse.ArgumentTypeError(f"--tls-min-version must be one of {', '.join(TLS_VERSIONS)}")
    return TLS_VERSIONS[text]


def add_flags(p: argparse.ArgumentParser) -> None:
    """Every compatible flag, in both ``--flag=value`` and ``--flag value`` forms; a bare
    boolean (``--profiling``) is read as true."""
    for c in COMPAT.values():
        p.add_argument(
            c.flag,
            dest=_dest(c.flag),
            nargs="?",
            const="true",
            action="append",
            default=None,
            help=argparse.SUPPRESS,
        )
    p.add_argument(
        "--tls-cipher-suites", type=openssl_ciphers, default=None, help="TLS 1.2 cipher suites, Go's names"
    )
    p.add_argument(
        "--tls-min-version", type=tls_version, default=None, help="VersionTLS12 (default) or VersionTLS13"
    )
    p.add_argument(
        "--prometheus-auth-config",
        help="kubeconfig-format file with Prometheus' CA and credentials (prometheus-adapter's flag)",
    )
    p.add_argument(
        "--prometheus-auth-incluster",
        nargs="?",
        const="true",
        default=None,
        help="authenticate to Prometheus as the pod's ServiceAccount (prometheus-adapter's flag)",
    )


def _dest(flag: str) -> str:
    return "compat_" + flag.lstrip("-").replace("-", "_")


def split_unknown(argv: list[str]) -> tuple[list[str], list[str]]:
    """prometheus-adapter's own binary path as a first argument (the community chart passes
    ``/adapter``) and ``--audit-*`` flags are set aside: pflag ignores positional arguments,
    and the adapter keeps no audit log."""
    kept, ignored = [], []
    for arg in argv:
        if not arg.startswith("-") and arg.rsplit("/", 1)[-1] == "adapter":
            ignored.append(arg)
        elif arg.startswith(PREFIXES):
            ignored.append(arg.split("=", 1)[0])
        else:
            kept.append(arg)
    return kept, ignored


Ignored = tuple[str, dict[str, str]]  # a warning to log once logging is set up: event, fields


def translate(
    a: argparse.Namespace, argv: list[str], set_aside: list[str]
) -> tuple[dict[str, object], list[str], list[Ignored]]:
    """What the compatible flags mean in ours: the values to set, by destination (a flag of
    ours given explicitly wins), the errors (flags that cannot be honoured together) and one
    warning per ignored flag. ``a`` is read, never changed: the parser's module sets them."""
    overrides: dict[str, object] = {}
    errors: list[str] = []
    ignored: list[Ignored] = []
    explicit = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    for c in COMPAT.values():
        values = getattr(a, _dest(c.flag))
        if not values:
            continue
        value = values[-1]
        if c.target is None:
            ignored.append(
                (
                    "flag accepted for prometheus-adapter compatibility and ignored",
                    {"flag": c.flag, "why": c.why},
                )
            )
            continue
        dest = c.target.lstrip("-").replace("-", "_")
        if dest == "prometheus_method":
            value = value.upper()
            if value not in ("GET", "POST"):
                errors.append(f"{c.flag}={value}: supported verbs are GET and POST")
                continue
        if dest == "auth_cache_ttl":
            try:
                parsed: object = parse_duration(value)
            except DurationError as e:
                errors.append(f"{c.flag}: {e}")
                continue
        else:
            parsed = value
        if c.target not in explicit:
            overrides[dest] = parsed
            explicit.add(c.target)
        elif overrides.get(dest, getattr(a, dest, None)) != parsed:
            said = overrides.get(dest, getattr(a, dest, None))
            errors.append(f"{c.flag}={value} and {c.target}={said} disagree: keep one")
    for arg in set_aside:
        ignored.append(
            ("argument accepted for prometheus-adapter compatibility and ignored", {"argument": arg})
        )
    if a.prometheus_auth_incluster not in (None, "false") and a.prometheus_auth_config:
        errors.append("--prometheus-auth-incluster and --prometheus-auth-config cannot be used together")
    return overrides, errors, ignored


IN_CLUSTER = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def auth_from_kubeconfig(path: str) -> dict[str, Any]:
    """Prometheus' CA and credentials from a kubeconfig-format file, as prometheus-adapter's
    ``--prometheus-auth-config`` reads it: the current context's cluster (CA, skip-verify;
    the server address is --prometheus-url's) and user (token, token file, client
    certificate, basic auth). Inline ``*-data`` is written to private files."""
    try:
        doc = inputfiles.read_one(path) or {}
    except inputfiles.InputError as e:
        raise ValueError(f"--prometheus-auth-config {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"--prometheus-auth-config {path}: is not a kubeconfig (not a mapping)")

    def named(kind: str, name: str | None) -> dict[str, Any]:
        items = doc.get(kind + "s") or []
        for item in items:
            if item.get("name") == name or (name is None and len(items) == 1):
                return dict(item.get(kind) or {})
        raise ValueError(f"--prometheus-auth-config {path}: no {kind} {name!r}")

    ctx_name = doc.get("current-context")
    ctx = named("context", ctx_name) if doc.get("contexts") else {}
    cluster = named("cluster", ctx.get("cluster"))
    user = named("user", ctx.get("user")) if doc.get("users") else {}
    private = Path(tempfile.mkdtemp(prefix="promhpa-prometheus-auth-"))

    def file_of(obj: dict[str, Any], key: str) -> str | None:
        if obj.get(key + "-data"):
            target = private / key
            target.write_bytes(base64.b64decode(obj[key + "-data"]))
            os.chmod(target, 0o600)
            return str(target)
        return str(obj[key]) if obj.get(key) else None

    out: dict[str, Any] = {
        "ca_file": file_of(cluster, "certificate-authority"),
        "insecure_skip_verify": bool(cluster.get("insecure-skip-tls-verify")),
        "client_cert": file_of(user, "client-certificate"),
        "client_key": file_of(user, "client-key"),
        "token_file": user.get("tokenFile"),
        "token": user.get("token"),
        "basic_auth": (user["username"], user.get("password", "")) if user.get("username") else None,
    }
    return out
