"""Reading one JSON object of the child protocol (``protocol.py``) field by field, each field's type checked.

A field of the wrong type, a missing required field or a key the record does not know is a
``ProtocolError`` naming the record and the key (``check.status: 3 is not a string``), never a
``KeyError`` or a ``TypeError`` further in.  Standard library only: the child runs it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields, is_dataclass
from typing import Any, ClassVar, Protocol, TypeGuard, TypeVar

__all__ = ["JSON", "Fields", "ProtocolError", "Record", "literal", "plain", "record_json"]

JSON = Any  # what ``json.loads`` returns: its shape is checked here, field by field
T = TypeVar("T")
_MISSING = object()


class ProtocolError(ValueError):
    """A request or a result row that is not of its record's form."""


class Record(Protocol):
    """A record of the protocol: a dataclass (its JSON form is its fields, by ``record_json``)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


def record_json(record: Record, **written: JSON) -> dict[str, JSON]:
    """The JSON form of a record: each field under its name, as ``plain`` writes it, but for the fields
    ``written`` gives (those whose JSON form is not the plain one: an object of pairs)."""
    return {f.name: written[f.name] if f.name in written else plain(getattr(record, f.name)) for f in fields(record)}


def plain(value: object) -> JSON:
    """A field's JSON form: a tuple as a list (of its items' forms), a record by its ``to_json`` (a dataclass
    without one: ``record_json``), anything else as it is (a string, number, bool or None)."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if is_dataclass(value) and not isinstance(value, type):
        return record_json(value)
    return value


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

    def _read(self, key: str, default: object, accept: Callable[[object], TypeGuard[T]], wanted: str) -> T:
        """The field ``key`` (``default`` when absent; none: required) if ``accept`` takes it."""
        value = self._get(key, default)
        if not accept(value):
            raise self.fail(key, value, wanted)
        return value

    def _or_none(self, key: str, read: Callable[[str], T]) -> T | None:
        """The field read by ``read``, or None when it is absent or null."""
        return None if self.data.get(key) is None else read(key)

    def text(self, key: str, default: object = _MISSING) -> str:
        return self._read(key, default, _is_text, "a string")

    def text_or_none(self, key: str) -> str | None:
        return self._or_none(key, self.text)

    def integer(self, key: str, default: object = _MISSING) -> int:
        return self._read(key, default, _is_int, "an integer")

    def integer_or_none(self, key: str) -> int | None:
        return self._or_none(key, self.integer)

    def number(self, key: str, default: object = _MISSING) -> float:
        return float(self._read(key, default, _is_duration, "a duration"))

    def flag(self, key: str, default: object = _MISSING) -> bool:
        return self._read(key, default, _is_flag, "true or false")

    def texts(self, key: str, default: object = _MISSING) -> tuple[str, ...]:
        return tuple(self._read(key, default, _is_texts, "a list of strings"))

    def texts_or_none(self, key: str) -> tuple[str, ...] | None:
        return self._or_none(key, self.texts)

    def integers(self, key: str, default: object = _MISSING) -> tuple[int, ...]:
        return tuple(self._read(key, default, _is_integers, "a list of integers"))

    def flags_or_none(self, key: str) -> tuple[bool, ...] | None:
        return self._or_none(key, lambda k: tuple(self._read(k, _MISSING, _is_flags, "a list of true or false")))

    def items(self, key: str, default: object = _MISSING) -> list[JSON]:
        return list(self._read(key, default, _is_list, "a list"))

    def mapping(self, key: str, default: object = _MISSING) -> dict[str, JSON]:
        return self._read(key, default, _is_mapping, "an object")

    def value(self, key: str) -> JSON:
        return self.data.get(key)


# What each reader accepts (a JSON list arrives as a list; a default may be a tuple).
def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_flag(value: object) -> TypeGuard[bool]:
    return isinstance(value, bool)


def _is_duration(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0


def _is_list(value: object) -> TypeGuard[list[JSON] | tuple[JSON, ...]]:
    return isinstance(value, (list, tuple))


def _is_texts(value: object) -> TypeGuard[list[str] | tuple[str, ...]]:
    return _is_list(value) and all(isinstance(v, str) for v in value)


def _is_integers(value: object) -> TypeGuard[list[int] | tuple[int, ...]]:
    return _is_list(value) and all(_is_int(v) for v in value)


def _is_flags(value: object) -> TypeGuard[list[bool]]:
    return isinstance(value, list) and all(isinstance(v, bool) for v in value)


def _is_mapping(value: object) -> TypeGuard[dict[str, JSON]]:
    return isinstance(value, dict)


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
