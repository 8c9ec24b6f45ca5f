"""A bounded load on loopback: N keep-alive connections, each sending distinct requests
for a fixed time. Prints one JSON object: the count of each answer.

    python -m tests.loadgen URL PATH CONNECTIONS SECONDS

Runs in its own process, so neither the server nor whoever measures it (probes, say) shares
an interpreter or an event loop with the load. Only loopback is ever addressed (anything
else is refused).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from urllib.parse import urlsplit

import aiohttp


async def load(url: str, path: str, connections: int, seconds: float) -> dict[str, int]:
    if urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"refusing to load {url}: loopback only")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the adapter's self-signed test certificate
    stop = time.monotonic() + seconds
    codes: dict[str, int] = {}
    sep = "&" if "?" in path else "?"

    async def client(i: int) -> None:
        connector = aiohttp.TCPConnector(ssl=ctx, limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            n = 0
            while time.monotonic() < stop:
                n += 1
                key = "error"
                try:
                    async with session.get(
                        f"{url}{path}{sep}labelSelector=load%3D{i}-{n}",
                        timeout=aiohttp.ClientTimeout(total=30),
                    ) as r:
                        await r.read()
                        key = str(r.status)
                except (aiohttp.ClientError, TimeoutError) as e:
                    key = type(e).__name__
                codes[key] = codes.get(key, 0) + 1

    await asyncio.gather(*(client(i) for i in range(connections)))
    return codes


def main() -> None:
    url, path, connections, seconds = sys.argv[1:5]
    print(json.dumps(asyncio.run(load(url, path, int(connections), float(seconds)))))


if __name__ == "__main__":
    main()
