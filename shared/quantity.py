"""Kubernetes resource quantities, exact.

We do not use ``kubernetes.utils.parse_quantity``: it returns a bare ``Decimal``, forgets
the format a quantity was written in (so it cannot format canonically), and accepts forms
the API server rejects (``"1.5Ki"`` is fine, but so is ``" 1"``). The HPA controller's
decisions hinge on ``MilliValue()`` rounding and on integer arithmetic over milli-units, so
this module reproduces apimachinery's ``resource.Quantity`` semantics exactly:

* parsing: ``<sign><digits>[.<digits>][<suffix>]`` where the suffix is a decimal SI suffix
  (``n u m "" k M G T P E``), a binary one (``Ki Mi Gi Ti Pi Ei``) or an exponent
  (``e3``, ``E-2``);
* ``milli_value()`` / ``value()``: scaled to an integer, rounding *away from zero* when
  precision is lost (apimachinery rounds up: ``MilliValue`` of ``0.1m`` is 1);
* ``str()``: the canonical form apimachinery prints (``1500m``, ``2k``, ``512Ki``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_UP, Decimal, InvalidOperation, localcontext
from enum import Enum
from functools import total_ordering
from typing import Final


class QuantityError(ValueError):
    """A string is not a Kubernetes quantity; the message says what was expected."""


class Format(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXP: Final = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXP: Final = {v: k for k, v in _BINARY_SUFFIXES.items()}

_NUMBER = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")
# apimachinery caps the precision it keeps; values finer than a nanounit round up.
_MAX_PRECISION = 60


def _round_away(value: Decimal, exponent: int) -> Decimal:
    """Round ``value`` to a multiple of 10**exponent, away from zero (apimachinery's rule)."""
    with localcontext() as ctx:
        ctx.prec = _MAX_PRECISION
        return value.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_UP)


@total_ordering
@dataclass(frozen=True)
class Quantity:
    """An exact quantity and the format it is printed in."""

    value: Decimal
    format: Format = Format.DECIMAL_SI

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse a quantity as the API server does; raise QuantityError naming the problem."""
        if isinstance(text, bool):
            raise QuantityError(f"quantities must be strings or numbers, not {text!r}")
        if isinstance(text, int):
            return cls(Decimal(text))
        if isinstance(text, float):
            # YAML turns `0.5` into a float; its shortest repr is what the user wrote.
            return cls.parse(repr(text))
        if not isinstance(text, str):
            raise QuantityError(f"quantities must be strings or numbers, not {type(text).__name__}")
        m = _NUMBER.match(text)
        if not m or not text:
            raise QuantityError(f"{text!r} is not a quantity (expected e.g. '500m', '1.5', '2Gi')")
        sign, digits, suffix = m.groups()
        try:
            number = Decimal(sign + digits)
        except InvalidOperation as e:  # pragma: no cover - regex already guarantees digits
            raise QuantityError(f"{text!r} is not a quantity") from e
        if suffix in _DECIMAL_SUFFIXES:
            fmt = Format.DECIMAL_SI
            value = number.scaleb(_DECIMAL_SUFFIXES[suffix])
        elif suffix in _BINARY_SUFFIXES:
            fmt = Format.BINARY_SI
            value = number * (Decimal(2) ** _BINARY_SUFFIXES[suffix])
        elif exp := _EXPONENT.match(suffix):
            fmt = Format.DECIMAL_EXPONENT
            if len(exp.group(1).lstrip("+-")) > 6:
                raise QuantityError(f"{text!r} is out of range: its exponent is beyond any quantity")
            value = number.scaleb(int(exp.group(1)))
        else:
            raise QuantityError(
                f"{text!r} is not a quantity: unknown suffix {suffix!r} "
                "(expected one of n u m k M G T P E Ki Mi Gi Ti Pi Ei or an exponent like e3)"
            )
        # Precision below a nanounit is not kept: it rounds up, as in apimachinery.
        if value.as_tuple().exponent < -9:  # type: ignore[operator]
            value = _round_away(value, -9)
        return cls(value.normalize() if value else Decimal(0), fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """The equivalent of resource.NewMilliQuantity."""
        return cls(Decimal(milli).scaleb(-3).normalize() if milli else Decimal(0), fmt)

    def scaled_value(self, exponent: int) -> int:
        """ceil-away-from-zero of value / 10**exponent, as apimachinery's ScaledValue."""
        with localcontext() as ctx:
            ctx.prec = _MAX_PRECISION
            return int(self.value.scaleb(-exponent).to_integral_value(rounding=ROUND_UP))

    def milli_value(self) -> int:
        return self.scaled_value(-3)

    def int_value(self) -> int:
        return self.scaled_value(0)

    def as_float(self) -> float:
        """AsApproximateFloat64: fine for tolerances, never for replica arithmetic."""
        return float(self.value)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)


def _integer_and_exponent(value: Decimal) -> tuple[int, int]:
    """value == mantissa * 10**exponent with an integer mantissa and no trailing zeros."""
    t = value.normalize().as_tuple()
    mantissa = int("".join(map(str, t.digits)) or "0")
    exponent = int(t.exponent)
    if t.sign:
        mantissa = -mantissa
    return mantissa, exponent


def format_quantity(value: Decimal, fmt: Format = Format.DECIMAL_SI) -> str:
    """The canonical string apimachinery prints for a value in a format.

    DecimalSI uses the largest SI suffix (a multiple of 10**3) that keeps the mantissa an
    integer; BinarySI does the same with powers of 1024 when the value is an integer that
    large, and falls back to DecimalSI otherwise (as apimachinery does for fractions).
    """
    if value == 0:
        return "0"
    if value.as_tuple().exponent < -9:  # type: ignore[operator]
        value = _round_away(value, -9)
    if fmt is Format.BINARY_SI and value == value.to_integral_value() and abs(value) >= 1024:
        n = int(value)
        power = 0
        while power < 60 and n % 1024 == 0 and n != 0:
            n //= 1024
            power += 10
        if power:
            return f"{n}{_BINARY_BY_EXP[power]}"
        return str(int(value))
    mantissa, exponent = _integer_and_exponent(value)
    # Bring the exponent down to a multiple of 3 (never below nano), growing the mantissa.
    while exponent % 3 != 0:
        mantissa *= 10
        exponent -= 1
    exponent = max(exponent, -9)
    if fmt is Format.DECIMAL_EXPONENT:
        return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"
    # Keep the mantissa an integer; use the largest suffix apimachinery knows.
    while exponent > 18:
        mantissa *= 1000
        exponent -= 3
    return f"{mantissa}{_DECIMAL_BY_EXP[exponent]}"


def parse_quantity(text: str | int | float) -> Quantity:
    return Quantity.parse(text)


def milli_ceil(value: Decimal) -> int:
    """ceil(value * 1000) toward +inf, for callers that must not round away from zero."""
    with localcontext() as ctx:
        ctx.prec = _MAX_PRECISION
        return int((value * 1000).to_integral_value(rounding=ROUND_CEILING))
