"""One answer to "is this an http(s) URL?" for flags and rule files alike (pure)."""

from __future__ import annotations

import pytest

from shared.urls import is_http_url


@pytest.mark.parametrize(
    "url",
    [
        "http://prometheus:9090",
        "https://thanos-query.monitoring.svc/prefix",
        "http://[::1]:9090",
        "https://idp/token",
    ],
)
def test_an_http_url_with_a_host_is_accepted(url: str) -> None:
    assert is_http_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "prometheus:9090",
        "http://:9090",
        "https://",
        "ftp://prometheus",
        "http://[::1",
        "http://host:port",
        "",
    ],
    ids=["no-scheme", "no-host", "nothing-after", "ftp", "open-bracket", "bad-port", "empty"],
)
def test_anything_else_is_refused(url: str) -> None:
    assert not is_http_url(url)
