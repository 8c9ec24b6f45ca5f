"""Every flag whose help names its default says the default the flag really has.

The defaults live in the option definitions (``default=``, often a dataclass's field, e.g. a
MetricRule limit), and a help text names one through ``%(default)s``, which
``shared.cliflags.HelpFormatter`` writes as a user would write the flag; a text that wrote
the value itself could drift from the definition. This reads every flag of
``promhpa-adapter``, ``check-config`` and each ``promhpa-controller`` command: only the
few defaults a help text must write in another form (a size as a quantity) are written
out, and those are compared in the default's own terms: a duration as a duration (``60s``
is ``1m``), a number as a number, a size as a quantity (``4Mi``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest

from adapter.commandline.flags import check_parser
from adapter.commandline.flags import serve_parser
from controller.cli import build_parser
from shared.cliflags import HelpFormatter
from shared.durations import DurationError
from shared.durations import parse_duration
from shared.quantity import parse_quantity

SAID = re.compile(r"\(default:? ([^;,)]+)")
# help texts that describe a default in words, not as a value: checked by reading
IN_WORDS = {"any from the CA", "differences only", "/healthz"}
# flags whose help writes its default in a form %(default)s cannot: a byte size as a quantity
WRITTEN_OUT = {"--max-input-size"}


def _flags(p: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, argparse.Action]]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from _flags(sub, f"{prefix} {name}")
        elif a.option_strings:
            yield f"{prefix} {a.option_strings[-1]}", a


def _all_flags() -> list[tuple[str, argparse.Action]]:
    return [
        *_flags(serve_parser(), "promhpa-adapter"),
        *_flags(check_parser(), "promhpa-adapter check-config"),
        *_flags(build_parser(), "promhpa-controller"),
    ]


def _agrees(said: str, default: object) -> bool:
    """Whether the help's words name ``default``, read as the default's kind of value."""
    word = said.split()[0]
    if isinstance(default, timedelta):
        try:
            return parse_duration(word) == default
        except DurationError:
            return False
    if isinstance(default, bool):
        return word.lower() == str(default).lower()
    if isinstance(default, int | float):
        try:
            return parse_quantity(word).value == Decimal(str(default))
        except ValueError:
            return False
    return word == str(default)


def _expanded(a: argparse.Action) -> str:
    return HelpFormatter("prog")._expand_help(a)


FLAGS = [
    (name, said.group(1).strip(), a.default)
    for name, a in _all_flags()
    if a.help
    and (said := SAID.search(_expanded(a)))
    and a.default not in (None, argparse.SUPPRESS)
    and said.group(1).strip() not in IN_WORDS
]


def test_the_flags_that_name_a_default_are_found() -> None:
    assert len(FLAGS) > 40  # the parsers were read, not an empty list checked


def test_a_help_naming_another_default_is_caught() -> None:
    assert not _agrees("5s", timedelta(seconds=10))
    assert not _agrees("4Ki", 4 * 1024 * 1024)
    assert _agrees("60s", timedelta(minutes=1))
    assert _agrees("20", 20.0)
    assert _agrees("4Mi", 4194304)


@pytest.mark.parametrize(("flag", "said", "default"), FLAGS, ids=[f[0] for f in FLAGS])
def test_a_flags_help_names_the_default_it_has(flag: str, said: str, default: object) -> None:
    if said in IN_WORDS:
        return
    assert _agrees(said, default), (
        f"{flag}: the help says (default {said}), the flag's default is {default!r}"
    )


def test_a_help_names_its_default_through_the_definition() -> None:
    written = sorted(
        name
        for name, a in _all_flags()
        if a.help
        and (said := SAID.search(a.help))
        and not said.group(1).startswith("%(default")
        and said.group(1).strip() not in IN_WORDS
        and a.default is not None
        and name.rsplit(" ", 1)[-1] not in WRITTEN_OUT
    )
    assert written == [], "write (default %(default)s) instead of the value: " + ", ".join(written)


def test_the_help_formatter_writes_defaults_as_flags_are_written() -> None:
    p = argparse.ArgumentParser(formatter_class=HelpFormatter)
    for flag, default in (
        ("--wait", timedelta(minutes=5)),
        ("--odd", timedelta(seconds=90)),
        ("--qps", 20.0),
    ):
        p.add_argument(flag, default=default, help="(default %(default)s)")
    assert [_expanded(a) for a in p._actions[1:]] == ["(default 5m)", "(default 90s)", "(default 20)"]
