"""Serving certificates: the one given, or a self-signed one written to --cert-dir.

Both processes always serve TLS: the adapter because the aggregator only speaks HTTPS to
it, the controller because its endpoints carry bearer tokens, as kube-controller-manager's
secure port does. Without --tls-cert-file/--tls-private-key-file a process creates a key
and a self-signed certificate for localhost, 127.0.0.1 and every --cert-dns-name (e.g.
``promhpa-adapter.monitoring.svc``, the name the aggregator verifies), and reuses them on
restart while they stay valid.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPublicKeyTypes


def certificate(
    subject: x509.Name, issuer: x509.Name, public_key: CertificateIssuerPublicKeyTypes, days: int = 365
) -> x509.CertificateBuilder:
    """A certificate valid from a little before now (clocks drift between hosts) for ``days``;
    the caller adds its extensions and signs it."""
    from cryptography import x509

    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
    )


def self_signed(cert_dir: Path, dns_names: list[str]) -> tuple[Path, Path]:
    # cryptography only when a certificate is made or checked: most deployments hand the
    # adapter one, and its import is a twentieth of the start-up the aggregator waits for
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cert_dir.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = cert_dir / "apiserver.crt", cert_dir / "apiserver.key"
    wanted = {"localhost", *dns_names}
    if cert_path.exists() and key_path.exists():
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        if set(
            sans.get_values_for_type(x509.DNSName)
        ) >= wanted and cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=1):
            return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0] if dns_names else "localhost")])
    cert = (
        certificate(name, name, key.public_key())
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(d) for d in sorted(wanted)]
                + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def serving_files(
    cert_file: str | None, key_file: str | None, cert_dir: str, dns_names: list[str]
) -> tuple[Path, Path]:
    """The given certificate and key, or the self-signed pair in ``cert_dir``."""
    if cert_file and key_file:
        return Path(cert_file), Path(key_file)
    return self_signed(Path(cert_dir), dns_names)


def server_context(
    cert: Path, key: Path, ciphers: str | None = None, min_version: str | None = None
) -> ssl.SSLContext:
    """TLS 1.2 or newer by default; ``ciphers`` (OpenSSL names) limits TLS 1.2's suites and
    ``min_version`` (an ``ssl.TLSVersion`` name, "TLSv1_3") moves the floor, as --tls-cipher-suites and
    --tls-min-version do on every Kubernetes API server."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if min_version:
        ctx.minimum_version = ssl.TLSVersion[min_version]
    if ciphers:
        ctx.set_ciphers(ciphers)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def client_context(
    ca_file: str | None = None, cert_file: str | None = None, key_file: str | None = None
) -> ssl.SSLContext:
    """A verifying client context: ``ca_file``'s CAs (the system's without one) and a client
    certificate if given. Each file goes through the bounded loader first, so one that is
    missing, too large, not PEM or holds no certificate is one ``InputError`` line naming
    the file (exit 2), never ssl's traceback."""
    from shared.inputfiles import InputError, read_pem

    try:
        ctx = (
            ssl.create_default_context(cadata=read_pem(ca_file, "CA bundle"))
            if ca_file
            else ssl.create_default_context()
        )
    except ssl.SSLError as e:
        raise InputError(str(ca_file), f"holds no usable CA certificate ({e.reason or e})") from None
    if cert_file:
        for path in (cert_file, key_file):
            if path:
                read_pem(path)
        try:
            ctx.load_cert_chain(cert_file, key_file or None)
        except (ssl.SSLError, OSError) as e:
            raise InputError(cert_file, f"is not a usable client certificate and key ({e})") from None
    return ctx
