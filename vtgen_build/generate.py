"""``generate``: inputs → model → plan → files, doing the least work a change requires.

The output directory holds a manifest (``.vtgen-manifest.json``) recording each
input's size, mtime and content hash, the settings (options, generator version,
a digest of the templates, the policy and the generator's own code), every file
written with its content hash, and the token of the cache (``incremental.py``)
written just before it.  Three paths:

* nothing changed (size and mtime, else content hash, of every input; every
  output present): done before any YAML is read, importing nothing heavy;
* only entries of derivatives.yaml changed: ``incremental.incremental_run``
  re-plans the ops using them and reassembles the shards they land in;
* anything else (or a missing, torn or foreign manifest or cache): a clean run.

Either way only files whose content changed are rewritten, each atomically, and
the manifest is written last, so a run killed at any point leaves a directory
the next run repairs.  A lock serialises two runs on one directory.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import VtgenError
from .inputs import Inputs
from .quick import generator_files
from .write import fault_point, locked, write_atomic

if TYPE_CHECKING:
    from .plan.kernel import Plan

__all__ = [
    "MANIFEST",
    "GenerateOptions",
    "GenerateResult",
    "depfile_inputs",
    "generate",
    "input_paths",
    "touch",
    "write_depfile",
]

MANIFEST = ".vtgen-manifest.json"
_MANIFEST_FORMAT = 2
_PACKAGE = Path(os.path.abspath(__file__)).parent  # as quick.generator_files() spells it


@dataclass(frozen=True)
class GenerateOptions:
    out_dir: str
    shards: int = 10
    namespace: str = "aten"
    manual_headers: tuple[str, ...] = ()
    using_namespaces: tuple[str, ...] = ()
    # `#line` to the yaml around formulas (--line-directives; check, CMake and setuptools builds). The path
    # written is the yaml's absolute path: identical output for the same inputs at the same place.
    line_directives: bool = False
    stub_decls: bool = False  # also write vtgen_decls/*.inc, the op declarations the stub headers include


@dataclass(frozen=True)
class GenerateResult:
    plan: Plan | None  # what this run planned: everything, the re-planned ops, or None (nothing to do)
    written: tuple[str, ...]
    unchanged: int
    seconds: float
    changed_inputs: tuple[str, ...]
    mode: str = "full"  # "up-to-date", "incremental" or "full"
    explanations: tuple[str, ...] = ()  # per re-planned op (or for all of them): which input changed
    outputs: tuple[str, ...] = ()  # every file the output directory holds for this run (relative paths)

    def summary(self) -> str:
        if self.plan is None:
            return f"vtgen-build: up to date (0 files written) in {self.seconds:.3f}s"
        kernels = sum(k.kind == "kernel" for k in self.plan.kernels)
        fallbacks = sum(k.kind == "fallback" for k in self.plan.kernels)
        ops = len({k.op for k in self.plan.kernels})
        what = "re-planned " if self.mode == "incremental" else ""
        return (
            f"vtgen-build: {what}{ops} ops, {kernels} kernels, {fallbacks} fallbacks, {len(self.plan.infos)} Nodes; "
            f"{len(self.written)} files written, {self.unchanged} unchanged in {self.seconds:.3f}s"
        )


def input_paths(inputs: Inputs) -> list[str]:
    return [p for p in (inputs.native_functions, inputs.derivatives, inputs.tags) if p]


def _stat(path: str) -> dict[str, int]:
    try:
        st = os.stat(path)
    except OSError:
        raise VtgenError(f"no such file: {path}") from None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _digest(path: str) -> str:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        raise VtgenError(f"cannot read {path}") from None


def _generator_files() -> list[Path]:
    """Files that decide the output besides the inputs: templates, the policy, the generator's own code."""
    return [Path(p) for p in generator_files()]


def _generator_stats() -> list[list[object]]:
    return [
        [str(p.relative_to(_PACKAGE)), *(lambda st: (st.st_size, st.st_mtime_ns))(p.stat())] for p in _generator_files()
    ]


def _generator_digest(manifest: dict[str, Any], stats: list[list[object]]) -> str:
    """Any change to a template, the policy or the code regenerates everything.

    The digest of the last run is reused while every file keeps its size and mtime
    (hashing ~50 files and importing hashlib would cost the no-op path ~10 ms).
    """
    recorded = manifest.get("settings")
    if (
        manifest.get("generator_stats") == stats
        and isinstance(recorded, dict)
        and isinstance(recorded.get("generator"), str)
    ):
        return str(recorded["generator"])
    import hashlib

    h = hashlib.sha256()
    for path in _generator_files():
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _settings(
    options: GenerateOptions, inputs: Inputs, manifest: dict[str, Any], stats: list[list[object]]
) -> dict[str, object]:
    return {
        "version": __version__,
        "shards": options.shards,
        "namespace": options.namespace,
        "input_namespace": inputs.namespace,
        "manual_headers": list(options.manual_headers),
        "using": list(options.using_namespaces),
        "generator": _generator_digest(manifest, stats),
        **({"line_directives": True} if options.line_directives else {}),
        **({"stub_decls": True} if options.stub_decls else {}),
    }


