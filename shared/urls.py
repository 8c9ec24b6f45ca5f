"""What counts as an http(s) URL, once for every place one is given: a flag of either
command, a rule file's backend or upstream ``url``, an OAuth2 ``tokenURL``."""

from __future__ import annotations

import urllib.parse


def is_http_url(text: str) -> bool:
    """An http(s) URL with a host (``http://:9090`` and ``https://`` have none)."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises for a port that is not a number from 0 to 65535
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # e.g. an unclosed IPv6 bracket, or a port that is not a number
        return False
