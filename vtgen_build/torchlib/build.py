"""Compile translation units and link them into a shared library, through the compiled-artifact cache.

An object is an entry of ``compile.artifacts`` keyed by its one rule (``artifact_key``: the
compiler's identity, the flags, the target release and the source text, and the torch version); it holds every
header the compiler read (``-MD``: the user's headers whatever flag found them,
torch's own) and the object's SHA-256.  A library is an entry keyed by the SHA-256
of its objects, the link flags and the exported names.  Both are verified by
content before use: a truncated, replaced or planted object or library is rebuilt,
never linked or loaded.  A rerun with nothing changed compiles nothing; one changed
unit recompiles only itself.  Compiles run in parallel through ``compile.jobs``
(Ctrl-C stops every compiler).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..base import store
from ..base.errors import VtgenError
from ..base.write import write_atomic
from ..compile import (
    ArtifactCache,
    Compiler,
    FileDigests,
    PchBuilder,
    Processes,
    artifact_key,
    launcher_env,
    read_depfile,
    remove_legacy,
    run_parallel,
    shard_prefix,
)
from .locate import TorchInstall

__all__ = ["CACHE", "BuildSettings", "CompiledUnit", "Session", "compile_objects", "link_library"]

CACHE = "cache"  # <cache_dir>/cache: the compiled-artifact cache of objects and libraries

# Position independent, nothing exported unless marked, one section per function and datum
# (so that the linker can drop the code of ops left out of a library).
_CODE_FLAGS = (
    "-fPIC",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-ffunction-sections",
    "-fdata-sections",
    "-O0",
    "-g0",
    "-w",
)


@dataclass(frozen=True)
class BuildSettings:
    compiler: Compiler
    torch: TorchInstall
    cache_dir: Path
    std: str = "c++17"
    extra_flags: tuple[str, ...] = ()  # include directories (-I/-isystem) searched before torch's
    jobs: int = 0  # 0: one per core
    launcher: tuple[str, ...] = ()  # e.g. ("ccache",): runs each compile, never part of a key
    use_cache: bool = True  # False: compile and link everything again (the results are still recorded)
    release: str = ""  # the PyTorch release the generated code targets
    use_pch: bool = True  # False: the units ``compile_objects`` is asked to precompile get no precompiled header

    def flags(self) -> list[str]:
        return [
            f"-std={self.std}",
            *_CODE_FLAGS,
            *self.extra_flags,
            *self.torch.compile_flags(),
        ]

    def key(self, kind: str, flags: Sequence[str], text: str, parts: Sequence[str] = ()) -> str:
        """``compile.artifact_key``, the one key rule, with the version of the torch built against."""
        return artifact_key(kind, self.compiler.identity, flags, self.release, text, [self.torch.version, *parts])


@dataclass
class Session:
    """One build's cache, file digests, compiler processes and precompiled headers (shared by its
    compiles and links).  The precompiled headers are ``settings``' (``compile.PchBuilder``: keyed and
    verified like every artifact): a unit compiled with other settings gets none."""

    cache: ArtifactCache
    files: FileDigests = field(default_factory=FileDigests)
    processes: Processes = field(default_factory=Processes)
    pch: PchBuilder | None = None  # None: no precompiled headers (``open`` gives one)
    said: set[str] = field(default_factory=set)  # the notes printed (each once per run)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, settings: BuildSettings) -> Session:
        remove_legacy(settings.cache_dir, ("objects", "lib"))  # the caches of earlier versions
        cache = ArtifactCache.open(settings.cache_dir / CACHE)
        if cache.damaged:
            print(f"vtgen-build: note: the build cache's index ({cache.root}) was damaged or old: "
                  "every unit compiles again", file=sys.stderr)  # fmt: skip
        session = cls(cache, cache.digests())
        env = launcher_env(settings.launcher)
        flags = tuple(settings.flags())
        session.pch = PchBuilder(
            settings.compiler, flags, settings.release, cache, session.files, session.processes, env
        )
        return session

    def note(self, text: str) -> None:
        """One line on stderr about a slower path taken, once per run (its units compile in threads)."""
        with self.lock:
            if text in self.said:
                return
            self.said.add(text)
        print(f"vtgen-build: note: {text}", file=sys.stderr)


@dataclass(frozen=True)
class CompiledUnit:
    name: str
    object: Path | None  # None: it failed to compile
    digest: str  # the object's SHA-256 (verified)
    compiled: bool  # False: reused from the cache
    seconds: float
    diagnostics: str


def _source(settings: BuildSettings, name: str, text: str) -> Path:
    source = settings.cache_dir / "sources" / f"{name}.cpp"
    source.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_file() or source.read_text(encoding="utf-8") != text:
        write_atomic(source, text)
    return source


def _precompiled(session: Session, prefix: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the flags a unit adds to use the precompiled header of ``prefix``, the headers inside it); ((), ())
    when the prefix does not precompile (the unit then compiles without one and shows any error itself)."""
    pch = session.pch.get(prefix) if prefix and session.pch is not None else None
    if prefix and pch is None:
        session.note("the shared includes did not precompile: units compile without them (slower)")
    return (pch.flags, pch.deps) if pch is not None else ((), ())


