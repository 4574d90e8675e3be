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
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import VtgenError

__all__ = [
    "FaultHook",
    "WriteResult",
    "fault_point",
    "install_fault_hook",
    "is_output_name",
    "locked",
    "remove_outputs",
    "remove_stale_temporaries",
    "temporary_name",
    "write_atomic",
    "write_atomic_bytes",
    "write_outputs",
]

# What the generator writes: C++ sources and headers in the output directory or one
# plain subdirectory of it (``vtgen_decls/``).  Nothing else is ever removed.
_OUTPUT_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_]*/)?[A-Za-z][A-Za-z0-9_]*\.(?:cpp|h|inc)")
_TEMPORARY = re.compile(r"\..+\.vtgen\.tmp")


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
    tmp = str(path.parent / temporary_name(path.name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
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


def temporary_name(name: str) -> str:
    """A temporary's name, unique to this process and call: no two writers ever share one."""
    return f".{name}.{os.getpid()}.{os.urandom(4).hex()}.vtgen.tmp"


FaultHook = Callable[[str], None]
_FAULT_HOOKS: list[FaultHook] = []  # empty in production; a test harness installs one (tests/faulty.py)


def fault_point(where: str) -> None:
    """A named point of the write path (``write``, ``written``, ``outputs written``, ``cache written``,
    ``check generated``) where an installed hook may stop or kill the process; nothing otherwise.
    Nothing here reads the environment: a harness running the CLI injects its hook first."""
    for hook in _FAULT_HOOKS:
        hook(where)


def install_fault_hook(hook: FaultHook) -> None:
    """Call ``hook`` at every fault point of this process (a test harness driving a crash or a race)."""
    _FAULT_HOOKS.append(hook)


def is_output_name(rel: str) -> bool:
    """Could the generator have written ``rel`` (a path relative to the output directory)?"""
    return _OUTPUT_NAME.fullmatch(rel) is not None


def _inside(out_dir: Path, rel: str) -> bool:
    """Is ``out_dir/rel`` a generator's output name whose directory is really ``out_dir`` (or a plain
    subdirectory of it, not a symbolic link elsewhere)?"""
    if not is_output_name(rel):
        return False
    path = out_dir / rel
    if rel.count("/") and os.path.islink(path.parent):
        return False
    real_out = os.path.realpath(out_dir)
    return os.path.realpath(path.parent) in (real_out, os.path.join(real_out, rel.partition("/")[0]))


def remove_outputs(out_dir: Path, rels: Iterable[str]) -> tuple[str, ...]:
    """Remove the files ``rels`` that the generator could have written inside ``out_dir``; the ones removed."""
    removed = []
    for rel in sorted(rels):
        if _inside(out_dir, rel):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                (out_dir / rel).unlink()
                removed.append(rel)
    return tuple(removed)


def remove_stale_temporaries(out_dir: Path) -> None:
    """Temporary files a killed run left behind in ``out_dir`` and its plain subdirectories (never
    through a symbolic link): ``write_atomic``'s ``.<name>.<pid>.<random>.vtgen.tmp``, ``engine/noop``'s
    ``.vtgen-quick.<pid>.tmp``."""
    folders = [out_dir]
    with contextlib.suppress(OSError), os.scandir(out_dir) as entries:
        folders += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for e in entries:
                if (_TEMPORARY.fullmatch(e.name) or e.name.startswith(".vtgen-quick.")) and e.name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)


def write_outputs(out_dir: Path, files: dict[str, str], owned: set[str]) -> WriteResult:
    """Write ``files`` under ``out_dir``; remove files we wrote before (``owned``) that are gone now."""
    written: list[str] = []
    unchanged: list[str] = []
    for rel in sorted(files):
        (written if write_atomic(out_dir / rel, files[rel]) else unchanged).append(rel)
    removed = remove_outputs(out_dir, owned - set(files))
    return WriteResult(tuple(written), tuple(unchanged), removed)


@contextlib.contextmanager
def locked(out_dir: Path, name: str = ".vtgen.lock") -> Iterator[None]:
    """Hold an exclusive lock on ``out_dir`` (waits for another run to finish); ``name``: the lock file
    (``check`` holds its own lock around generating and compiling, and the generator's inside it)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        handle = open(out_dir / name, "a+b")  # noqa: SIM115 - held for the with-block
    except OSError as exc:
        raise VtgenError(f"cannot use output directory {out_dir}: {exc}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
