"""The control plane's plan: each component's argument list and the files it is started
with (certificates, the admin kubeconfig, the AdmissionConfiguration). Pure of process
handling: ``Cluster`` hands these to its ``Supervisor`` in start order."""

from __future__ import annotations

import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from .pki import _key, _write, issue, make_ca
from .tools import Binaries


def issue_certs(pki: Path, extra_ips: tuple[str, ...]) -> object:
    """The cluster CA and every identity the control plane uses; returns the CA, which a
    real node's identities are issued from too."""
    pki.mkdir(parents=True, exist_ok=True)
    ca = make_ca(pki / "ca", "promhpa-local-ca")
    issue(
        pki / "apiserver",
        ca,
        "kube-apiserver",
        server=True,
        # 10.96.0.1: the kubernetes Service, which pods reach the API server at
        ips=("127.0.0.1", "10.96.0.1", *extra_ips),
        dns=(
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
    )
    issue(pki / "admin", ca, "promhpa-admin", orgs=("system:masters",))
    front = make_ca(pki / "front-proxy-ca", "promhpa-front-proxy-ca")
    issue(pki / "front-proxy-client", front, "front-proxy-client")
    # what the kube-apiserver presents to admission webhooks (its AdmissionConfiguration),
    # so a webhook can tell the API server from anyone else who reaches its port
    hooks = make_ca(pki / "webhook-client-ca", "promhpa-webhook-client-ca")
    issue(pki / "webhook-client", hooks, "kube-apiserver-webhook-client")
    sa = _key()
    _write(pki / "sa", sa, None)
    (pki / "sa.pub").write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return ca


def write_admission_config(directory: Path, pki: Path) -> Path:
    """The kube-apiserver's AdmissionConfiguration: a client certificate for every
    validating and mutating webhook it calls (a kubeconfig whose one user is ``*``)."""
    creds = directory / "webhook-client.kubeconfig"
    creds.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [
                    {
                        "name": "*",
                        "user": {
                            "client-certificate": str(pki / "webhook-client.crt"),
                            "client-key": str(pki / "webhook-client.key"),
                        },
                    }
                ],
            }
        )
    )
    config = directory / "admission.yaml"
    plugin = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(creds),
    }
    config.write_text(
        json.dumps(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [
                    {"name": "ValidatingAdmissionWebhook", "configuration": plugin},
                    {"name": "MutatingAdmissionWebhook", "configuration": plugin},
                ],
            }
        )
    )
    return config


def write_kubeconfig(path: Path, server: str, pki: Path) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "promhpa-local",
                "clusters": [
                    {
                        "name": "promhpa-local",
                        "cluster": {
                            "server": server,
                            "certificate-authority": str(pki / "ca.crt"),
                        },
                    }
                ],
                "users": [
                    {
                        "name": "admin",
                        "user": {
                            "client-certificate": str(pki / "admin.crt"),
                            "client-key": str(pki / "admin.key"),
                        },
                    }
                ],
                "contexts": [
                    {"name": "promhpa-local", "context": {"cluster": "promhpa-local", "user": "admin"}}
                ],
            },
            indent=2,
        )
    )
    path.chmod(0o600)


def etcd(b: Binaries, directory: Path, p: dict[str, int]) -> list[str]:
    return [
        b.etcd,
        "--name=promhpa",
        f"--data-dir={directory / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{p['etcd']}",
        f"--advertise-client-urls=http://127.0.0.1:{p['etcd']}",
        f"--listen-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{p['etcd-peer']}",
        f"--initial-cluster=promhpa=http://127.0.0.1:{p['etcd-peer']}",
        "--log-level=warn",
        "--quota-backend-bytes=2147483648",
        "--unsafe-no-fsync",
    ]


def apiserver(
    b: Binaries, pki: Path, p: dict[str, int], host: str, admission: Path, extra: tuple[str, ...]
) -> list[str]:
    """``extra``: a real node's flags (its kubelet client identity, endpoint reconciling)."""
    return [
        b.apiserver,
        f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
        f"--bind-address={host}",
        f"--advertise-address={host}",
        f"--secure-port={p['apiserver']}",
        *extra,
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--allow-privileged=true",
        f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        f"--admission-control-config-file={admission}",
        "--enable-priority-and-fairness=false",
        # a node's Hostname address is a fake name: reach kwok's kubelet server (logs,
        # port-forward) at its InternalIP, 127.0.0.1, and resolve nothing
        "--kubelet-preferred-address-types=InternalIP",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager(
    b: Binaries, kubeconfig: Path, pki: Path, port: int, node_monitor_grace: str
) -> list[str]:
    """Every controller but the HPA controller, which promhpa's is."""
    return [
        b.controller_manager,
        *_authenticated(kubeconfig, port),
        "--controllers=*,-horizontal-pod-autoscaler-controller",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=true",
        # kwok's heartbeats can lag on a busy two-core machine; the default 40s grace
        # would mark the fake nodes (and their pods) NotReady mid-test
        f"--node-monitor-grace-period={node_monitor_grace}",
        # create ReplicaSets' pods at benchmark scale without client-side throttling
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--leader-elect=false",
        "--v=1",
    ]


def scheduler(b: Binaries, kubeconfig: Path, port: int) -> list[str]:
    return [b.scheduler, *_authenticated(kubeconfig, port), "--leader-elect=false", "--v=1"]


def _authenticated(kubeconfig: Path, port: int) -> list[str]:
    """A component that reaches the API server as the admin and serves on loopback."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
    ]


def kwok(b: Binaries, kubeconfig: Path, port: int, configs: list[Path]) -> list[str]:
    """kwok for the annotated fake nodes; ``configs`` are ours, then kwok's stock stages
    but its node-initialize (``kwok.write_node_stage`` replaces it)."""
    return [
        b.kwok,
        f"--kubeconfig={kubeconfig}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--server-address=127.0.0.1:{port}",
        f"--node-port={port}",
        "--node-ip=127.0.0.1",
        "--cidr=10.244.0.0/16",
        *[f"--config={c}" for c in configs],
        *[f"--config={s}" for s in b.kwok_stages if not s.endswith("node-initialize.yaml")],
    ]


def prometheus(b: Binaries, directory: Path, port: int) -> list[str]:
    """The cluster's Prometheus, scraping nothing by itself: tests write into it (remote
    write) or add scrape targets (lifecycle reload)."""
    (directory / "prometheus.yml").write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
    return [
        b.prometheus,
        f"--config.file={directory / 'prometheus.yml'}",
        f"--storage.tsdb.path={directory / 'prometheus'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--web.enable-remote-write-receiver",
        "--web.enable-lifecycle",
        "--storage.tsdb.retention.time=1d",
    ]
