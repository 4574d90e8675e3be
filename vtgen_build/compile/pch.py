"""Precompiled headers: the include prefix every unit of a kind shares, compiled once.

The prefix of a unit is its leading block of ``#include`` lines up to the first
header of its own shard (``Functions_<k>.h``): for kernels the ATen / autograd
headers, for Nodes the manual header and ``FunctionsBase.h``.  Units keep their own
``#include`` lines (include guards make them free), so the precompiled header only
ever replaces a prefix the unit starts with: it cannot hide a missing include.

A precompiled header is an entry of the compiled-artifact cache (``artifacts.py``):
keyed by the compiler's identity, the flags, the target release and the prefix
(``artifact_key``), verified before each use by the content of every header it read and of
the ``.gch``/``.pch`` itself, so a
truncated, replaced or stale one (a header edited keeping its size and mtime) is
rebuilt, never used.  It is written under a temporary name, then renamed.  A prefix
that does not compile gets no precompiled header: its units are compiled without one
and report the error themselves.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..emit.output_index import is_node_header
from .artifacts import ArtifactCache, FileDigests, artifact_key, read_depfile
from .compiler import Compiler
from .jobs import Processes

__all__ = ["Pch", "PchBuilder", "build_flags", "prefix_of", "shard_prefix"]

_INCLUDE = re.compile(r'^#include\s*(<[^>]+>|"[^"]+")\s*$')
_CLANG_MAJOR = re.compile(r"clang version (\d+)\.")


def build_flags(compiler: Compiler) -> tuple[str, ...]:
    """What building a precompiled header adds to the units' flags.

    clang++ 11 or later: ``-fpch-instantiate-templates``, the templates the headers' inline code uses
    instantiated once in the header, not again at the end of every unit (torch's headers leave about
    3 CPU seconds of them: most of what a one-op unit costs besides its own code).  g++ has no such
    option: it instantiates them in every unit.
    """
    found = _CLANG_MAJOR.search(compiler.version) if compiler.kind == "clang" else None
    return ("-fpch-instantiate-templates",) if found and int(found.group(1)) >= 11 else ()


def prefix_of(text: str, own: Callable[[str], bool]) -> tuple[str, ...]:
    """The leading ``#include`` lines of a unit, up to the first one ``own`` says is the unit's own."""
    found: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped.startswith("//") or stripped.startswith("#line "):
            continue
        m = _INCLUDE.match(stripped)
        if m is None or own(m.group(1)[1:-1]):
            break
        if stripped not in found:
            found.append(stripped)
    return tuple(found)


def shard_prefix(text: str) -> tuple[str, ...]:
    """The shared include prefix of a generated shard, or of a unit cut from one (``compile.partial``)."""
    return prefix_of(text, is_node_header)  # a shard's own Node header ends the shared prefix


@dataclass(frozen=True)
class Pch:
    key: str
    flags: tuple[str, ...]  # what a unit's command line adds, first
    deps: tuple[str, ...]  # the headers inside it (a unit's depfile lists none of them)


@dataclass
class PchBuilder:
    """Builds (or finds) the precompiled header of each prefix once per run, thread-safely."""

    compiler: Compiler
    flags: tuple[str, ...]  # -std, warnings, include flags: exactly what units get
    release: str  # the target PyTorch release: part of every artifact's key
    cache: ArtifactCache
    files: FileDigests
    processes: Processes
    env: dict[str, str] | None = None
    built: dict[tuple[str, ...], Pch | None] = field(default_factory=dict)
    locks: dict[tuple[str, ...], threading.Lock] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def key(self, prefix: tuple[str, ...]) -> str:
        flags = (*self.flags, *build_flags(self.compiler))
        return artifact_key("pch", self.compiler.identity, flags, self.release, "\n".join(prefix))

    def paths(self, prefix: tuple[str, ...]) -> tuple[Path, Path, tuple[str, ...]]:
        """The prefix header, the precompiled file and the flags a unit adds to use them."""
        where = self.cache.root / self.key(prefix)
        header = where / "prefix.h"
        if self.compiler.kind == "clang":
            output = where / "prefix.h.pch"
            return header, output, ("-include-pch", str(output))
        output = where / "prefix.h.gch"  # found by g++ next to the header -include names
        return header, output, ("-include", str(header), "-Winvalid-pch", "-Wno-error=invalid-pch")

    def get(self, prefix: tuple[str, ...]) -> Pch | None:
        if not prefix:
            return None
        with self.lock:
            if prefix in self.built:
                return self.built[prefix]
            lock = self.locks.setdefault(prefix, threading.Lock())
        with lock:
            with self.lock:
                if prefix in self.built:
                    return self.built[prefix]
            pch = self._current(prefix) or self._build(prefix)
            with self.lock:
                self.built[prefix] = pch
            return pch

    def ready(self, prefix: tuple[str, ...]) -> bool:
        """Whether the precompiled header of ``prefix`` is built and current (nothing is built here)."""
        with self.lock:
            if self.built.get(prefix) is not None:
                return True
        return self._current(prefix) is not None

    def _current(self, prefix: tuple[str, ...]) -> Pch | None:
        _, output, flags = self.paths(prefix)
        found = self.cache.lookup(self.key(prefix), self.files)
        if found is None or found.path != output:
            return None
        return Pch(self.key(prefix), flags, found.deps)

    def _build(self, prefix: tuple[str, ...]) -> Pch | None:
        key = self.key(prefix)
        header, output, flags = self.paths(prefix)
        self.cache.forget(key)
        self.cache.place(key, output.name)
        text = "// Generated by vtgen-build check: the includes its units share, precompiled.\n"
        header.write_text(text + "\n".join(prefix) + "\n", encoding="utf-8")
        tmp = output.with_name(f".{output.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        depfile = tmp.with_suffix(".d")
        argv = [self.compiler.path, "-x", "c++-header", *self.flags, *build_flags(self.compiler), str(header)]
        argv += ["-o", str(tmp)]
        try:
            code, _ = self.processes.run([*argv, "-MD", "-MF", str(depfile)], self.env)
            deps = read_depfile(depfile) if code == 0 else None
            if deps is None:  # failed, or what it read is unknown: a precompiled header is only used cached
                return None
            os.replace(tmp, output)
        except OSError:
            return None
        finally:
            tmp.unlink(missing_ok=True)
            depfile.unlink(missing_ok=True)
        if self.cache.record(key, [*deps, str(header)], self.files, output) is None:
            return None
        return Pch(key, flags, tuple(sorted({*deps, str(header)})))
