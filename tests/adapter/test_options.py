"""The serving adapter's options: parsed and checked once, handed on typed (pure)."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

import pytest

from adapter.commandline.options import OptionsError
from adapter.commandline.options import parse_serve

URL = "--prometheus-url=http://127.0.0.1:9090"
ADAPTER = Path(__file__).resolve().parents[2] / "adapter"


def test_durations_arrive_in_seconds_and_lists_as_sets() -> None:
    o = parse_serve([URL, "--metrics-relist-interval=1m", "--shutdown-delay=5s",
                     "--team-rule-backends=default,thanos", "--team-rule-tenants=a, b"])  # fmt: skip
    assert o.rules.relist_interval == 60.0
    assert o.rules.max_age == timedelta(minutes=1)  # the relist interval, when not given
    assert o.listen.shutdown_delay == 5.0
    assert o.team.backends == frozenset({"", "thanos"})
    assert o.team.tenants == frozenset({"a", "b"})
    assert o.prometheus.url == "http://127.0.0.1:9090"


def test_prometheus_adapters_flags_map_onto_ours() -> None:
    o = parse_serve([URL, "--prometheus-verb=post", "--metrics-max-age=2m"])
    assert o.prometheus.method == "POST"
    assert o.rules.max_age == timedelta(minutes=2)


def test_an_ignored_prometheus_adapter_flag_is_kept_to_be_said() -> None:
    o = parse_serve([URL, "--authentication-skip-lookup=true", "/adapter"])
    said = [fields.get("flag") or fields.get("argument") for _, fields in o.ignored]
    assert said == ["--authentication-skip-lookup", "/adapter"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--prometheus-url=prometheus:9090"], r"--prometheus-url must be an http\(s\) URL"),
        ([URL, "--insecure-skip-auth", "--bind-address=10.0.0.1"], "only binds to loopback"),
        ([URL, "--rules-webhook"], "needs --rules-webhook-client-ca-file"),
        ([URL, "--prometheus-verb=GET", "--prometheus-method=POST"], "conflicting flags"),
        ([URL, "--team-rule-max-query-depth=100000"], "past which the PromQL parser itself is unsafe"),
    ],
    ids=["url", "insecure-bind", "webhook-ca", "conflict", "limit"],
)
def test_unservable_flags_are_one_error_in_the_log_format_asked(argv: list[str], message: str) -> None:
    with pytest.raises(OptionsError, match=message) as raised:
        parse_serve([*argv, "--log-format=json"])
    assert raised.value.log.json


def test_no_module_outside_the_command_line_parses_or_takes_a_namespace() -> None:
    """Only ``adapter/commandline`` parses (``parse_serve``, ``parse_check``) or sees a
    parsed namespace: the rest of the adapter takes option objects."""
    handling = {
        str(f.relative_to(ADAPTER))
        for f in ADAPTER.rglob("*.py")
        if any(
            (isinstance(n, ast.Import) and any(a.name == "argparse" for a in n.names))
            or (isinstance(n, ast.ImportFrom) and n.module == "argparse")
            or (isinstance(n, ast.Attribute) and n.attr in ("parse_args", "Namespace"))
            for n in ast.walk(ast.parse(f.read_text()))
        )
    }
    assert {h for h in handling if not h.startswith("commandline/")} == set()