def _compile_one(
    settings: BuildSettings, session: Session, name: str, text: str, prefix: tuple[str, ...] = ()
) -> CompiledUnit:
    """One object compiled now (``compile_objects`` looked in the cache first), with ``prefix``'s
    precompiled header when given and it precompiles."""
    start = time.perf_counter()
    pch_flags, pch_deps = _precompiled(session, prefix)
    flags = [*pch_flags, *settings.flags()]
    key = settings.key("object", flags, text)
    source = _source(settings, name, text)
    obj = session.cache.place(key, "unit.o")
    partial = obj.with_name(f".unit.{os.getpid()}.{threading.get_ident()}.tmp.o")
    depfile = partial.with_suffix(".d")
    command = [*settings.launcher, settings.compiler.path, *flags, "-MD", "-MF", str(depfile)]
    try:
        code, output = session.processes.run(
            [*command, "-c", str(source), "-o", str(partial)], launcher_env(settings.launcher)
        )
        deps = read_depfile(depfile) if code == 0 else None
        if code == 0 and deps is None:  # what it read is unknown: used, never cached (compile.read_depfile)
            kept = settings.cache_dir / "uncached" / f"{name}.o"
            kept.parent.mkdir(parents=True, exist_ok=True)
            os.replace(partial, kept)
        elif code == 0:
            os.replace(partial, obj)
    finally:
        partial.unlink(missing_ok=True)
        depfile.unlink(missing_ok=True)
    seconds = time.perf_counter() - start
    if code != 0:
        session.cache.forget(key)
        return CompiledUnit(name, None, "", True, seconds, output)
    if deps is None:
        session.cache.forget(key)
        print(f"vtgen-build: note: {name}: the compiler wrote no depfile, so the unit is not cached", file=sys.stderr)
        digest = store.file_sha256(kept)
        return CompiledUnit(name, kept if digest else None, digest or "", True, seconds, output)
    read = [*(d for d in deps if d != str(source)), *pch_deps]
    recorded = session.cache.record(key, read, session.files, obj)
    if recorded is None or recorded.sha256 is None:
        return CompiledUnit(name, None, "", True, seconds, f"{output}\nerror: a file {name} read vanished")
    return CompiledUnit(name, obj, recorded.sha256, True, seconds, output)


def compile_objects(
    settings: BuildSettings,
    units: Sequence[tuple[str, str]],
    own_settings: Mapping[str, BuildSettings] | None = None,
    session: Session | None = None,
    precompile: Collection[str] = (),
) -> list[CompiledUnit]:
    """Compile each ``(name, source text)`` to an object (or take it from the cache), in parallel.

    A unit named in ``own_settings`` is compiled with those settings instead (other flags).  A unit
    named in ``precompile`` (one cut from a generated shard) may use a precompiled header of its shared
    include prefix (``compile.shard_prefix``; ``_precompile_plan`` says when).
    """
    session = session or Session.open(settings)
    own = own_settings or {}
    found: dict[str, CompiledUnit] = {}
    todo: list[tuple[str, str, tuple[str, ...]]] = []
    for name, text in units:
        wanted = settings.use_pch and session.pch is not None and name in precompile and name not in own
        prefix = shard_prefix(text) if wanted else ()
        hit = _cached(own.get(name, settings), session, name, text, prefix)
        if hit is not None:
            found[name] = hit
        else:
            todo.append((name, text, prefix))
    used, ahead = _precompile_plan(settings, session, [p for _, _, p in todo if p])
    tasks: list[tuple[str, str, tuple[str, ...]] | tuple[str, None, tuple[str, ...]]] = [
        *sorted(((n, t, p if p in used else ()) for n, t, p in todo), key=lambda u: (u[0] not in own, -len(u[1]))),
        *(("", None, p) for p in ahead),  # built beside the one unit that needs it now: for the next edit
    ]  # own: a whole other file, first; then the biggest

    def run(task: tuple[str, str | None, tuple[str, ...]]) -> CompiledUnit | None:
        name, text, prefix = task
        if text is None:  # built ahead of the next edit (one that does not precompile: its units go without)
            if session.pch is not None:
                session.pch.get(prefix)
            return None
        return _compile_one(own.get(name, settings), session, name, text, prefix)

    try:
        done = run_parallel(tasks, run, settings.jobs, session.processes)
    finally:
        session.cache.save()
    found.update((r.name, r) for r in done if r is not None)
    return [found[name] for name, _ in units]


