"""Typed reading of loaded JSON/YAML with the dotted path of every field (pure).

``_Reader`` wraps one object of a snapshot; each accessor checks the type (and parses
quantities, times and durations) and raises ``SnapshotError`` naming the exact field, so a
user can fix the file. The snapshot parser (``parse``) is written on top of it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from shared.durations import DurationError, TimeError, parse_duration, parse_time
from shared.quantity import Quantity, QuantityError

T = TypeVar("T")


class SnapshotError(ValueError):
    """A malformed snapshot; ``path`` names the field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def _type_name(v: object) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(v), type(v).__name__)


class _Reader:
    """Typed access to nested data, tracking the path for error messages."""

    def __init__(self, data: Any, path: str = "") -> None:
        self.data = data
        self.path = path

    def _sub(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return isinstance(self.data, dict) and self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None

    def obj(self, key: str, required: bool = False) -> _Reader:
        v = self.raw(key)
        if v is None:
            if required:
                raise SnapshotError(self._sub(key), "is required")
            return _Reader({}, self._sub(key))
        if not isinstance(v, dict):
            raise SnapshotError(self._sub(key), f"must be an object, got {_type_name(v)}")
        return _Reader(v, self._sub(key))

    def items(self, key: str) -> list[_Reader]:
        v = self.raw(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise SnapshotError(self._sub(key), f"must be a list, got {_type_name(v)}")
        out = []
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                raise SnapshotError(f"{self._sub(key)}[{i}]", f"must be an object, got {_type_name(item)}")
            out.append(_Reader(item, f"{self._sub(key)}[{i}]"))
        return out

    def string(self, key: str, default: str = "") -> str:
        v = self.raw(key)
        if v is None:
            return default
        if not isinstance(v, str):
            raise SnapshotError(self._sub(key), f"must be a string, got {_type_name(v)}")
        return v

    def integer(self, key: str, default: int | None = None, bits: int = 32) -> int | None:
        """An integer that fits the field's Go type: int32 (every replica count, window and
        period of autoscaling/v2) unless ``bits`` says 64."""
        v = self.raw(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            if not (isinstance(v, float) and v.is_integer()):
                raise SnapshotError(self._sub(key), f"must be an integer, got {v!r}")
            v = int(v)
        if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            raise SnapshotError(self._sub(key), f"{v} is out of range for an int{bits}")
        return v

    def number(self, key: str, default: float) -> float:
        v = self.raw(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise SnapshotError(self._sub(key), f"must be a number, got {v!r}")
        return float(v)

    def boolean(self, key: str, default: bool) -> bool:
        v = self.raw(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise SnapshotError(self._sub(key), f"must be true or false, got {v!r}")
        return v

    def _conv(self, key: str, fn: Callable[[Any], T], what: str) -> T | None:
        v = self.raw(key)
        if v is None:
            return None
        try:
            return fn(v)
        except (QuantityError, TimeError, DurationError) as e:
            raise SnapshotError(self._sub(key), f"invalid {what}: {e}") from None

    def quantity(self, key: str) -> Quantity | None:
        q = self._conv(key, Quantity.parse, "quantity")
        # the controller works in milli-units held in an int64 (MilliValue); past that Go's
        # arithmetic is undefined, so such a value is refused rather than guessed at
        if q is not None and abs(q.value) * 1000 >= 2**63:
            raise SnapshotError(
                self._sub(key), f"quantity {self.raw(key)!r} is out of range (at most 9223372036854775807m)"
            )
        return q

    def time(self, key: str) -> datetime | None:
        return self._conv(key, parse_time, "time")

    def duration(self, key: str) -> timedelta | None:
        return self._conv(key, parse_duration, "duration")

    def str_map(self, key: str) -> dict[str, str]:
        v = self.raw(key)
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise SnapshotError(self._sub(key), f"must be an object, got {_type_name(v)}")
        return {str(k): "" if x is None else str(x) for k, x in v.items()}

    def quantity_map(self, key: str) -> dict[str, Quantity]:
        r = self.obj(key)
        return {str(k): q for k in r.data if (q := r.quantity(str(k))) is not None}
