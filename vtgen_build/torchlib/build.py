"""Compile translation units and link them into a shared library, cached by content.

An object is found by a digest of its source text, the compiler and the flags; a
record next to it (a data-only state file) lists the local headers the compiler
read (``-MMD``: system headers, torch's among them, are covered by the flags and
the torch version) with their digests.  The object is reused while they all match,
so a rerun with nothing changed compiles nothing and one changed unit recompiles
only itself.  The library is named by the digests of its objects and link flags.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..errors import VtgenError
from ..write import write_atomic
from .locate import TorchInstall

__all__ = ["BuildSettings", "CompiledUnit", "compile_objects", "link_library"]

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
    compiler: str
    torch: TorchInstall
    cache_dir: Path
    std: str = "c++17"
    extra_flags: tuple[str, ...] = ()  # include directories (-I/-isystem) searched before torch's
    jobs: int = 0  # 0: one per core

    def flags(self) -> list[str]:
        return [
            f"-std={self.std}",
            *_CODE_FLAGS,
            *self.extra_flags,
            *self.torch.compile_flags(),
        ]


@dataclass(frozen=True)
class CompiledUnit:
    name: str
    object: Path | None  # None: it failed to compile
    digest: str  # identity of the object (source, flags and headers)
    compiled: bool  # False: reused from the cache
    seconds: float
    diagnostics: str


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: str) -> str | None:
    try:
        return _sha(Path(path).read_bytes())
    except OSError:
        return None


def _read_depfile(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    return [d for d in deps.split() if d]


def _cached(record: Path) -> str | None:
    """The digest of a cached object when every header it read is unchanged."""
    data = store.read(record, "object")
    if not isinstance(data, dict) or not isinstance(data.get("deps"), dict):
        return None
    deps = data["deps"]
    assert isinstance(deps, dict)
    if any(_file_sha(str(p)) != d for p, d in deps.items()):
        return None
    return _sha(json.dumps(deps, sort_keys=True).encode())


def _compile_one(settings: BuildSettings, name: str, text: str) -> CompiledUnit:
    start = time.perf_counter()
    flags = settings.flags()
    key = _sha(json.dumps([settings.compiler, settings.torch.version, flags, text]).encode())[:24]
    cache = settings.cache_dir / "objects"
    obj, record, depfile = cache / f"{key}.o", cache / f"{key}.json", cache / f"{key}.d"
    deps_digest = _cached(record)
    if deps_digest is not None and obj.is_file():
        return CompiledUnit(name, obj, key + deps_digest, False, time.perf_counter() - start, "")
    source = settings.cache_dir / "sources" / f"{name}.cpp"
    source.parent.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if not source.is_file() or source.read_text(encoding="utf-8") != text:
        write_atomic(source, text)
    partial = obj.with_suffix(f".{os.getpid()}.tmp.o")
    command = [settings.compiler, *flags, "-MMD", "-MF", str(depfile), "-c", str(source), "-o", str(partial)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        return CompiledUnit(name, None, "", True, time.perf_counter() - start, done.stdout + done.stderr)
    deps = {p: _file_sha(p) for p in _read_depfile(depfile) if Path(p).resolve() != source.resolve()}
    os.replace(partial, obj)
    store.write(record, "object", {"deps": {p: d for p, d in deps.items() if d is not None}})
    digest = _cached(record) or ""
    return CompiledUnit(name, obj, key + digest, True, time.perf_counter() - start, done.stderr)


def compile_objects(
    settings: BuildSettings,
    units: Sequence[tuple[str, str]],
    own_settings: Mapping[str, BuildSettings] | None = None,
) -> list[CompiledUnit]:
    """Compile each ``(name, source text)`` to an object (or take it from the cache), in parallel.

    A unit named in ``own_settings`` is compiled with those settings instead (other flags).
    """
    jobs = max(1, min(settings.jobs or os.cpu_count() or 1, len(units) or 1))
    own = own_settings or {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        biggest_first = sorted(units, key=lambda u: (u[0] not in own, -len(u[1])))  # own: a whole other file
        results = {r.name: r for r in pool.map(lambda u: _compile_one(own.get(u[0], settings), *u), biggest_first)}
    return [results[name] for name, _ in units]


def link_library(
    settings: BuildSettings, objects: Sequence[CompiledUnit], exported: Sequence[str], name: str
) -> tuple[Path, bool]:
    """Link ``objects`` into ``lib<name>-<digest>.so`` exporting only ``exported``; (path, linked now?).

    ``-Bsymbolic`` and a version script keep every symbol of ours (our Node classes share
    libtorch's names) bound inside the library; ``--gc-sections`` drops code nothing
    registered reaches.
    """
    script = "{\n  global:\n" + "".join(f"    {s};\n" for s in exported) + "  local: *;\n};\n"
    flags = ["-shared", "-Wl,-Bsymbolic", "-Wl,--gc-sections", "-Wl,--as-needed", *settings.torch.link_flags()]
    missing = [u.name for u in objects if u.object is None]
    if missing:
        raise VtgenError(f"cannot link {name}: {', '.join(missing)} did not compile")
    key = _sha(json.dumps([settings.compiler, flags, script, [u.digest for u in objects]]).encode())[:24]
    lib = settings.cache_dir / "lib" / f"lib{name}-{key}.so"
    if lib.is_file():
        return lib, False
    lib.parent.mkdir(parents=True, exist_ok=True)
    version_script = lib.with_suffix(".map")
    write_atomic(version_script, script)
    partial = lib.with_suffix(f".{os.getpid()}.tmp")
    objs = [str(u.object) for u in objects]
    command = [settings.compiler, *flags[:4], f"-Wl,--version-script={version_script}", *objs, "-o", str(partial)]
    command += flags[4:]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise VtgenError(f"linking {lib.name} failed:\n{done.stderr.strip()[:4000]}")
    os.replace(partial, lib)
    return lib, True
