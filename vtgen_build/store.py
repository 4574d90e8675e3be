"""Data-only, integrity-checked state files: the one format every cache and record uses.

A state file lives in a build directory that CI systems save and restore between
branches, so whatever it holds is untrusted.  Reading one therefore never runs code
(plain JSON, no pickle) and checks the content hash before the payload is used:

    vtgen-store 1 <kind> <sha256 of body>\\n
    <body: canonical JSON, sorted keys, no blanks>

Anything that does not match, a torn write, a flipped byte, another kind or version,
reads as ``None``: the caller treats it as "no cache" and redoes the work.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TypeAlias

from .write import write_atomic_bytes

__all__ = ["JSON", "MAX_STATE_BYTES", "dumps", "loads", "read", "write"]

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"

_MAGIC = b"vtgen-store"
_VERSION = b"1"
MAX_STATE_BYTES = 256 * 1024 * 1024  # a state file larger than this is not ours


def dumps(kind: str, payload: JSON) -> bytes:
    """The bytes of a state file of ``kind`` holding ``payload`` (deterministic)."""
    if not kind.isidentifier():
        raise ValueError(f"store kind must be an identifier: {kind!r}")
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    data = body.encode("utf-8")
    header = b" ".join((_MAGIC, _VERSION, kind.encode("ascii"), hashlib.sha256(data).hexdigest().encode("ascii")))
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
    if hashlib.sha256(body).hexdigest().encode("ascii") != parts[3]:
        return None
    try:
        value: JSON = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value


def read(path: Path, kind: str) -> JSON:
    """The payload of the state file at ``path``; ``None`` when missing, unreadable or not intact."""
    try:
        if path.stat().st_size > MAX_STATE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return loads(data, kind)


def write(path: Path, kind: str, payload: JSON) -> bool:
    """Write ``payload`` as a state file of ``kind`` (atomic, only when changed); True when written."""
    return write_atomic_bytes(path, dumps(kind, payload))
