"""Data-only, integrity-checked state files: the one format every cache and record uses.

A state file lives in a build directory that CI systems save and restore between
branches, so whatever it holds is untrusted.  Reading one therefore never runs code
(plain JSON, no pickle) and checks the content hash before the payload is used:

    vtgen-store 1 <kind> <sha256 of body>\\n
    <body: canonical JSON, sorted keys, no blanks>

Anything that does not match, a torn write, a flipped byte, another kind or version,
reads as ``None``: the caller treats it as "no cache" and redoes the work.  The hash
catches corruption, not a forger (who could recompute it): each reader then decodes
the payload into frozen dataclasses with the typed readers below, which accept only
the exact shape they expect (``Malformed`` otherwise, which the reader turns into
``None`` too).  No dict or list of the payload travels further than its decoder.

This module imports only ``json`` and a SHA-256: the no-op path (``cli/entry.py`` over ``engine/noop.py``) uses it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeAlias, cast

__all__ = [
    "JSON",
    "MAX_STATE_BYTES",
    "Malformed",
    "dumps",
    "file_sha256",
    "flag",
    "integer",
    "integers",
    "items",
    "loads",
    "maybe_integers",
    "maybe_text",
    "obj",
    "pair",
    "read",
    "sha256_hex",
    "stat_signature",
    "text",
    "text_lists",
    "texts",
    "write",
]

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"

_MAGIC = b"vtgen-store"
_VERSION = b"1"
MAX_STATE_BYTES = 256 * 1024 * 1024  # a state file larger than this is not ours


def _builtin_sha256() -> Callable[[bytes], Any]:
    for name in ("_sha256", "_sha2"):  # CPython's own module (Python <= 3.11, >= 3.12)
        try:
            found: Callable[[bytes], Any] = __import__(name).sha256
            return found
        except (ImportError, AttributeError):
            continue
    import hashlib

    return hashlib.sha256


def _sha256() -> Callable[[bytes], Any]:
    """SHA-256: ``hashlib``'s (OpenSSL, fast on megabytes) once someone imported it, else CPython's
    built-in one, whose import is free: the no-op path reads one small record and never loads OpenSSL."""
    hashlib = sys.modules.get("hashlib")
    return hashlib.sha256 if hashlib is not None else _builtin_sha256()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex: the one content digest of every cache and record."""
    return str(_sha256()(data).hexdigest())


def file_sha256(path: str | os.PathLike[str]) -> str | None:
    """The SHA-256 of a file's content, in hex; ``None`` when it cannot be read."""
    h = _sha256()(b"")
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return str(h.hexdigest())


def stat_signature(path: str | os.PathLike[str]) -> str:
    """What changes when a file is edited, replaced or removed: size, mtime, ctime, inode ("-" when missing)."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def dumps(kind: str, payload: JSON) -> bytes:
    """The bytes of a state file of ``kind`` holding ``payload`` (deterministic)."""
    if not kind.isidentifier():
        raise ValueError(f"store kind must be an identifier: {kind!r}")
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    data = body.encode("utf-8", "surrogateescape")
    header = b" ".join((_MAGIC, _VERSION, kind.encode("ascii"), sha256_hex(data).encode("ascii")))
    return header + b"\n" + data


def loads(data: bytes, kind: str) -> JSON:
    """The payload of ``data`` if it is an intact state file of ``kind``; else ``None``.

    ``None`` is also a valid payload: store a container when that must be told apart.
    """
    head, sep, body = data.partition(b"\n")
    if not sep:
        return None
    parts = head.split(b" ")
    if parts[:3] != [_MAGIC, _VERSION, kind.encode("ascii", "replace")] or len(parts) != 4:
        return None
    if sha256_hex(body).encode("ascii") != parts[3]:
        return None
    try:
        value: JSON = json.loads(body.decode("utf-8", "surrogateescape"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value


def read(path: str | os.PathLike[str], kind: str) -> JSON:
    """The payload of the state file at ``path``; ``None`` when missing, unreadable or not intact."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_STATE_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_STATE_BYTES else loads(data, kind)


def write(path: str | os.PathLike[str], kind: str, payload: JSON) -> bool:
    """Write ``payload`` as a state file of ``kind`` (atomic, only when changed); True when written."""
    from pathlib import Path

    from .write import write_atomic_bytes

    return write_atomic_bytes(Path(path), dumps(kind, payload))


# -- typed readers: each returns the value it promises or raises Malformed -------------


class Malformed(Exception):
    """A state file's payload does not have the shape its decoder expects."""


def obj(value: JSON, keys: tuple[str, ...]) -> dict[str, JSON]:
    """A JSON object with exactly ``keys``."""
    if not isinstance(value, dict) or len(value) != len(keys) or any(k not in value for k in keys):
        raise Malformed("object")
    return value


def text(value: JSON) -> str:
    if not isinstance(value, str):
        raise Malformed("text")
    return value


def maybe_text(value: JSON) -> str | None:
    return None if value is None else text(value)


def integer(value: JSON, low: int = 0, high: int = 2**63) -> int:
    """An int (not a bool) in ``[low, high)``."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value < high:
        raise Malformed("integer")
    return value


def flag(value: JSON) -> bool:
    if not isinstance(value, bool):
        raise Malformed("flag")
    return value


def items(value: JSON) -> list[JSON]:
    if not isinstance(value, list):
        raise Malformed("list")
    return value


def texts(value: JSON) -> tuple[str, ...]:
    """A list of strings (checked at C speed: the cache holds tens of thousands)."""
    if type(value) is not list or not set(map(type, value)) <= {str}:
        raise Malformed("texts")
    return cast("tuple[str, ...]", tuple(value))


def text_lists(value: JSON) -> tuple[tuple[str, ...], ...]:
    return tuple(map(texts, items(value)))


def _ints(values: list[Any], low: int, high: int) -> tuple[int, ...]:
    if not set(map(type, values)) <= {int} or (values and not (low <= min(values) and max(values) < high)):
        raise Malformed("integers")
    return tuple(values)


def integers(value: JSON, low: int = 0, high: int = 2**63) -> tuple[int, ...]:
    """A list of ints (no bools) in ``[low, high)``."""
    if type(value) is not list:
        raise Malformed("integers")
    return _ints(value, low, high)


def maybe_integers(value: JSON, low: int = 0, high: int = 2**63) -> tuple[int | None, ...]:
    """A list of ints in ``[low, high)`` and nulls."""
    values = items(value)
    _ints([v for v in values if v is not None], low, high)
    return tuple(v if isinstance(v, int) else None for v in values)


def pair(value: JSON) -> tuple[JSON, JSON]:
    got = items(value)
    if len(got) != 2:
        raise Malformed("pair")
    return got[0], got[1]