def _read_manifest(out_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == _MANIFEST_FORMAT else {}


def _changed_inputs(manifest: dict[str, Any], inputs: Inputs, settings: dict[str, object]) -> list[str] | None:
    """Inputs whose content changed; None when the manifest cannot be trusted (regenerate all)."""
    if manifest.get("settings") != settings:
        return None
    recorded = manifest.get("inputs")
    if not isinstance(recorded, dict) or set(recorded) != set(input_paths(inputs)):
        return None
    changed = []
    for path in input_paths(inputs):
        old = recorded[path]
        if not isinstance(old, dict):
            return None
        if {k: old.get(k) for k in ("size", "mtime_ns")} != _stat(path) and old.get("sha256") != _digest(path):
            changed.append(path)
    return changed


def _outputs_intact(out_dir: Path, manifest: dict[str, Any]) -> bool:
    """Every file the manifest lists is there with the size it was written with."""
    files = manifest.get("files")
    if not isinstance(files, dict):
        return False
    try:
        base = str(out_dir)
        return all(os.stat(os.path.join(base, rel)).st_size == entry[0] for rel, entry in files.items())
    except (OSError, TypeError, IndexError):
        return False


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """No cycle collection during a run: it builds hundreds of thousands of objects that live to its end, and
    each full collection walks them all (a fifth of a clean run's time).  Reference counting
    still frees everything else; peak memory is unchanged on the real yaml."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def generate(inputs: Inputs, options: GenerateOptions) -> GenerateResult:
    start = time.perf_counter()
    if options.shards < 1:
        raise VtgenError("--shards must be at least 1")
    out_dir = Path(options.out_dir)
    with locked(out_dir), _cyclic_gc_paused():
        manifest = _read_manifest(out_dir)
        stats = _generator_stats()
        settings = _settings(options, inputs, manifest, stats)
        changed = _changed_inputs(manifest, inputs, settings)
        if changed == [] and _outputs_intact(out_dir, manifest):
            touched = any(manifest["inputs"][p].get("mtime_ns") != _stat(p)["mtime_ns"] for p in input_paths(inputs))
            if touched or manifest.get("generator_stats") != stats:
                _write_manifest(out_dir, inputs, settings, stats, manifest["files"], manifest.get("cache"))
            elapsed = time.perf_counter() - start
            files = tuple(manifest["files"])
            return GenerateResult(None, (), len(files), elapsed, (), "up-to-date", outputs=files)
        return _regenerate(inputs, options, out_dir, manifest, (settings, stats), changed, start)


def _regenerate(
    inputs: Inputs,
    options: GenerateOptions,
    out_dir: Path,
    manifest: dict[str, Any],
    generator: tuple[dict[str, object], list[list[object]]],
    changed: list[str] | None,
    start: float,
) -> GenerateResult:
    from . import incremental

    settings, stats = generator
    _remove_stale_temporaries(out_dir)
    explanations: list[str] = []
    outcome: incremental.Outcome | str = "no usable manifest" if changed is None else "outputs missing or modified"
    if changed and _outputs_intact(out_dir, manifest):
        cache = incremental.load_cache(out_dir, manifest.get("cache"))
        outcome = (
            "no usable cache"
            if cache is None
            else incremental.incremental_run(inputs, options, settings, (out_dir, cache), explanations)
        )
    if isinstance(outcome, str):
        explanations = [f"all ops: {outcome}"]
        outcome = incremental.full_run(inputs, options, settings, explanations)
        mode, all_files = "full", outcome.all_files
        old_files = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
        owned = set(old_files or ())
        files_record = {rel: _file_record(content) for rel, content in outcome.files}
    else:
        mode = "incremental"
        files_record = dict(manifest["files"])
        files_record.update({rel: _file_record(content) for rel, content in outcome.files})
        owned = set()
    written, unchanged_count = [], 0
    for rel, content in outcome.files:
        if write_atomic(out_dir / rel, content):
            written.append(rel)
    if mode == "full":
        for rel in sorted(owned - set(all_files)):
            (out_dir / rel).unlink(missing_ok=True)
        unchanged_count = len(outcome.files) - len(written)
    else:
        unchanged_count = len(files_record) - len(written)
    fault_point("outputs written")
    token = incremental.save_cache(out_dir, outcome.cache)
    fault_point("cache written")
    _write_manifest(out_dir, inputs, settings, stats, files_record, token)
    changed_inputs = tuple(changed) if changed else tuple(input_paths(inputs))
    elapsed = time.perf_counter() - start
    return GenerateResult(
        outcome.plan,
        tuple(written),
        unchanged_count,
        elapsed,
        changed_inputs,
        mode,
        tuple(outcome.explanations),
        tuple(files_record),
    )


def _file_record(content: str) -> list[object]:
    import hashlib

    data = content.encode("utf-8")
    return [len(data), hashlib.sha256(data).hexdigest()]


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Temporary files a killed run left behind (``write_atomic`` names them ``.<name>.vtgen.tmp``)."""
    for pattern in (".*.tmp", "*/.*.tmp"):
        for path in out_dir.glob(pattern):
            path.unlink(missing_ok=True)


def _write_manifest(
    out_dir: Path, inputs: Inputs, settings: dict[str, object], stats: object, files: object, cache: object
) -> None:
    recorded = {p: {**_stat(p), "sha256": _digest(p)} for p in input_paths(inputs)}
    data = {
        "format": _MANIFEST_FORMAT,
        "settings": settings,
        "generator_stats": stats,
        "inputs": recorded,
        "files": files,
        "cache": cache,
    }
    write_atomic(out_dir / MANIFEST, json.dumps(data, indent=1, sort_keys=True) + "\n")


def depfile_inputs(inputs: Inputs) -> list[str]:
    """Every file a run reads to decide the output: the yaml inputs, the templates and the policy."""
    return [os.path.abspath(p) for p in input_paths(inputs)] + [str(p) for p in _generator_files() if p.suffix != ".py"]


def write_depfile(path: str, target: str, inputs: Inputs) -> None:
    """A Make-style depfile: ``target: every input read``."""

    def esc(p: str) -> str:
        return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

    deps = " \\\n  ".join(esc(p) for p in depfile_inputs(inputs))
    write_atomic(Path(path), f"{esc(target)}: \\\n  {deps}\n")


def touch(path: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.touch()
    os.utime(p)
