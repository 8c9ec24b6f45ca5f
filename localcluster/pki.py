"""The cluster's certificates: one CA per trust domain, leaf certificates signed by it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from shared.tls import certificate

# --- certificates -----------------------------------------------------------------------


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write(path: Path, key: rsa.RSAPrivateKey | None, cert: x509.Certificate | None) -> None:
    if key is not None:
        path.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        path.with_suffix(".key").chmod(0o600)
    if cert is not None:
        path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


# a CA signs certificates and revocation lists, and nothing else
CA_USAGE = dict.fromkeys(
    (
        "content_commitment",
        "key_encipherment",
        "data_encipherment",
        "key_agreement",
        "encipher_only",
        "decipher_only",
    ),
    False,
) | {"digital_signature": True, "key_cert_sign": True, "crl_sign": True}


def make_ca(path: Path, cn: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    cert = (
        certificate(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(**CA_USAGE), critical=True)
        .sign(key, hashes.SHA256())
    )
    _write(path, key, cert)
    return key, cert


def issue(
    path: Path,
    ca: tuple[rsa.RSAPrivateKey, x509.Certificate],
    cn: str,
    orgs: tuple[str, ...] = (),
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    server: bool = False,
) -> None:
    key = _key()
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)] + [
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs
    ]
    usage = x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    builder = certificate(x509.Name(attrs), ca[1].subject, key.public_key()).add_extension(
        usage, critical=False
    )
    if dns or ips:
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    _write(path, key, builder.sign(ca[0], hashes.SHA256()))
