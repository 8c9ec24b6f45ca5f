"""The rules webhook answers only the API server's client certificate, and no review --
however slow Prometheus is for it, however many arrive at once -- holds another past its
timeout.

The certificates are made here as a cluster's PKI makes them (one CA for the API server's
webhook client, another for anyone else); Prometheus is real, behind a loopback proxy that
holds each answer 5 s (a slow link) so every review that queries it is slow.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapter.serving.rules_webhook import WEBHOOK_PATH
from localcluster.pki import issue
from localcluster.pki import make_ca
from tests.netproxy import Proxy
from tests.support import AdapterProcess
from tests.support import Exporter
from tests.support import PrometheusProcess
from tests.support import external_rules
from tests.support import free_port
from tests.support import start_adapter
from tests.support import stop_adapter
from tests.support import wait_until

pytestmark = pytest.mark.slow

RULES = external_rules("webhook_queue", by="")
TIMEOUT = 2.0


@dataclass
class Webhook:
    adapter: AdapterProcess
    port: int
    pki: Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{WEBHOOK_PATH}"

    def client(self, name: str | None) -> ssl.SSLContext:
        """A client context presenting ``name``'s certificate (None: none)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        if name is not None:
            ctx.load_cert_chain(self.pki / f"{name}.crt", self.pki / f"{name}.key")
        return ctx


def review(text: str, uid: str = "u-1") -> dict[str, Any]:
    obj = {
        "kind": "ConfigMap",
        "metadata": {"name": "rules", "namespace": "promhpa"},
        "data": {"config.yaml": text},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "object": obj},
    }


def post(hook: Webhook, ctx: ssl.SSLContext, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        hook.url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def webhook(
    exporter: Exporter, prometheus: PrometheusProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    work = tmp_path_factory.mktemp("webhook")
    pki = work / "pki"
    pki.mkdir()
    apiserver_ca = make_ca(pki / "webhook-client-ca", "webhook-client-ca")
    issue(pki / "apiserver", apiserver_ca, "kube-apiserver-webhook-client")
    issue(pki / "stranger", apiserver_ca, "someone-else")
    issue(pki / "other-ca-client", make_ca(pki / "other-ca", "other-ca"), "kube-apiserver-webhook-client")
    exporter.set('webhook_queue{queue="q"}', 1)
    wait_until(lambda: prometheus.query("webhook_queue") != [], what="the series scraped")
    slow = Proxy(int(prometheus.url.rsplit(":", 1)[1]))
    slow.delay = 5.0
    port = free_port()
    adapter = start_adapter(
        work,
        f"http://127.0.0.1:{slow.port}",
        RULES,
        "--rules-webhook",
        f"--rules-webhook-port={port}",
        f"--rules-webhook-client-ca-file={pki / 'webhook-client-ca.crt'}",
        "--rules-webhook-allowed-names=kube-apiserver-webhook-client",
        f"--rules-webhook-timeout={TIMEOUT:g}s",
        "--rules-webhook-concurrency=4",
        "--prometheus-timeout=30s",
    )
    try:
        yield Webhook(adapter, port, pki)
    finally:
        stop_adapter(adapter)
        slow.close()


def test_a_caller_without_a_client_certificate_gets_401(webhook: Webhook) -> None:
    code, body = post(webhook, webhook.client(None), review(RULES))
    assert code == 401
    assert "client certificate is required" in body["message"]


def test_a_certificate_with_a_name_not_allowed_gets_403(webhook: Webhook) -> None:
    code, body = post(webhook, webhook.client("stranger"), review(RULES))
    assert code == 403
    assert "someone-else" in body["message"]


def test_a_certificate_from_another_ca_fails_the_handshake(webhook: Webhook) -> None:
    # TLS 1.3: the server refuses the certificate after the client's side of the handshake,
    # so the client sees the connection dropped (or a TLS alert) instead of an answer
    with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
        post(webhook, webhook.client("other-ca-client"), review(RULES))


def test_the_api_servers_certificate_gets_a_verdict(webhook: Webhook) -> None:
    code, body = post(webhook, webhook.client("apiserver"), review("rules: [{seriesQuery: ''"))
    assert code == 200
    assert body["response"]["uid"] == "u-1"
    assert body["response"]["allowed"] is False  # a broken file: refused with its line
    assert "config.yaml:1: not valid YAML" in body["response"]["status"]["message"]  # file:line


def test_a_slow_prometheus_check_ends_at_its_timeout_with_an_offline_verdict(webhook: Webhook) -> None:
    started = time.monotonic()
    code, body = post(webhook, webhook.client("apiserver"), review(RULES))
    took = time.monotonic() - started
    assert code == 200
    assert body["response"]["allowed"] is True
    assert "checked offline only" in body["response"]["warnings"][0]
    assert took < TIMEOUT + 1.5, f"answered after {took:.1f}s"


def test_a_hundred_slow_reviews_do_not_hold_a_valid_one_past_its_timeout(webhook: Webhook) -> None:
    ctx = webhook.client("apiserver")

    async def scenario() -> tuple[list[int], float, dict[str, Any]]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0)) as session:

            async def one(uid: str) -> tuple[int, dict[str, Any]]:
                async with session.post(webhook.url, json=review(RULES, uid)) as r:
                    return r.status, await r.json()

            slow = [asyncio.create_task(one(f"slow-{i}")) for i in range(100)]
            await asyncio.sleep(0.5)  # every slot taken by a review waiting on Prometheus
            started = time.monotonic()
            code, body = await one("valid")
            took = time.monotonic() - started
            codes = [c for c, _ in await asyncio.gather(*slow)]
            assert code == 200
            return codes, took, body

    codes, took, body = asyncio.run(scenario())
    assert body["response"]["allowed"] is True
    assert took < TIMEOUT, f"the valid review waited {took:.1f}s behind the slow ones"
    assert codes == [200] * 100  # and each slow one got its own verdict too


def test_the_webhook_refuses_what_check_config_proves_offline_every_error_at_once(webhook: Webhook) -> None:
    rules = (
        "rules:\n"
        "- seriesQuery: 'queue_depth{'\n"
        "  resources: {overrides: {namespace: {resource: namespace}}}\n"
        "  name: {matches: '^(.*)_total$', as: \"$1_per_second\"}\n"
        "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\n"
    )
    code, body = post(webhook, webhook.client("apiserver"), review(rules))
    assert code == 200
    assert body["response"]["allowed"] is False
    message = body["response"]["status"]["message"]
    assert "rules[0].seriesQuery: 'queue_depth{' is not PromQL" in message
    assert "rules[0].name.as: $1_per_second refers to a group named '1_per_second'" in message