def _cached(
    settings: BuildSettings, session: Session, name: str, text: str, prefix: tuple[str, ...]
) -> CompiledUnit | None:
    """The object of ``text`` in the cache, compiled with ``prefix``'s precompiled header or without one."""
    if not settings.use_cache:
        return None
    with_pch = [*session.pch.paths(prefix)[2], *settings.flags()] if prefix and session.pch is not None else None
    for flags in (with_pch, settings.flags()):
        if flags is None:
            continue
        hit = session.cache.lookup(settings.key("object", flags, text), session.files)
        if hit is not None and hit.path is not None and hit.sha256 is not None:
            return CompiledUnit(name, hit.path, hit.sha256, False, 0.0, "")
    return None


def _precompile_plan(
    settings: BuildSettings, session: Session, prefixes: Sequence[tuple[str, ...]]
) -> tuple[set[tuple[str, ...]], list[tuple[str, ...]]]:
    """(the prefixes whose units use a precompiled header now, those to precompile beside their one unit).

    A precompiled header pays when it exists, or when two units or more need it now (it costs about
    what one unit's includes cost).  One unit alone compiles without it: a cold one-op run costs no
    more than without precompiled headers; but when a unit of that prefix was compiled before (an
    edit), the header is built beside it, on the other core, for the edits that follow.
    """
    counts: dict[tuple[str, ...], int] = {}
    for p in prefixes:
        counts[p] = counts.get(p, 0) + 1
    used: set[tuple[str, ...]] = set()
    ahead: list[tuple[str, ...]] = []
    for prefix, count in counts.items():
        seen_key = settings.key("pch-wanted", settings.flags(), "\n".join(prefix))
        seen = session.cache.lookup(seen_key, session.files) is not None
        if count >= 2 or (session.pch is not None and session.pch.ready(prefix)):
            used.add(prefix)
        elif seen:
            ahead.append(prefix)
        session.cache.record(seen_key, [], session.files)
    return used, ahead


def link_library(
    settings: BuildSettings,
    objects: Sequence[CompiledUnit],
    exported: Sequence[str],
    name: str,
    session: Session | None = None,
) -> tuple[Path, bool]:
    """Link ``objects`` into ``lib<name>.so`` exporting only ``exported``; (path, linked now?).

    ``-Bsymbolic`` and a version script keep every symbol of ours (our Node classes share
    libtorch's names) bound inside the library; ``--gc-sections`` drops code nothing
    registered reaches.
    """
    session = session or Session.open(settings)
    script = "{\n  global:\n" + "".join(f"    {s};\n" for s in exported) + "  local: *;\n};\n"
    flags = ["-shared", "-Wl,-Bsymbolic", "-Wl,--gc-sections", "-Wl,--as-needed", *settings.torch.link_flags()]
    missing = [u.name for u in objects if u.object is None]
    if missing:
        raise VtgenError(f"cannot link {name}: {', '.join(missing)} did not compile")
    key = settings.key("library", flags, script, [u.digest for u in objects])
    found = session.cache.lookup(key, session.files) if settings.use_cache else None
    if found is not None and found.path is not None:
        return found.path, False
    lib = session.cache.place(key, f"lib{name}.so")
    version_script = lib.with_name("exports.map")
    write_atomic(version_script, script)
    partial = lib.with_name(f".{lib.name}.{os.getpid()}.tmp")
    objs = [str(u.object) for u in objects]
    command = [settings.compiler.path, *flags[:4], f"-Wl,--version-script={version_script}", *objs, "-o", str(partial)]
    try:
        code, output = session.processes.run([*command, *flags[4:]])
        if code == 0:
            os.replace(partial, lib)
    finally:
        partial.unlink(missing_ok=True)
    if code != 0:
        session.cache.forget(key)
        raise VtgenError(f"linking {lib.name} failed:\n{output.strip()[:4000]}")
    if session.cache.record(key, [], session.files, lib) is None:
        raise VtgenError(f"linking {lib.name}: the library vanished once linked")
    return lib, True
