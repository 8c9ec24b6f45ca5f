from __future__ import annotations

import json
import logging

import pytest
import structlog

from shared.logging import configure
from shared.logging import get_logger


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def test_json_mode_writes_one_json_object_per_event(capsys: pytest.CaptureFixture[str]) -> None:
    configure(json=True, level="info")
    get_logger("test").info("reconciled", hpa="ns/web", desired=4)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    event = json.loads(line)
    assert event["event"] == "reconciled"
    assert event["hpa"] == "ns/web"
    assert event["desired"] == 4
    assert event["level"] == "info"
    assert "timestamp" in event


def test_level_filters_lower_events(capsys: pytest.CaptureFixture[str]) -> None:
    configure(json=True, level="warning")
    get_logger("test").info("quiet")
    assert capsys.readouterr().err == ""


def test_standard_library_logs_share_the_format(capsys: pytest.CaptureFixture[str]) -> None:
    configure(json=True)
    logging.getLogger("aiohttp.access").warning("hello %s", "there")
    event = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert event["event"] == "hello there"


def test_unknown_level_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure(level="loud")
