"""``generate``: inputs → model → plan → files, skipping all work when no input changed.

The output directory holds a manifest recording each input's size, mtime and
content hash, the options and generator version, and the files written.  When
nothing changed the run ends before any YAML is parsed; otherwise only files
whose content changed are rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from importlib import resources
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .emit.files import EmitOptions, render_outputs
from .errors import VtgenError
from .model import Inputs, load_model
from .plan.kernel import Plan, build_plan
from .plan.policy import load_policy
from .stubs.gen_decls import render_decls
from .write import locked, write_atomic, write_outputs

__all__ = ["GenerateOptions", "GenerateResult", "generate"]

MANIFEST = ".vtgen-manifest.json"


@dataclass(frozen=True)
class GenerateOptions:
    out_dir: str
    shards: int = 10
    namespace: str = "aten"
    manual_headers: tuple[str, ...] = ()
    using_namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class GenerateResult:
    plan: Plan | None  # None when the fast path skipped all work
    written: tuple[str, ...]
    unchanged: int
    seconds: float
    changed_inputs: tuple[str, ...]

    def summary(self) -> str:
        if self.plan is None:
            return f"vtgen-build: up to date (0 files written) in {self.seconds:.3f}s"
        kernels = sum(k.kind == "kernel" for k in self.plan.kernels)
        fallbacks = sum(k.kind == "fallback" for k in self.plan.kernels)
        ops = len({k.op for k in self.plan.kernels})
        return (f"vtgen-build: {ops} ops, {kernels} kernels, {fallbacks} fallbacks, {len(self.plan.infos)} Nodes; "
                f"{len(self.written)} files written, {self.unchanged} unchanged in {self.seconds:.3f}s")  # fmt: skip


def _input_paths(inputs: Inputs) -> list[str]:
    return [p for p in (inputs.native_functions, inputs.derivatives, inputs.tags) if p]


def _stat(path: str) -> dict[str, int]:
    try:
        st = os.stat(path)
    except OSError:
        raise VtgenError(f"no such file: {path}") from None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _generator_digest() -> str:
    """Templates and the policy are inputs too: any change to them regenerates everything."""
    root = resources.files("vtgen_build")
    h = hashlib.sha256()
    for name in sorted(p.name for p in root.joinpath("templates").iterdir()):
        h.update(name.encode() + root.joinpath("templates", name).read_bytes())
    h.update(root.joinpath("data/pytorch_policy.yaml").read_bytes())
    return h.hexdigest()


def _settings(options: GenerateOptions) -> dict[str, object]:
    return {"version": __version__, "shards": options.shards, "namespace": options.namespace,
            "manual_headers": list(options.manual_headers), "using": list(options.using_namespaces), "generator": _generator_digest()}  # fmt: skip


def _read_manifest(out_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _changed_inputs(manifest: dict[str, object], inputs: Inputs, options: GenerateOptions) -> list[str] | None:
    """Inputs whose content changed; None when the manifest cannot be trusted (regenerate all)."""
    if manifest.get("settings") != _settings(options):
        return None
    recorded = manifest.get("inputs")
    if not isinstance(recorded, dict) or set(recorded) != set(_input_paths(inputs)):
        return None
    changed = []
    for path in _input_paths(inputs):
        old = recorded[path]
        if not isinstance(old, dict):
            return None
        if {k: old.get(k) for k in ("size", "mtime_ns")} != _stat(path) and old.get("sha256") != _digest(path):
            changed.append(path)
    return changed


def _files_present(out_dir: Path, manifest: dict[str, object]) -> bool:
    files = manifest.get("files")
    return isinstance(files, list) and all((out_dir / str(f)).is_file() for f in files)


def generate(inputs: Inputs, options: GenerateOptions) -> GenerateResult:
    start = time.perf_counter()
    if options.shards < 1:
        raise VtgenError("--shards must be at least 1")
    out_dir = Path(options.out_dir)
    with locked(out_dir):
        manifest = _read_manifest(out_dir)
        changed = _changed_inputs(manifest, inputs, options)
        if changed == [] and _files_present(out_dir, manifest):
            _write_manifest(out_dir, inputs, options, manifest.get("files", []))  # refresh mtimes
            return GenerateResult(None, (), len(manifest.get("files", [])), time.perf_counter() - start, ())  # type: ignore[arg-type]
        model = load_model(inputs)
        policy = load_policy()
        plan = build_plan(model, policy)
        views = frozenset(n for n, _ in policy.view_functions)
        files = render_outputs(plan, EmitOptions(options.shards, options.manual_headers, views, options.using_namespaces))
        files.update(render_decls(model.native_functions))  # declarations the stub headers include
        owned = {str(f) for f in manifest.get("files", []) or []}  # type: ignore[union-attr]
        result = write_outputs(out_dir, files, owned)
        _write_manifest(out_dir, inputs, options, sorted(files))
    changed_inputs = tuple(changed) if changed is not None else tuple(_input_paths(inputs))
    return GenerateResult(plan, result.written, len(result.unchanged), time.perf_counter() - start, changed_inputs)


def _write_manifest(out_dir: Path, inputs: Inputs, options: GenerateOptions, files: object) -> None:
    recorded = {p: {**_stat(p), "sha256": _digest(p)} for p in _input_paths(inputs)}
    data = {"settings": _settings(options), "inputs": recorded, "files": files}
    write_atomic(out_dir / MANIFEST, json.dumps(data, indent=1, sort_keys=True) + "\n")


def write_depfile(path: str, target: str, inputs: Inputs) -> None:
    """A Make-style depfile: ``target: every input read``."""

    def esc(p: str) -> str:
        return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

    deps = " \\\n  ".join(esc(os.path.abspath(p)) for p in _input_paths(inputs))
    write_atomic(Path(path), f"{esc(target)}: \\\n  {deps}\n")


def touch(path: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.touch()
    os.utime(p)

