"""Where the adapter listens: the secure port (its certificate, and the front proxy's CA
for client certificates) and the rules webhook's own port (the API server's client
certificate only). A listener that cannot open is a ``StartupError`` naming the address."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from aiohttp import web

from adapter.commandline.options import ListenOptions
from adapter.serving.auth import RequestHeaderConfig, add_client_ca
from shared.tls import server_context, serving_files


class StartupError(Exception):
    """The adapter cannot start as configured: said in one log line, exit 2."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.context = context


def _serving_files(o: ListenOptions) -> tuple[Path, Path]:
    return serving_files(o.cert_file, o.key_file, o.cert_dir, o.cert_dns_name)


async def site(runner: web.AppRunner, host: str, port: int, ctx: ssl.SSLContext) -> web.TCPSite:
    tcp = web.TCPSite(runner, host, port, ssl_context=ctx)
    try:
        await tcp.start()
    except OSError as e:  # e.g. the port is in use
        raise StartupError("cannot serve", address=f"{host}:{port}", error=str(e)) from None
    return tcp


async def secure_site(
    runner: web.AppRunner, o: ListenOptions, requestheader: RequestHeaderConfig | None
) -> web.TCPSite:
    """The secure port: our certificate, and the front proxy's CA for client certificates."""
    cert, key = _serving_files(o)
    try:
        ctx = server_context(cert, key, o.cipher_suites, o.min_version)
    except (OSError, ssl.SSLError) as e:
        raise StartupError(
            "cannot load the serving certificate", cert=str(cert), key=str(key), error=str(e)
        ) from None
    if requestheader is not None:
        add_client_ca(ctx, requestheader)
    return await site(runner, o.bind_address, o.secure_port, ctx)


async def webhook_site(
    app: web.Application, o: ListenOptions, port: int, client_ca_file: str
) -> web.AppRunner:
    """The rules webhook's port: it runs submitted queries against Prometheus, so it answers
    only clients with a certificate from ``client_ca_file`` (``--rules-webhook-client-ca-file``)."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=o.shutdown_grace_period)
    await runner.setup()
    try:
        ctx = server_context(*_serving_files(o), o.cipher_suites, o.min_version)
        ctx.load_verify_locations(client_ca_file)
    except (OSError, ssl.SSLError) as e:
        await runner.cleanup()
        raise StartupError("cannot set up the rules webhook's TLS", ca=client_ca_file, error=str(e)) from None
    ctx.verify_mode = ssl.CERT_OPTIONAL  # none: 401 with a reason, not a handshake failure
    try:
        await site(runner, o.bind_address, port, ctx)
    except StartupError:
        await runner.cleanup()
        raise
    return runner
