"""``vtgen-build check``: generate, then have a real C++ compiler check every kernel and Node.

The generated translation units are compiled with ``-fsyntax-only`` against the
stub ATen headers shipped in ``stubs/include`` (or, with ``--torch-include``,
against a real PyTorch's headers), warnings as errors, in parallel.  The check
build is generated with ``#line`` directives, so an error inside a formula is
reported at its derivatives.yaml line; the summary names the ops that failed.
``--op`` and ``--changed`` compile one small translation unit holding only the
kernels and Nodes of the chosen ops.

Layout of the check directory (``--out``): the generated files, plus
``.vtgen-check/`` (include shims, the partial unit) and ``.vtgen-check-state.json``
(a digest of each op's code at its last successful check, for ``--changed``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from .check_index import OutputIndex, read_index
from .errors import VtgenError, did_you_mean
from .generate import GenerateOptions, generate
from .inputs import Inputs
from .write import write_atomic

__all__ = ["STUB_INCLUDE", "CheckOptions", "CheckResult", "default_check_dir", "find_compiler", "run_check"]

STUB_INCLUDE = Path(__file__).resolve().parent / "stubs" / "include"
STATE = ".vtgen-check-state.json"
WORK = ".vtgen-check"
# Warnings are errors in generated code.  Two are off: a Node's apply never reads `grads` when
# no formula uses it, and forward-AD code unpacks every tangent and primal whether the formula
# reads it or not (PyTorch's own generated code does both too).
_WARNINGS = ("-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-unused-but-set-variable")
_PARTIAL_LIMIT = 0.25  # --changed compiles everything when more than this share of the ops changed


@dataclass(frozen=True)
class CheckOptions:
    std: str = "c++17"
    jobs: int = 0  # 0: one per core
    launcher: str | None = None  # e.g. ccache
    cxx: str | None = None  # default: $CXX, else g++ or clang++ on PATH
    ops: tuple[str, ...] = ()  # compile only these ops (one small unit)
    changed: bool = False  # compile only the ops changed since the last successful check
    torch_include: str | None = None  # a real PyTorch include dir instead of the stubs
    include_dirs: tuple[str, ...] = ()  # -I for the user's headers (the manual header's directory)
    manual_header_file: str | None = None  # file behind torch/csrc/autograd/FunctionsManual.h (stub builds)
    progress: bool | None = None  # a progress line; None: when stdout is a terminal


@dataclass(frozen=True)
class UnitResult:
    unit: str
    ok: bool
    seconds: float
    diagnostics: str
    errors: int
    ops: frozenset[str]  # ops blamed for the errors


@dataclass(frozen=True)
class CheckResult:
    units: tuple[UnitResult, ...]
    failing_ops: tuple[str, ...]
    seconds: float
    generate_seconds: float
    checked_ops: int  # ops in the compiled code (all of them for a whole check)
    nothing_to_do: bool = False

    @property
    def ok(self) -> bool:
        return all(u.ok for u in self.units)

    @property
    def errors(self) -> int:
        return sum(u.errors for u in self.units)

    def summary(self) -> str:
        if self.nothing_to_do:
            return f"vtgen-build check: no op changed since the last successful check ({self.seconds:.1f}s)"
        head = (
            f"vtgen-build check: {len(self.units)} translation units, {self.checked_ops} ops "
            f"(generate {self.generate_seconds:.1f}s, total {self.seconds:.1f}s)"
        )
        if self.ok:
            return f"{head}: OK, 0 errors"
        failed = [u.unit for u in self.units if not u.ok]
        lines = [f"{head}: FAILED, {self.errors} errors in {', '.join(failed)}"]
        if self.failing_ops:
            shown = ", ".join(self.failing_ops[:200])
            more = f" and {len(self.failing_ops) - 200} more" if len(self.failing_ops) > 200 else ""
            lines.append(f"failing ops: {shown}{more}")
        return "\n".join(lines)


def find_compiler(cxx: str | None = None) -> str:
    for candidate in (cxx, os.environ.get("CXX"), "g++", "clang++", "c++"):
        if candidate:
            found = shutil.which(candidate)
            if found:
                return found
    raise VtgenError("no C++ compiler: give --cxx, set CXX, or put g++ or clang++ on PATH")


def default_check_dir(inputs: Inputs, options: GenerateOptions) -> str:
    """A cache directory per set of inputs and options (``$XDG_CACHE_HOME/vtgen-build/check/<digest>``)."""
    key = json.dumps(
        [os.path.abspath(p) if p else None for p in (inputs.native_functions, inputs.derivatives, inputs.tags)]
        + [options.namespace, options.shards, list(options.manual_headers), list(options.using_namespaces)]
    )
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "vtgen-build", "check", hashlib.sha256(key.encode()).hexdigest()[:16])


# -- include directories ------------------------------------------------------------------------
def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)


def _include(path: Path) -> str:
    return '#include "' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"\n'


def _include_flags(out: Path, options: CheckOptions) -> list[str]:
    """``-I``/``-isystem`` flags: our Functions.h shadows PyTorch's, headers we did not write are system."""
    mode = "real" if options.torch_include else "stubs"
    shim = out / WORK / mode / "shim"  # found first: the generated Functions.h under PyTorch's name
    system = out / WORK / mode / "system"  # headers we do not check for warnings
    # PyTorch's FunctionsManual.h includes generated/Functions.h for the shared includes only: give it
    # FunctionsBase.h, not the umbrella, so that a change to one Node's header recompiles one shard.
    _write_if_changed(shim / "torch/csrc/autograd/generated/Functions.h", _include(out.resolve() / "FunctionsBase.h"))
    flags = [f"-I{shim}", f"-I{out}"]
    flags += [f"-isystem{d}" for d in options.include_dirs]
    if options.torch_include is None:
        if options.manual_header_file:
            _write_if_changed(
                system / "torch/csrc/autograd/FunctionsManual.h", _include(Path(options.manual_header_file).resolve())
            )
        return [*flags, f"-isystem{system}", f"-isystem{STUB_INCLUDE}"]
    real = Path(options.torch_include)
    if not (real / "ATen").is_dir():
        raise VtgenError(f"--torch-include {real}: no ATen/ headers there (expected <torch>/include)")
    flags += [f"-isystem{system}", f"-isystem{real}", f"-isystem{real / 'torch/csrc/api/include'}"]
    functions_inc = (out / "vtgen_decls" / "Functions.inc").read_text(encoding="utf-8")
    if "<vtgen_aten/" in functions_inc:  # an op library in its own namespace: PyTorch's headers lack its functions
        for kind in ("Functions", "RedispatchFunctions"):
            _write_if_changed(system / "vtgen_aten" / f"{kind}.inc", "// the real aten headers are used\n")
        forced = system / "vtgen_namespace_decls.h"
        decls = tuple(f"vtgen_decls/{k}.inc" for k in ("Functions", "RedispatchFunctions"))
        includes = ("ATen/ATen.h", "torch/csrc/Export.h", *decls)
        _write_if_changed(forced, "#pragma once\n" + "".join(f"#include <{h}>\n" for h in includes))
        flags += ["-include", str(forced)]
    return flags


