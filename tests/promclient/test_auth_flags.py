"""The Prometheus credential flags every querying command shares (``promclient.auth_flags``):
the adapter, ``check-config`` and the controller's ``replay`` read them the same way."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from promclient.auth_flags import auth_flags
from promclient.auth_flags import auth_settings
from rules.backend import SigV4Config


def parse(*args: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    auth_flags(p)
    return p.parse_args(list(args))


def test_sigv4_flags_make_the_signing_settings() -> None:
    s = auth_settings(
        parse("--prometheus-sigv4-region=us-west-2", "--prometheus-sigv4-role-arn=arn:aws:iam::1:role/r")
    )
    assert s["sigv4"] == SigV4Config("us-west-2", "aps", "arn:aws:iam::1:role/r")
    assert s["token_file"] is None


def test_basic_auth_keeps_its_password_file_to_read_again(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\n")
    s = auth_settings(
        parse("--prometheus-auth-username=a", f"--prometheus-auth-password-file={tmp_path / 'pw'}")
    )
    assert s["basic_auth"] == ("a", "s3cret")
    assert s["password_file"] == str(tmp_path / "pw")


def test_sigv4_with_a_bearer_token_is_refused_saying_which_to_leave_out() -> None:
    with pytest.raises(
        ValueError, match="--prometheus-token-file and --prometheus-sigv4-region: Prometheus is"
    ):
        auth_settings(parse("--prometheus-sigv4-region=us-west-2", "--prometheus-token-file=/t"))


def test_the_replay_command_takes_the_same_flags() -> None:
    from controller.cli import build_parser

    a = build_parser().parse_args(
        ["replay", "hpa.yaml", "--prometheus-url=http://p:9090", "--config=r.yaml",
         "--prometheus-sigv4-region=eu-west-1", "--prometheus-header=X-Scope-OrgID: team-a"]
    )  # fmt: skip
    s = auth_settings(a)
    assert s["sigv4"] == SigV4Config("eu-west-1")
    assert s["headers"] == {"X-Scope-OrgID": "team-a"}
