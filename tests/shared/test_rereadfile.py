"""A rotating credential file is read again after its interval (``shared.rereadfile``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.rereadfile import RereadFile


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("first\n")
    return path


def test_a_rotated_file_is_read_again_once_the_interval_passes(token: Path) -> None:
    f = RereadFile(token, every=0.0)
    assert f.text() == "first"
    token.write_text("second\n")
    assert f.text() == "second"


def test_within_the_interval_the_last_read_is_kept(token: Path) -> None:
    f = RereadFile(token, every=3600)
    assert f.text() == "first"
    token.write_text("second")
    assert f.text() == "first"


def test_a_missing_file_raises_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absent"):
        RereadFile(tmp_path / "absent").text()


def test_reread_reads_at_once_and_says_whether_the_text_changed(token: Path) -> None:
    f = RereadFile(token, every=3600)
    assert f.text() == "first"
    assert f.reread() is False
    token.write_text("second")
    assert f.reread() is True
    assert f.text() == "second"


def test_reread_of_a_vanished_file_keeps_the_last_text(token: Path) -> None:
    f = RereadFile(token, every=3600)
    assert f.text() == "first"
    token.unlink()
    assert f.reread() is False
    assert f.text() == "first"