def _command(compiler: str, options: CheckOptions, flags: list[str], source: Path) -> list[str]:
    launcher = options.launcher.split() if options.launcher else []
    return [
        *launcher,
        compiler,
        f"-std={options.std}",
        "-fsyntax-only",
        *_WARNINGS,
        "-fdiagnostics-color=never",
        *flags,
        str(source),
    ]


# -- the partial unit (--op, --changed) ---------------------------------------------------------
_NODE_INCLUDE = re.compile(r'^#include "Functions_\d+\.h"$')


def _with_node_includes(prelude: str, headers: Iterable[str]) -> str:
    """``prelude`` including exactly ``headers`` (the ``Functions_<k>.h`` declaring the Nodes needed)."""
    lines = prelude.split("\n")
    wanted = [f'#include "{h}"' for h in sorted(set(headers))]
    at = next((i for i, line in enumerate(lines) if _NODE_INCLUDE.match(line)), None)
    kept = [line for line in lines if not _NODE_INCLUDE.match(line)]
    if at is None:
        at = max((i for i, line in enumerate(kept) if line.startswith("#include")), default=-1) + 1
    return "\n".join(kept[:at] + wanted + kept[at:])


def _partial_unit(index: OutputIndex, ops: Iterable[str]) -> str:
    """One translation unit with the kernels of ``ops`` and the ``apply`` of their Nodes.

    Each definition is preceded by ``#line`` to its place in the shard it comes from,
    so errors point at the full generated files (or, inside formulas, at the yaml).
    """
    kernels = list(dict.fromkeys(k for op in ops for k in index.kernels_of_op.get(op, ()) if k in index.kernels))
    nodes = list(dict.fromkeys(n for k in kernels for n in index.nodes_of_kernel.get(k, ())))
    parts: list[str] = []
    for kind, names in (("kernels", kernels), ("nodes", nodes)):
        blocks = [b for n in names for b in (index.node_blocks.get(n, []) if kind == "nodes" else [index.kernels[n]])]
        if not blocks:
            continue
        unit = index.units[blocks[0].unit]
        parts.append(f"#line 1 {json.dumps(str(index.out_dir / unit.name))}")
        parts.append(_with_node_includes(unit.prelude, (index.header_of_node[n] for n in nodes)))
        for b in blocks:
            parts.append(f"#line {b.first} {json.dumps(str(index.out_dir / b.unit))}\n{b.text}")
        parts.append(unit.epilogue)
    return (
        "// Generated by vtgen-build check: the kernels and Nodes of some ops, for a quick check.\n"
        + "\n".join(parts)
        + "\n"
    )


