"""Compiling translation units: command lines, the compiled-artifact cache, precompiled headers, in parallel."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .artifacts import ArtifactCache, FileDigests, artifact_key, read_depfile, remove_legacy
from .compiler import Compiler
from .compiler_output import Locator, read_diagnostics
from .jobs import Processes, Reporter, UnitResult, run_parallel
from .pch import PchBuilder

__all__ = ["CACHE", "WARNINGS", "Settings", "Unit", "compile_units", "launcher_env", "launcher_output"]

CACHE = "cache"  # <work>/cache: the compiled-artifact cache of a check directory

# Warnings are errors in generated code.  Two are off: a Node's apply never reads `grads` when
# no formula uses it, and forward-AD code unpacks every tangent and primal whether the formula
# reads it or not (PyTorch's own generated code does both too).
WARNINGS = ("-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-unused-but-set-variable")
# ccache refuses a precompiled header unless told the compiler's macros and timestamps may be trusted
_CCACHE_SLOPPINESS = "pch_defines,time_macros,include_file_mtime,include_file_ctime"


@dataclass(frozen=True)
class Settings:
    compiler: Compiler
    std: str
    include_flags: tuple[str, ...]
    work: Path  # where the compiled-artifact cache (results, precompiled headers) and depfiles live
    launcher: tuple[str, ...] = ()  # e.g. ("ccache",): runs each compile, never the cache keys
    jobs: int = 0  # 0: one per core
    use_cache: bool = True  # False: compile every unit (results are still recorded)
    use_pch: bool = True
    progress: bool = False
    release: str = ""  # the target PyTorch release (part of every cache key)

    @property
    def flags(self) -> tuple[str, ...]:
        """Everything a unit's command line holds but the source, its depfile and the PCH."""
        return (f"-std={self.std}", *WARNINGS, "-fdiagnostics-color=never", *self.include_flags)


@dataclass(frozen=True)
class Unit:
    source: Path
    prefix: tuple[str, ...] = ()  # its leading shared #include lines (the precompiled header's text)


def launcher_env(launcher: tuple[str, ...]) -> dict[str, str] | None:
    """The environment of launched compiles: ccache is told to accept our precompiled headers."""
    if not launcher or os.path.basename(launcher[0]) != "ccache":
        return None
    env = dict(os.environ)
    env["CCACHE_SLOPPINESS"] = ",".join(filter(None, (env.get("CCACHE_SLOPPINESS"), _CCACHE_SLOPPINESS)))
    return env


def launcher_output(launcher: tuple[str, ...], obj: Path) -> list[str]:
    """Flags a launcher needs besides the command: distcc sends a compile to a server only when it
    writes an object (``-c -o``), so it is given one (empty: ``-fsyntax-only`` writes nothing)."""
    if not launcher or os.path.basename(launcher[0]) != "distcc":
        return []
    return ["-c", "-o", str(obj)]


@dataclass
class _Run:
    settings: Settings
    locator: Locator
    out: Path
    cache: ArtifactCache
    pch: PchBuilder
    processes: Processes
    reporter: Reporter
    env: dict[str, str] | None
    files: FileDigests

    def argv(self, pch_flags: tuple[str, ...]) -> list[str]:
        return [self.settings.compiler.path, *pch_flags, "-fsyntax-only", *self.settings.flags]

    def key(self, argv: list[str], text: bytes) -> str:
        return artifact_key("check", self.settings.compiler.identity, argv, self.settings.release, text)

    def one(self, unit: Unit) -> UnitResult:
        start = time.perf_counter()
        text = unit.source.read_bytes()
        use_pch = self.settings.use_pch and bool(unit.prefix)
        argv = self.argv(self.pch.paths(unit.prefix)[2] if use_pch else ())
        key = self.key(argv, text)
        if self.settings.use_cache and self.cache.lookup(key, self.files) is not None:
            result = UnitResult(unit.source.name, True, time.perf_counter() - start, "", 0, frozenset(), cached=True)
            self.reporter.finished(result)
            return result
        pch = self.pch.get(unit.prefix) if use_pch else None
        if use_pch and pch is None:  # the prefix does not compile: the unit shows why
            self.reporter.note("the shared includes did not precompile: units compile without the header (slower)")
            argv = self.argv(())
            key = self.key(argv, text)
        depfile = self.settings.work / "deps" / f"{unit.source.name}.{os.getpid()}.{threading.get_ident()}.d"
        depfile.parent.mkdir(parents=True, exist_ok=True)
        obj = depfile.with_suffix(".o")
        try:
            output_flags = launcher_output(self.settings.launcher, obj)
            cmd = [*self.settings.launcher, *argv, *output_flags, "-MD", "-MF", str(depfile), str(unit.source)]
            code, output = self.processes.run(cmd, self.env)
            deps = read_depfile(depfile) if code == 0 else None
        finally:
            depfile.unlink(missing_ok=True)
            obj.unlink(missing_ok=True)
        found = read_diagnostics(output, self.locator, self.out)
        ok = code == 0
        errors = found.errors if ok or found.errors else 1  # a crash, or an error without the word
        if ok and deps is not None:  # no depfile: what it read is unknown, so it is not cached
            self.cache.record(key, [*deps, *(pch.deps if pch else ())], self.files)
        else:
            if ok:
                self.reporter.note(f"{unit.source.name}: the compiler wrote no depfile, so the unit is not cached")
            self.cache.forget(key)
        result = UnitResult(unit.source.name, ok, time.perf_counter() - start, found.text, errors, found.ops)
        self.reporter.finished(result)
        return result


def compile_units(units: list[Unit], settings: Settings, locator: Locator, out: Path) -> list[UnitResult]:
    """Check that each unit compiles (``-fsyntax-only``), biggest first; results in the order given."""
    processes = Processes()
    env = launcher_env(settings.launcher)
    remove_legacy(settings.work, ("results", "pch"))  # the caches of earlier versions
    cache = ArtifactCache.open(settings.work / CACHE)  # --no-cache: no lookups, results still recorded
    files = cache.digests()
    pch = PchBuilder(settings.compiler, settings.flags, settings.release, cache, files, processes, env)
    reporter = Reporter(len(units), settings.progress)
    if cache.damaged:
        reporter.note(f"the compile cache's index ({cache.root}) was damaged or old: every unit compiles again")
    run = _Run(settings, locator, out, cache, pch, processes, reporter, env, files)
    biggest_first = sorted(units, key=lambda u: -u.source.stat().st_size)
    try:
        results = run_parallel(biggest_first, run.one, settings.jobs, processes)
    finally:
        reporter.close()
        cache.save()
    order = {u.source.name: i for i, u in enumerate(units)}
    return sorted(results, key=lambda r: order.get(r.unit, 0))
