from __future__ import annotations

from decimal import Decimal

import pytest

from shared.quantity import Format
from shared.quantity import Quantity
from shared.quantity import QuantityError


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", "0.5"),
        ("1", "1"),
        ("1.5", "1.5"),
        ("2k", "2000"),
        ("1M", "1000000"),
        ("3n", "0.000000003"),
        ("2u", "0.000002"),
        ("1Ki", "1024"),
        ("1.5Gi", "1610612736"),
        ("1e3", "1000"),
        ("5E-3", "0.005"),
        ("-2", "-2"),
        ("+4", "4"),
        (".5", "0.5"),
        ("1T", "1e12"),
        ("2P", "2e15"),
        ("1E", "1e18"),
        ("3Ei", str(3 * 2**60)),
    ],
)
def test_parses_every_suffix_form(text: str, value: str) -> None:
    assert Quantity.parse(text).value == Decimal(value)


@pytest.mark.parametrize("text", ["", "m", "1.2.3", "5 cores", "1KB", "1ki", "abc", " 1"])
def test_rejects_non_quantities_with_a_clear_error(text: str) -> None:
    with pytest.raises(QuantityError, match="quantity"):
        Quantity.parse(text)


def test_milli_value_rounds_up_away_from_zero() -> None:
    assert Quantity.parse("0.1m").milli_value() == 1
    assert Quantity.parse("1.0001").milli_value() == 1001
    assert Quantity.parse("-0.1m").milli_value() == -1
    assert Quantity.parse("1500m").milli_value() == 1500


def test_value_rounds_up() -> None:
    assert Quantity.parse("1500m").int_value() == 2
    assert Quantity.parse("2Ki").int_value() == 2048


def test_precision_below_nano_rounds_up() -> None:
    assert Quantity.parse("0.0000000001").value == Decimal("1e-9")


@pytest.mark.parametrize(
    ("milli", "text"),
    [
        (1500, "1500m"),
        (1000, "1"),
        (20000, "20"),
        (6667, "6667m"),
        (0, "0"),
        (2_000_000, "2k"),
        (1, "1m"),
        (-500, "-500m"),
        (1_500_000, "1500"),
    ],
)
def test_formats_milli_quantities_canonically(milli: int, text: str) -> None:
    assert str(Quantity.from_milli(milli)) == text


def test_formats_binary_quantities_with_binary_suffixes() -> None:
    assert str(Quantity.parse("1024Ki")) == "1Mi"
    assert str(Quantity.parse("1536Ki")) == "1536Ki"
    assert str(Quantity(Decimal("0.5"), Format.BINARY_SI)) == "500m"


def test_float_and_int_inputs_from_yaml() -> None:
    assert Quantity.parse(0.5).value == Decimal("0.5")
    assert Quantity.parse(3).value == 3
    with pytest.raises(QuantityError):
        Quantity.parse(True)
