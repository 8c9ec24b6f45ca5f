"""A test whose tool, cluster or folder is missing fails unless skipping was opted into."""

from __future__ import annotations

import pytest

from tests.support import ALLOW_SKIPS
from tests.support import missing


def test_missing_fails_without_the_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_SKIPS, raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match=r"helm is not built.*PROMHPA_ALLOW_SKIPS=1"):
        missing("helm is not built")


def test_missing_skips_with_the_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_SKIPS, "1")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="helm is not built"):
        missing("helm is not built")


def test_ci_never_skips_even_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_SKIPS, "1")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        missing("helm is not built")
