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
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import VtgenError

__all__ = ["WriteResult", "fault_point", "locked", "write_atomic", "write_atomic_bytes", "write_outputs"]


@dataclass(frozen=True)
class WriteResult:
    written: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[str, ...]


def write_atomic(path: Path, content: str) -> bool:
    """Write ``content`` to ``path`` unless it already holds it; True when written."""
    return write_atomic_bytes(path, content.encode("utf-8"))


def write_atomic_bytes(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it already holds it: a temporary file, then ``os.replace``.

    A run killed at any moment leaves ``path`` with its old or its new content,
    never a mix.  Files are not fsync'ed one by one (that cost seconds for 700
    files): the rename is atomic for every reader and for a killed process; after
    a power loss the next run finds the manifest stale or the inputs newer and
    regenerates.
    """
    try:
        return _write_if_changed(path, data)
    except OSError as exc:
        raise VtgenError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except (FileNotFoundError, NotADirectoryError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fixed temporary name is safe: runs on one directory are serialised by the lock.
    tmp = str(path.parent / f".{path.name}.vtgen.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        fault_point("write")
        os.replace(tmp, path)
        fault_point("written")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def fault_point(where: str) -> None:
    """Test hook: with ``VTGEN_TEST_KILL_AFTER=N`` the process SIGKILLs itself at the N-th point."""
    global _points
    if _kill_after is None:
        return
    _points += 1
    if _points >= _kill_after:
        os.kill(os.getpid(), signal.SIGKILL)


_points = 0
_kill_after = int(os.environ["VTGEN_TEST_KILL_AFTER"]) if os.environ.get("VTGEN_TEST_KILL_AFTER") else None


def write_outputs(out_dir: Path, files: dict[str, str], owned: set[str]) -> WriteResult:
    """Write ``files`` under ``out_dir``; remove files we wrote before (``owned``) that are gone now."""
    written: list[str] = []
    unchanged: list[str] = []
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
