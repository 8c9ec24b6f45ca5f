"""Kubernetes calls from the event loop (shared.kube.http) against the real kube-apiserver:
the answers kubectl gets and typed errors, the identity the client's configuration gives
(client certificate or bearer token, a rotated token seen on the next call), its proxy and
TLS server name, the write guard, and a deadline that holds against a server that never
answers."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from localcluster import Cluster
from localcluster import service_account_kubeconfig
from shared.kube.client import Kube
from shared.kube.client import load
from shared.kube.errors import Conflict
from shared.kube.errors import Forbidden
from shared.kube.errors import KubeError
from shared.kube.errors import NotFound
from shared.kube.errors import Timeout
from shared.kube.http import AsyncHTTP
from tests.netproxy import Proxy

NS = "kube-http"


def configmap(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"k": value},
    }


CM_PATH = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> str:
    cluster.kubectl("create", "namespace", NS, check=False)
    cluster.kubectl("-n", NS, "create", "serviceaccount", "reader", check=False)
    cluster.kubectl("-n", NS, "create", "serviceaccount", "other", check=False)
    return NS


async def get_once(kube: Kube, path: str) -> Any:
    try:
        return await kube.get(path)
    finally:
        await kube.aclose()


def test_get_answers_what_kubectl_gets(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("-n", NS, "create", "configmap", "same", "--from-literal=k=v", check=False)
    ours = asyncio.run(get_once(Kube(load(str(cluster.kubeconfig))), f"{CM_PATH}/same"))
    theirs = json.loads(cluster.kubectl("get", "--raw", f"{CM_PATH}/same").stdout)
    assert ours == theirs
    assert ours["data"] == {"k": "v"}


def test_writes_and_typed_errors(cluster: Cluster, namespace: str) -> None:
    async def go() -> None:
        kube = Kube(load(str(cluster.kubeconfig)))
        try:
            created = await kube.post(CM_PATH, configmap("written", "1"))
            assert created["metadata"]["resourceVersion"]
            with pytest.raises(Conflict) as conflict:  # AlreadyExists is a 409
                await kube.post(CM_PATH, configmap("written", "1"))
            assert conflict.value.reason == "AlreadyExists"
            updated = await kube.put(f"{CM_PATH}/written", {**created, "data": {"k": "2"}})
            assert updated["data"] == {"k": "2"}
            with pytest.raises(Conflict):  # a stale resourceVersion
                await kube.put(f"{CM_PATH}/written", {**created, "data": {"k": "3"}})
            with pytest.raises(NotFound) as missing:
                await kube.get(f"{CM_PATH}/no-such")
            assert missing.value.message == 'configmaps "no-such" not found'
            assert missing.value.request == f"GET {CM_PATH}/no-such"
            listed = await kube.get(CM_PATH, [("fieldSelector", "metadata.name=written")])
            assert [i["metadata"]["name"] for i in listed["items"]] == ["written"]
        finally:
            await kube.aclose()

    asyncio.run(go())
    assert cluster.kubectl("-n", NS, "get", "configmap", "written", "-o", "jsonpath={.data.k}").stdout == "2"


def test_bearer_token_identity_is_the_service_account(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    config = service_account_kubeconfig(cluster, NS, "reader", tmp_path / "reader.kubeconfig")

    async def go() -> None:
        kube = Kube(load(str(config)))
        assert kube.http is not None
        try:
            with pytest.raises(Forbidden) as refused:
                await kube.get(CM_PATH)
            assert f"system:serviceaccount:{NS}:reader" in refused.value.message
        finally:
            await kube.aclose()

    asyncio.run(go())


def test_a_rotated_token_is_used_once_the_refresh_interval_has_passed(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """As the in-cluster loader does, a refresh hook rewrites the token; the hook is asked
    again once ``auth_refresh`` has passed (0 here: every call), always off the event loop."""
    tokens = {
        sa: cluster.kubectl("-n", NS, "create", "token", sa, "--duration=1h").stdout.strip()
        for sa in ("reader", "other")
    }
    current = {"sa": "reader"}
    conf = kubernetes.client.Configuration()
    conf.host = cluster.server
    conf.ssl_ca_cert = str(cluster.pki / "ca.crt")
    conf.api_key = {"BearerToken": tokens["reader"]}
    conf.api_key_prefix = {"BearerToken": "Bearer"}

    hook_threads: list[str] = []

    def refresh(c: kubernetes.client.Configuration) -> None:
        hook_threads.append(threading.current_thread().name)
        c.api_key["BearerToken"] = tokens[current["sa"]]

    conf.refresh_api_key_hook = refresh

    async def who() -> str:
        with pytest.raises(Forbidden) as refused:
            await kube.get(CM_PATH)
        return refused.value.message

    async def go() -> tuple[str, str]:
        try:
            first = await who()
            current["sa"] = "other"
            return first, await who()
        finally:
            await kube.aclose()

    kube = Kube(kubernetes.client.ApiClient(conf))
    assert kube.http is not None
    kube.http.auth_refresh = 0.0
    first, second = asyncio.run(go())
    assert f"serviceaccount:{NS}:reader" in first
    assert f"serviceaccount:{NS}:other" in second
    # an exec plugin or a token file is read by the hook: never on the event loop's thread
    assert hook_threads
    assert threading.main_thread().name not in hook_threads


def test_a_refreshed_credential_is_reused_within_the_refresh_interval(
    cluster: Cluster, namespace: str
) -> None:
    calls: list[float] = []
    token = cluster.kubectl("-n", NS, "create", "token", "reader", "--duration=1h").stdout.strip()
    conf = kubernetes.client.Configuration()
    conf.host = cluster.server
    conf.ssl_ca_cert = str(cluster.pki / "ca.crt")
    conf.api_key = {"BearerToken": token}
    conf.api_key_prefix = {"BearerToken": "Bearer"}
    conf.refresh_api_key_hook = lambda c: calls.append(time.monotonic())
    kube = Kube(kubernetes.client.ApiClient(conf))

    async def go() -> None:
        try:
            for _ in range(20):
                with pytest.raises(Forbidden):
                    await kube.get(CM_PATH)
        finally:
            await kube.aclose()

    asyncio.run(go())
    assert len(calls) == 1  # 20 calls, one refresh (an exec plugin would have run 20 times)


def test_the_write_guard_refuses_before_the_request_leaves(cluster: Cluster, namespace: str) -> None:
    class RefusedError(Exception):
        pass

    def refuse() -> None:
        raise RefusedError("not the leader")

    async def go() -> None:
        kube = Kube(load(str(cluster.kubeconfig))).guarded(refuse)
        try:
            await kube.get(f"/api/v1/namespaces/{NS}")  # reads pass
            with pytest.raises(RefusedError):
                await kube.post(CM_PATH, configmap("guarded", "1"))
        finally:
            await kube.aclose()

    asyncio.run(go())
    assert cluster.kubectl("-n", NS, "get", "configmap", "guarded", check=False).returncode != 0


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A real listener on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    t.join()
    for s in held:
        s.close()
    listener.close()


def test_no_answer_is_a_timeout_at_the_deadline(silent_server: str) -> None:
    conf = kubernetes.client.Configuration()
    conf.host = silent_server
    http = AsyncHTTP(conf, "test")

    async def go() -> float:
        start = time.monotonic()
        try:
            with pytest.raises(Timeout) as late:
                await http.request("GET", "/api/v1/namespaces", timeout=0.5)
            assert late.value.request == "GET /api/v1/namespaces"
            return time.monotonic() - start
        finally:
            await http.close()

    assert 0.5 <= asyncio.run(go()) < 2


def test_a_refused_connection_is_an_error_without_a_status() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = kubernetes.client.Configuration()
    conf.host = f"http://127.0.0.1:{port}"
    http = AsyncHTTP(conf, "test")

    async def go() -> KubeError:
        try:
            with pytest.raises(KubeError) as refused:
                await http.request("GET", "/version")
            return refused.value
        finally:
            await http.close()

    error = asyncio.run(go())
    assert error.status == 0
    assert error.request == "GET /version"


def conf_of(cluster: Cluster) -> kubernetes.client.Configuration:
    return load(str(cluster.kubeconfig)).configuration


def test_a_configured_proxy_is_tunnelled_through_with_its_headers(cluster: Cluster, namespace: str) -> None:
    port = int(cluster.server.rsplit(":", 1)[1])
    proxy = Proxy(port, connect=True)
    try:
        conf = conf_of(cluster)
        conf.proxy = f"http://127.0.0.1:{proxy.port}"
        conf.proxy_headers = {"Proxy-Authorization": "Basic dTpw"}
        answer = asyncio.run(get_once(Kube(kubernetes.client.ApiClient(conf)), "/version"))
    finally:
        proxy.close()
    assert answer["gitVersion"].startswith("v1.")
    target, headers = proxy.connects[0]
    assert target == f"127.0.0.1:{port}"
    assert headers["Proxy-Authorization"] == "Basic dTpw"


def test_a_proxy_that_refuses_the_tunnel_is_an_error_naming_it(cluster: Cluster) -> None:
    proxy = Proxy(1, connect=True)  # tunnels only to port 1: the API server's is refused
    try:
        conf = conf_of(cluster)
        conf.proxy = f"http://127.0.0.1:{proxy.port}"
        with pytest.raises(KubeError) as refused:
            asyncio.run(get_once(Kube(kubernetes.client.ApiClient(conf)), "/version"))
    finally:
        proxy.close()
    assert f"proxy 127.0.0.1:{proxy.port} refused CONNECT" in refused.value.message
    assert "403" in refused.value.message


def test_no_proxy_sends_straight_to_the_server(cluster: Cluster) -> None:
    conf = conf_of(cluster)
    conf.proxy = "http://127.0.0.1:1"  # nobody listens: used, it would fail
    conf.no_proxy = "127.0.0.1"
    assert asyncio.run(get_once(Kube(kubernetes.client.ApiClient(conf)), "/version"))["gitVersion"]


def test_the_tls_server_name_is_the_name_the_certificate_is_checked_against(cluster: Cluster) -> None:
    conf = conf_of(cluster)
    conf.tls_server_name = "kubernetes.default"  # a name the serving certificate carries
    assert asyncio.run(get_once(Kube(kubernetes.client.ApiClient(conf)), "/version"))["gitVersion"]
    conf = conf_of(cluster)
    conf.tls_server_name = "elsewhere.example"
    with pytest.raises(KubeError) as refused:
        asyncio.run(get_once(Kube(kubernetes.client.ApiClient(conf)), "/version"))
    assert "elsewhere.example" in refused.value.message
