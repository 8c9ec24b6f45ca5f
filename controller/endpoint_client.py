"""Reading a running controller's endpoints (``/debug/*``) from the command line.

The endpoints are HTTPS and need the caller's own credentials (``controller.live.endpoints``):
this sends the kubeconfig's -- its client certificate, or its bearer token -- and verifies
the controller's certificate against ``--controller-ca-file`` (for the chart's, the
controller's ``ca.crt``) unless ``--insecure-skip-tls-verify`` says not to.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from shared.tls import client_context


class EndpointError(Exception):
    """The controller could not be read; the message says why and what to do."""

    def __init__(self, message: str, status: int = 0, usage: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.usage = usage  # the user's input is what failed (exit 2, shared.exitcodes)


def get_json(url: str, *, kubeconfig: str | None, ca_file: str | None = None, insecure: bool = False) -> Any:
    """GET ``url`` from the controller as the kubeconfig's user; its JSON answer."""
    return json.loads(get(url, kubeconfig=kubeconfig, ca_file=ca_file, insecure=insecure))


def get(url: str, *, kubeconfig: str | None, ca_file: str | None = None, insecure: bool = False) -> bytes:
    """GET ``url`` from the controller as the kubeconfig's user; the body."""
    ctx: ssl.SSLContext | None = None
    headers: dict[str, str] = {}
    if url.startswith("https:"):
        ctx = client_context(ca_file)
        if insecure:
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        headers = credentials(kubeconfig, ctx)
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=ctx) as r:
            return bytes(r.read())
    except urllib.error.HTTPError as e:
        try:
            detail = json.loads(e.read() or b"{}").get("message", e.reason)
        except ValueError:
            detail = e.reason
        raise EndpointError(f"{url}: {e.code} {detail}", e.code) from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, ssl.SSLCertVerificationError):
            raise EndpointError(
                f"cannot verify the controller's certificate at {url} ({e.reason.verify_message}): pass "
                "--controller-ca-file (the CA of its serving certificate) or --insecure-skip-tls-verify"
            ) from None
        raise EndpointError(f"cannot reach the controller at {url}: {e.reason}") from None
    except OSError as e:
        raise EndpointError(f"cannot reach the controller at {url}: {e}") from None


def credentials(kubeconfig: str | None, ctx: ssl.SSLContext) -> dict[str, str]:
    """The kubeconfig user's client certificate (into ``ctx``) or bearer token (a header)."""
    from shared.kube.client import load

    conf = load(kubeconfig).configuration
    if conf.cert_file:
        ctx.load_cert_chain(conf.cert_file, conf.key_file or None)
    token = conf.get_api_key_with_prefix("BearerToken") or conf.get_api_key_with_prefix("authorization")
    return {"Authorization": str(token)} if token else {}
