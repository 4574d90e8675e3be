"""Typed readers of located YAML fields, shared by the native and derivative models."""

from __future__ import annotations

from collections.abc import Iterable

from ..base.errors import Location, VtgenError, misspelled
from ..inputs.load import Field, Value

__all__ = ["FieldReader"]


class FieldReader:
    """Hands out an entry's fields by key, checking types; ``finish()`` rejects leftovers."""

    def __init__(self, fields: tuple[Field, ...], where: Location, known: Iterable[str]) -> None:
        self._fields = {f.key: f for f in fields}
        self._where = where
        self._known = tuple(known)
        for field in fields:
            if field.key not in self._known:
                raise misspelled(f"unknown key '{field.key}'", field.key, self._known, field.location)

    def location(self, key: str) -> Location:
        field = self._fields.get(key)
        return field.location if field else self._where

    def has(self, key: str) -> bool:
        return key in self._fields

    def raw(self, key: str) -> Value:
        field = self._fields.get(key)
        return None if field is None else field.value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise VtgenError(f"'{key}' must be a string, found {_describe(value)}", self.location(key))
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if value is None:
            raise VtgenError(f"missing required key '{key}'", self._where)
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise VtgenError(f"'{key}' must be True or False, found {_describe(value)}", self.location(key))
        return value

    def text_list(self, key: str) -> tuple[str, ...]:
        """A string or a list of strings."""
        value = self.raw(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            return tuple(str(v) for v in value)
        raise VtgenError(f"'{key}' must be a string or a list of strings", self.location(key))

    def mapping(self, key: str) -> tuple[Field, ...]:
        value = self.raw(key)
        if value is None:
            return ()
        if isinstance(value, tuple) and all(isinstance(v, Field) for v in value):
            return tuple(v for v in value if isinstance(v, Field))
        raise VtgenError(f"'{key}' must be a mapping", self.location(key))


def _describe(value: Value) -> str:
    if isinstance(value, tuple):
        return "a mapping" if value and isinstance(value[0], Field) else "a list"
    return repr(value)