def select_ops(index: OutputIndex, names: Iterable[str]) -> list[str]:
    """Registered ops for each ``--op`` name: an exact op (``add.Tensor``) or every overload of a name."""
    chosen: list[str] = []
    for name in names:
        known = index.kernels_of_op
        hits = [name] if name in known else [op for op in known if op.split(".")[0] == name]
        if not hits:
            raise VtgenError(f"--op {name}: no such op has an Autograd kernel{did_you_mean(name, known)}")
        chosen += hits
    return list(dict.fromkeys(chosen))


# -- diagnostics --------------------------------------------------------------------------------
_LOCATED = re.compile(r"^(?P<pre>In file included from |\s+from )?(?P<path>[^\s:][^:]*):(?P<line>\d+)(?P<rest>[:,].*)$")
_IN_FUNCTION = re.compile(r"^(?P<path>[^\s:][^:]*): (?P<rest>In .*)$")


def _display(path: str, out: Path) -> str:
    p = Path(path)
    if not p.is_absolute() and p.parent == Path(".") and (out / p).is_file():
        p = out / p  # `#line N "VariableType_3.cpp"`: a generated unit
    try:
        return os.path.relpath(p) if p.resolve().is_relative_to(Path.cwd()) else str(p)
    except ValueError:
        return str(p)


