"""KEDA (operator and metrics server, built from the Go module proxy) on the local control
plane, as a cluster runs it, but on 127.0.0.1.

The operator watches ScaledObjects and creates their HPAs; the metrics server answers the
HPAs' External metrics (``s0-prometheus`` ...) by asking the operator over gRPC. The two share
a certificate for that gRPC link (mutual TLS, ``--cert-dir``), made here; the metrics server
delegates authentication and authorization to the cluster like every metrics server. Its own
APIService is not registered: promhpa owns the metrics APIs and forwards KEDA's metrics to it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .cluster import Cluster
from .tools import Binaries, cache_bin, free_port, insecure_tls, terminate, wait_http, wait_until

KEDA_NAMESPACE = "keda"


def grpc_certificates(directory: Path) -> None:
    """ca.crt, tls.crt and tls.key: one certificate for both ends of the gRPC link."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "keda-local-ca")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(f"keda-operator.{KEDA_NAMESPACE}.svc.cluster.local"), x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]  # fmt: skip
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "keda-operator")])
    both_ways = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    cert = (
        x509.CertificateBuilder().subject_name(subject)
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(both_ways, critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    (directory / "ca.crt").write_bytes(ca.public_bytes(pem))
    (directory / "tls.crt").write_bytes(cert.public_bytes(pem))
    (directory / "tls.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )


@dataclass
class Keda:
    operator: subprocess.Popen[bytes]
    metrics_server: subprocess.Popen[bytes]
    port: int  # the metrics server's HTTPS port
    directory: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def scaled_objects_served(self) -> bool:
        log = (self.directory / "keda-operator.log").read_text(errors="replace")
        return any(
            "Starting workers" in line and '"controller": "scaledobject"' in line for line in log.splitlines()
        )

    def logs(self, tail: int = 3000) -> str:
        """The end of both logs, for a failure message."""
        return "\n".join(
            f"--- {n}.log\n" + (self.directory / f"{n}.log").read_text(errors="replace")[-tail:]
            for n in ("keda-operator", "keda-metrics-server")
        )

    def stop(self) -> None:
        for proc in (self.metrics_server, self.operator):
            terminate(proc)


def start_keda(cluster: Cluster, directory: Path) -> Keda:
    """KEDA's CRDs applied, then its operator and metrics server, ready."""
    b = Binaries(cache_bin())
    for crd in sorted(Path(b.keda_crds).glob("*.yaml")):
        cluster.kubectl("apply", "--server-side", "-f", str(crd))
    cluster.kubectl("create", "namespace", KEDA_NAMESPACE, check=False)
    certs = directory / "certs"
    grpc_certificates(certs)
    grpc, health, metrics, port, own_metrics = (free_port() for _ in range(5))
    env = {**os.environ, "KEDA_CLUSTER_OBJECT_NAMESPACE": KEDA_NAMESPACE, "POD_NAMESPACE": KEDA_NAMESPACE,
           "WATCH_NAMESPACE": ""}  # fmt: skip
    kubeconfig = str(cluster.kubeconfig)

    def spawn(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = open(directory / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=directory)
        out.close()
        return proc

    operator = spawn(
        "keda-operator",
        [b.keda_operator, f"--kubeconfig={kubeconfig}", f"--cert-dir={certs}", "--enable-cert-rotation=false",
         "--enable-webhook-patching=false", "--enable-apiservice-patching=false", "--leader-elect=false",
         f"--metrics-bind-address=127.0.0.1:{metrics}", f"--health-probe-bind-address=127.0.0.1:{health}",
         f"--metrics-service-bind-address=127.0.0.1:{grpc}", "--zap-encoder=console"],
    )  # fmt: skip
    server = spawn(
        "keda-metrics-server",
        [b.keda_adapter, f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
         f"--authorization-kubeconfig={kubeconfig}", f"--lister-kubeconfig={kubeconfig}",
         "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={certs}",
         f"--tls-cert-file={certs / 'tls.crt'}", f"--tls-private-key-file={certs / 'tls.key'}",
         # its own /metrics: KEDA binds it on every address (no flag for the host); nothing here
         # sends traffic to it
         f"--metrics-service-address=127.0.0.1:{grpc}", f"--port={own_metrics}", "--profiling=false",
         "--v=0"],
    )  # fmt: skip
    keda = Keda(operator, server, port, directory)
    try:
        wait_http(f"http://127.0.0.1:{health}/readyz", "the KEDA operator", timeout=60)
        # /readyz answers before the caches have synced; the ScaledObject controller's
        # workers start after that, and only then does a new ScaledObject get its HPA
        wait_until(keda.scaled_objects_served, timeout=120, what="KEDA's ScaledObject workers")
        wait_http(f"{keda.url}/healthz", "KEDA's metrics server", timeout=60, context=insecure_tls())
    except AssertionError:
        keda.stop()
        raise AssertionError(f"KEDA did not start:\n{keda.logs()}") from None
    return keda


def keda_upstream(keda: Keda, token: Path) -> str:
    """The rule file's ``upstreams`` entry that forwards KEDA's metric names
    (``s<trigger>-<scaler>``) to its metrics server, presenting ``token`` (the adapter's
    ServiceAccount's): promhpa keeps the external metrics APIService beside KEDA."""
    return f"""
upstreams:
- name: keda
  url: {keda.url}
  insecureSkipTLSVerify: true
  bearerTokenFile: {token}
  external: ['^s[0-9]+-.*$']
"""
