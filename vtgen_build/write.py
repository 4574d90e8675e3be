"""The write layer: the only code that touches the output directory.

Every file is written atomically (a temporary file in the same directory, then
``os.replace``) and only when its content changed, so an unchanged file keeps
its mtime and build tools see nothing to redo.  A lock file serialises two runs
on one directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import VtgenError

__all__ = ["WriteResult", "locked", "write_atomic", "write_outputs"]


@dataclass(frozen=True)
class WriteResult:
    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[str, ...]


def write_atomic(path: Path, content: str) -> bool:
    """Write ``content`` to ``path`` unless it already holds it; True when written."""
    data = content.encode("utf-8")
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def write_outputs(out_dir: Path, files: dict[str, str], owned: set[str]) -> WriteResult:
    """Write ``files`` under ``out_dir``; remove files we wrote before (``owned``) that are gone now."""
    written, unchanged = [], []
    for rel in sorted(files):
        (written if write_atomic(out_dir / rel, files[rel]) else unchanged).append(rel)
    removed = sorted(owned - set(files))
    for rel in removed:
        with contextlib.suppress(FileNotFoundError):
            (out_dir / rel).unlink()
    return WriteResult(tuple(written), tuple(unchanged), tuple(removed))


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` (waits for another run to finish)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        handle = open(out_dir / ".vtgen.lock", "a+b")  # noqa: SIM115 - held for the with-block
    except OSError as exc:
        raise VtgenError(f"cannot use output directory {out_dir}: {exc}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