def _read_diagnostics(text: str, index: OutputIndex, out: Path) -> tuple[str, int, set[str]]:
    """The compiler's output with paths made readable, its error count and the ops at fault."""
    lines: list[str] = []
    located: list[tuple[str, int] | None] = []
    for raw in text.splitlines():
        m = _LOCATED.match(raw)
        if m is None:
            f = _IN_FUNCTION.match(raw)
            lines.append(f"{_display(f.group('path'), out)}: {f.group('rest')}" if f else raw)
            located.append(None)
            continue
        path, line, rest = _display(m.group("path"), out), int(m.group("line")), m.group("rest")
        moved = index.formula_after(path, line) if not m.group("pre") else None
        if moved is not None:  # the code wrapping a formula (e.g. `cond ? (formula) : Tensor()`)
            path, line, rest = _display(moved[0], out), moved[1], re.sub(r"^:\d+:", ":", rest)
        lines.append(f"{m.group('pre') or ''}{path}:{line}{rest}")
        located.append((path, line))
    error_rows = [i for i, line in enumerate(lines) if re.search(r"\b(fatal )?error:", line)]
    ops: set[str] = set()
    for n, row in enumerate(error_rows):
        end = error_rows[n + 1] if n + 1 < len(error_rows) else len(lines)
        start = error_rows[n - 1] + 1 if n else 0
        for i in [row, *range(start, end)]:  # the error's own place first, then its context
            where = located[i]
            if where is not None and (blamed := index.ops_at(*where)):
                ops |= blamed
                break
    return "\n".join(lines), len(error_rows), ops


# -- state for --changed ------------------------------------------------------------------------
def _settings_digest(
    out: Path, compiler: str, options: CheckOptions, flags: list[str], manual_headers: tuple[str, ...]
) -> str:
    """Everything but the ops' own code that decides whether a check passes."""
    h = hashlib.sha256(json.dumps([compiler, options.std, options.launcher, flags]).encode())
    shared = [out / "FunctionsBase.h", *sorted((out / "vtgen_decls").glob("*.inc"))]
    if options.manual_header_file:
        shared.append(Path(options.manual_header_file))
    shared += [Path(d) / h for d in options.include_dirs for h in manual_headers]
    for path in shared:
        if path.is_file():
            h.update(str(path).encode() + path.read_bytes())
    return h.hexdigest()


def _op_digests(index: OutputIndex, out: Path) -> dict[str, str]:
    headers: dict[str, str] = {}  # Node -> its struct declaration
    for name, spans in index.node_spans.items():
        lines = (out / name).read_text(encoding="utf-8").split("\n")
        headers.update((node, "\n".join(lines[first - 1 : last])) for first, last, node in spans)
    return {op: index.op_digest(op, headers) for op, ks in index.kernels_of_op.items() if ks}


def _read_state(out: Path, settings: str) -> dict[str, str]:
    try:
        data = json.loads((out / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("settings") != settings or not isinstance(data.get("ops"), dict):
        return {}
    return {str(k): str(v) for k, v in data["ops"].items()}


def _write_state(out: Path, settings: str, ops: dict[str, str]) -> None:
    write_atomic(out / STATE, json.dumps({"settings": settings, "ops": ops}, indent=0, sort_keys=True) + "\n")


# -- running ------------------------------------------------------------------------------------
@dataclass
class _Reporter:
    """Plain lines, or one progress line rewritten in place on a terminal."""

    total: int
    tty: bool
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    errors: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: float = field(default_factory=time.perf_counter)

    def finished(self, r: UnitResult) -> None:
        with self.lock:
            self.done += 1
            self.failed += not r.ok
            if self.tty:
                self.stream.write("\r\x1b[K")
            if r.diagnostics.strip():
                self.stream.flush()
                self.errors.write(r.diagnostics.rstrip("\n") + "\n")
                self.errors.flush()
            status = "ok" if r.ok else f"FAILED ({r.errors} errors)"
            if self.tty:
                if not r.ok:
                    self.stream.write(f"{r.unit}: {status}\n")
                elapsed = time.perf_counter() - self.started
                self.stream.write(f"[{self.done}/{self.total}] {self.failed} failed, {elapsed:.0f}s")
            else:
                self.stream.write(f"[{self.done}/{self.total}] {r.unit}: {status} ({r.seconds:.1f}s)\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _compile_all(
    units: list[Path], command: Callable[[Path], list[str]], index: OutputIndex, out: Path, options: CheckOptions
) -> list[UnitResult]:
    tty = options.progress if options.progress is not None else sys.stdout.isatty()
    reporter = _Reporter(len(units), tty)
    procs: set[subprocess.Popen[str]] = set()

    def one(source: Path) -> UnitResult:
        start = time.perf_counter()
        with subprocess.Popen(command(source), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            procs.add(proc)
            text, _ = proc.communicate()
            procs.discard(proc)
        diagnostics, errors, ops = _read_diagnostics(text, index, out)
        ok = proc.returncode == 0
        if not ok and errors == 0:
            errors = 1  # a crash, or a warning turned error without the word "error"
        result = UnitResult(source.name, ok, time.perf_counter() - start, diagnostics, errors, frozenset(ops))
        reporter.finished(result)
        return result

    jobs = options.jobs or os.cpu_count() or 1
    biggest_first = sorted(units, key=lambda p: -p.stat().st_size)
    results: list[UnitResult] = []
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(units))))
    try:
        futures = [pool.submit(one, u) for u in biggest_first]
        results = [f.result() for f in as_completed(futures)]
    except BaseException:
        for f in futures:
            f.cancel()
        for proc in list(procs):
            proc.kill()
        raise
    finally:
        pool.shutdown(wait=True)
        reporter.close()
    order = {u.name: i for i, u in enumerate(units)}
    return sorted(results, key=lambda r: order.get(r.unit, 0))


