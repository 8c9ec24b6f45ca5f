"""The profile summary: each sample charged to the code it ran, and our code's inclusive share."""

from __future__ import annotations

from pathlib import Path

from benchmarks import profiles

ROOT = "/src/promhpa"
SITE = "/venv/lib/python3.11/site-packages"
LOOP = f"<module> ({ROOT}/adapter/__main__.py:3);run ({ROOT}/shared/eventloop.py:55)"
RAW = "\n".join(
    [
        f"{LOOP};run (/usr/lib/python3.11/asyncio/runners.py:118) 40",
        "<module> (/usr/lib/python3.11/asyncio/runners.py:1);run_until_complete "
        "(/usr/lib/python3.11/asyncio/runners.py:118) 2",
        f"handle (x);_handle_request ({SITE}/aiohttp/web_protocol.py:480) 30",
        f"_handle_request ({SITE}/aiohttp/web_protocol.py:480);serve ({ROOT}/adapter/serving/app.py:10);"
        f"external ({ROOT}/rules/queries.py:200) 20",
        f"_handle_request ({SITE}/aiohttp/web_protocol.py:480);info ({SITE}/structlog/_log.py:5) 8",
        "not a sample line",
    ]
)


def test_each_sample_is_charged_to_its_innermost_frame() -> None:
    got = dict(profiles.summarize(RAW, ROOT).self_shares)
    assert got == {
        "event loop's C code (uvloop: TLS, sockets, callbacks)": 0.42,
        "aiohttp (request parsing, responses)": 0.30,
        "promhpa: rules.queries (external)": 0.20,
        "structlog": 0.08,
    }


def test_our_code_counts_inclusively_wherever_it_is_on_the_stack() -> None:
    got = profiles.summarize(RAW, ROOT)
    assert got.samples == 100
    # the process' entry and the loop's start (adapter/__main__, shared/eventloop) are on every
    # stack of the serving thread and do not count; a handler through adapter/rules (20) does
    assert got.ours_inclusive == 0.20


def test_rows_show_the_largest_shares_the_rest_and_our_inclusive_share() -> None:
    shown = profiles.rows("external", profiles.summarize(RAW, ROOT), top=2)
    assert shown == [
        "| external | event loop's C code (uvloop: TLS, sockets, callbacks) | 42% |",
        "| external | aiohttp (request parsing, responses) | 30% |",
        "| external | everything else | 28% |",
        "| external | **promhpa's own code, inclusive** | **20%** |",
    ]


def test_an_empty_profile_says_so() -> None:
    assert profiles.rows("one object", profiles.summarize("", ROOT)) == ["| one object | (no samples) | |"]


def test_pyspy_shortened_paths_are_recognised_as_ours_or_a_librarys() -> None:
    here = str(Path(__file__).resolve().parents[2])
    raw = "\n".join(
        [
            "exchange (shared/httpclient.py:196) 3",
            "query (prometheus.py:365) 2",  # promclient/prometheus.py, its directory on the path
            "_handle_request (aiohttp/web_protocol.py:577) 4",
            "get (cachetools/__init__.py:10) 1",
        ]
    )
    got = dict(profiles.summarize(raw, here).self_shares)
    assert got == {
        "aiohttp (request parsing, responses)": 0.4,
        "promhpa: shared.httpclient (exchange)": 0.3,
        "promhpa: promclient.prometheus (query)": 0.2,
        "cachetools": 0.1,
    }
