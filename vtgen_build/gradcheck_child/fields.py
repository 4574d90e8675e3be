"""Reading one JSON object of the child protocol (``protocol.py``) field by field, each field's type checked.

A field of the wrong type, a missing required field or a key the record does not know is a
``ProtocolError`` naming the record and the key (``check.status: 3 is not a string``), never a
``KeyError`` or a ``TypeError`` further in.  Standard library only: the child runs it too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["JSON", "Fields", "ProtocolError", "literal", "literal_json"]

JSON = Any  # what ``json.loads`` returns: its shape is checked here, field by field
_MISSING = object()


class ProtocolError(ValueError):
    """A request or a result row that is not of its record's form."""


class Fields:
    """One JSON object being read as the record ``what`` (``what`` heads every error)."""

    def __init__(self, data: JSON, what: str, known: Iterable[str]) -> None:
        if not isinstance(data, dict):
            raise ProtocolError(f"{what}: {_shown(data)} is not a JSON object")
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ProtocolError(f"{what}: unknown key {unknown[0]!r}")
        self.data, self.what = data, what

    def fail(self, key: str, value: object, wanted: str) -> ProtocolError:
        return ProtocolError(f"{self.what}.{key}: {_shown(value)} is not {wanted}")

    def _get(self, key: str, default: object) -> object:
        value = self.data.get(key, default)
        if value is _MISSING:
            raise ProtocolError(f"{self.what}: no {key!r}")
        return value

    def text(self, key: str, default: object = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, value, "a string")
        return value

    def text_or_none(self, key: str) -> str | None:
        return None if self.data.get(key) is None else self.text(key)

    def integer(self, key: str, default: object = _MISSING) -> int:
        value = self._get(key, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, value, "an integer")
        return value

    def integer_or_none(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.integer(key)

    def number(self, key: str, default: object = _MISSING) -> float:
        value = self._get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value or value < 0:
            raise self.fail(key, value, "a duration")
        return float(value)

    def flag(self, key: str, default: object = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, value, "true or false")
        return value

    def texts(self, key: str, default: object = _MISSING) -> tuple[str, ...]:
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, value, "a list of strings")
        return tuple(value)

    def texts_or_none(self, key: str) -> tuple[str, ...] | None:
        return None if self.data.get(key) is None else self.texts(key)

    def integers(self, key: str, default: object = _MISSING) -> tuple[int, ...]:
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
            raise self.fail(key, value, "a list of integers")
        return tuple(value)

    def flags_or_none(self, key: str) -> tuple[bool, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
            raise self.fail(key, value, "a list of true or false")
        return tuple(value)

    def items(self, key: str, default: object = _MISSING) -> list[JSON]:
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)):
            raise self.fail(key, value, "a list")
        return list(value)

    def mapping(self, key: str, default: object = _MISSING) -> dict[str, JSON]:
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise self.fail(key, value, "an object")
        return value

    def value(self, key: str) -> JSON:
        return self.data.get(key)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def literal(value: JSON, what: str) -> Any:
    """A sample's plain value (``hints.Literal``: a string, number, bool, None or a list of those) as the parent
    planned it: JSON lists become tuples."""
    if isinstance(value, list):
        return tuple(literal(v, what) for v in value)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise ProtocolError(f"{what}: {_shown(value)} is not a plain value")


def literal_json(value: Any) -> JSON:
    return [literal_json(v) for v in value] if isinstance(value, tuple) else value