def run_check(inputs: Inputs, gen_options: GenerateOptions, options: CheckOptions) -> CheckResult:
    """Generate a check build into ``gen_options.out_dir`` and compile it; see the module doc."""
    start = time.perf_counter()
    compiler = find_compiler(options.cxx)
    gen_options = replace(gen_options, line_directives=True, stub_decls=True)
    generated = generate(inputs, gen_options)
    out = Path(gen_options.out_dir).resolve()
    index = read_index(out)
    flags = _include_flags(out, options)
    settings = _settings_digest(out, compiler, options, flags, gen_options.manual_headers)
    digests = _op_digests(index, out)

    ops: list[str] | None = None  # None: every unit
    if options.ops:
        ops = select_ops(index, options.ops)
    if options.changed:
        state = _read_state(out, settings)
        changed = [op for op, d in digests.items() if state.get(op) != d]
        if not changed:
            return CheckResult((), (), time.perf_counter() - start, generated.seconds, 0, nothing_to_do=True)
        if len(changed) <= _PARTIAL_LIMIT * len(digests):
            ops = list(dict.fromkeys([*(ops or []), *changed]))

    def command(source: Path) -> list[str]:
        return _command(compiler, options, flags, source)

    if ops is not None:
        source = out / WORK / "ops.cpp"
        _write_if_changed(source, _partial_unit(index, ops))
        units = [source]
        checked = [op for op in ops if op in digests]
    else:
        units = [out / name for name, unit in sorted(index.units.items()) if unit.blocks]
        checked = list(digests)
    results = _compile_all(units, command, index, out, options) if units else []

    failing = sorted(set().union(*(r.ops for r in results))) if results else []
    failed_units = {r.unit for r in results if not r.ok}
    if ops is None:
        passed = {op for op in checked if op not in failing and not _units_of_op(index, op) & failed_units}
    else:
        passed = set() if failed_units else set(checked)
    if passed:
        state = _read_state(out, settings)
        state.update({op: digests[op] for op in passed})
        _write_state(out, settings, state)
    return CheckResult(tuple(results), tuple(failing), time.perf_counter() - start, generated.seconds, len(checked))


def _units_of_op(index: OutputIndex, op: str) -> set[str]:
    units = {index.kernels[k].unit for k in index.kernels_of_op.get(op, ()) if k in index.kernels}
    for node in index.nodes_of_op(op):
        units |= {b.unit for b in index.node_blocks.get(node, [])}
    return units
