"""Which C++ compiler runs, and what identifies it for the caches.

An explicit choice (``--cxx``, or ``$CXX``) that cannot run is an error: silently
compiling with another compiler would prove the wrong thing.  Only when neither is
given are ``g++``, ``clang++`` and ``c++`` tried on ``PATH``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError

__all__ = ["Compiler", "find_compiler", "identify"]

_SMALL = 4 * 1024 * 1024  # a wrapper script (or a small driver): its content is part of the identity


@dataclass(frozen=True)
class Compiler:
    """A compiler found on this machine."""

    path: str  # as run (found on PATH, not resolved: a wrapper script stays the wrapper)
    kind: str  # "gcc" or "clang": how precompiled headers are spelled
    version: str  # first line of ``--version``
    identity: str  # sha256 of path, ``--version`` output, mtime, size (and content when small)


def _resolve(candidate: str, what: str) -> str:
    found = shutil.which(candidate)
    if found is None:
        why = "not found" if not os.path.exists(candidate) else "not an executable file"
        raise VtgenError(f"{what}: {why} (give a compiler that runs, e.g. --cxx g++)")
    return found


def find_compiler(cxx: str | None = None) -> str:
    """The compiler to run: ``cxx``, else ``$CXX``, else g++/clang++/c++ on PATH.

    An explicit ``cxx`` or a non-empty ``$CXX`` that is missing or not executable is an error.
    """
    if cxx:
        return _resolve(cxx, f"--cxx {cxx}")
    env = os.environ.get("CXX")
    if env:
        return _resolve(env, f"CXX={env}")
    for candidate in ("g++", "clang++", "c++"):
        found = shutil.which(candidate)
        if found:
            return found
    raise VtgenError("no C++ compiler: give --cxx, set CXX, or put g++ or clang++ on PATH")


def identify(path: str) -> Compiler:
    """Run ``path --version``: a compiler that does not answer is an error."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VtgenError(f"compiler {path} cannot run: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise VtgenError(f"compiler {path} cannot run: `--version` exited {done.returncode}: {tail[0]}")
    text = done.stdout
    kind = "clang" if "clang" in text.lower() else "gcc"
    h = hashlib.sha256(f"{path}\0{os.path.realpath(path)}\0{text}".encode())
    st = Path(path).stat()
    h.update(f"\0{st.st_mtime_ns}\0{st.st_size}".encode())
    if st.st_size <= _SMALL:
        h.update(Path(path).read_bytes())
    first = text.strip().splitlines()[0] if text.strip() else path
    return Compiler(path, kind, first, h.hexdigest())
