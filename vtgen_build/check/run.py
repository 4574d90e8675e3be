"""``vtgen-build check``: generate, then have a real C++ compiler check every translation unit.

Every generated translation unit is compiled with ``-fsyntax-only`` against the
stub ATen headers shipped in ``stubs/include`` (or, with ``--torch-include``,
against a real PyTorch's headers), warnings as errors, in parallel.  That includes an
op library's backend registrations (``NativeKernels.h`` and a ``Register<Key>.cpp`` per
key its ``dispatch:`` names, as ``generate --register-backends all`` writes them); a partial
check (``--op``, ``--changed``, ``--changed-since``) compiles only its one small unit.  The check
build is generated with ``#line`` directives, so an error inside a formula is
reported at its derivatives.yaml line; the summary names the ops that failed.
``--op`` compiles one small translation unit holding only the kernels and Nodes of
the chosen ops; so does ``--changed``, unless more than a quarter of the ops changed
(then every unit).  The compiling itself (the artifact cache, precompiled headers,
parallel jobs, diagnostics) is ``vtgen_build.compile``.

Layout of the check directory (``--out``): the generated files, plus
``.vtgen-check/`` (include shims, the partial unit, ``cache/``: the compiled-artifact
cache of results and precompiled headers, and ``state``: a digest of each op's code
at its last successful check, for ``--changed``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base import store
from ..base.write import fault_point, locked, write_atomic
from ..compile import (
    STUB_INCLUDE,
    WORK,
    Headers,
    Settings,
    Unit,
    UnitResult,
    artifact_key,
    compile_units,
    default_std,
    find_compiler,
    header_root,
    identify,
    include_flags,
    launcher_argv,
    namespace_hint,
    node_blocks,
    op_kernels,
    section,
    shard_prefix,
)
from ..emit.output_index import OutputIndex, read_index
from ..engine.generate import GenerateOptions, GenerateResult, generate
from ..inputs.files import Inputs
from ..model.schema import OpSelector, resolve_ops
from ..plan.registrations import ALL_KEYS
from .state import changed_ops, files_text, helper_files, helper_roots, read_state, write_state

if TYPE_CHECKING:
    from ..revisions import Changes

__all__ = [
    "CHECK_LOCK",
    "STUB_INCLUDE",
    "CheckOptions",
    "CheckResult",
    "UnitResult",
    "check_generated",
    "default_check_dir",
    "find_compiler",
    "op_digests",
    "run_check",
    "select_ops",
]

STATE = f"{WORK}/state"
_STATE_KIND = "check_state"
_PARTIAL_LIMIT = 0.25  # --changed compiles everything when more than this share of the ops changed
# a partial unit leaves the registrations out: its kernels (internal linkage) are never referenced
_UNREGISTERED = '#pragma GCC diagnostic ignored "-Wunused-function"'


@dataclass(frozen=True)
class CheckOptions:
    std: str | None = None  # None: what the target's headers need (c++17 for the stubs)
    jobs: int = 0  # 0: one per core
    launcher: str | None = None  # e.g. ccache
    cxx: str | None = None  # default: $CXX, else g++ or clang++ on PATH
    ops: tuple[OpSelector, ...] = ()  # compile only these ops (one small unit)
    changed: bool = False  # compile only the ops changed since the last successful check
    torch_include: str | None = None  # a real PyTorch include dir instead of the stubs
    include_dirs: tuple[str, ...] = ()  # -I for the user's headers (the manual header's directory)
    manual_header_file: str | None = None  # file behind torch/csrc/autograd/FunctionsManual.h (stub builds)
    progress: bool | None = None  # a progress line; None: when stdout is a terminal
    cache: bool = True  # False: compile every unit, even those that passed unchanged before
    pch: bool = True  # precompiled headers for the shared include prefix
    since: Changes | None = None  # --changed-since: only the ops whose entries differ from a git revision

    @property
    def headers(self) -> Headers:
        return Headers(self.torch_include, self.include_dirs, self.manual_header_file)


@dataclass(frozen=True)
class CheckResult:
    units: tuple[UnitResult, ...]
    failing_ops: tuple[str, ...]
    seconds: float
    generate_seconds: float
    checked_ops: int  # ops in the compiled code (all of them for a whole check); -1: not counted
    nothing_to_do: bool = False
    hint: str | None = None  # the --using-namespace that would fix every undeclared helper
    since: str | None = None  # nothing to do: no op's entries differ from this revision

    @property
    def ok(self) -> bool:
        return all(u.ok for u in self.units)

    @property
    def errors(self) -> int:
        return sum(u.errors for u in self.units)

    def summary(self) -> str:
        if self.nothing_to_do and self.since is not None:
            return f"vtgen-build check: no op's entries differ from {self.since}, nothing checked ({self.seconds:.1f}s)"
        if self.nothing_to_do:
            return f"vtgen-build check: no op changed since the last successful check ({self.seconds:.1f}s)"
        cached = sum(u.cached for u in self.units)
        ops = f", {self.checked_ops} ops" if self.checked_ops >= 0 else ""
        head = (
            f"vtgen-build check: {len(self.units)} translation units ({cached} unchanged){ops} "
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
        if self.hint:
            lines.append(
                f"hint: every undeclared name is declared in namespace {self.hint}: add --using-namespace {self.hint}"
            )
        return "\n".join(lines)


def default_check_dir(inputs: Inputs, options: GenerateOptions) -> str:
    """A cache directory per set of inputs and options (``$XDG_CACHE_HOME/vtgen-build/check/<digest>``)."""
    key = json.dumps(
        [os.path.abspath(p) if p else None for p in (inputs.native_functions, inputs.derivatives, inputs.tags)]
        + [
            options.request.namespace,
            options.shards,
            list(options.request.manual_headers),
            list(options.request.using_namespaces),
        ]
    )
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "vtgen-build", "check", hashlib.sha256(key.encode()).hexdigest()[:16])


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)


# -- the partial unit (--op, --changed) ---------------------------------------------------------
def _partial_unit(index: OutputIndex, ops: Iterable[str]) -> str:
    """One translation unit with the kernels of ``ops`` and the ``apply`` of their Nodes (``compile.partial``)."""
    kernels = op_kernels(index, ops)
    nodes = list(dict.fromkeys(n for k in kernels for n in index.nodes_of_kernel.get(k, ())))
    parts = section(index, [index.kernels[k] for k in kernels], nodes, (_UNREGISTERED,))
    parts += section(index, node_blocks(index, nodes), nodes, (_UNREGISTERED,))
    return (
        "// Generated by vtgen-build check: the kernels and Nodes of some ops, for a quick check.\n"
        + "\n".join(parts)
        + "\n"
    )


def select_ops(index: OutputIndex, selected: Iterable[OpSelector]) -> list[str]:
    """The ops with an Autograd kernel each ``--op`` selects (``resolve_ops``)."""
    return resolve_ops(selected, index.kernels_of_op, "no such op has an Autograd kernel")


# -- state for --changed ------------------------------------------------------------------------
def _settings_digest(out: Path, settings: Settings, manual_headers: tuple[str, ...], options: CheckOptions) -> str:
    """Everything but the ops' own code that decides whether a check passes: the one key rule
    (``artifact_key``) over the compiler, the flags, the release, the shared headers' content and the
    digest of the headers compiled against."""
    shared = [out / "FunctionsBase.h", *sorted((out / "vtgen_decls").glob("*.inc"))]
    roots = helper_roots(options.include_dirs, [header_root(options.headers)])
    shared += helper_files(roots, manual_headers, options.manual_header_file, sources=False)
    text = files_text(shared)
    headers = _headers_digest(header_root(options.headers))
    return artifact_key("changed-state", settings.compiler.identity, settings.flags, settings.release, text, [headers])


def _headers_digest(root: Path) -> str:
    """The headers the units compile against (the stubs, or ``--torch-include``'s), as a digest of every
    file's path and stat signature: an upgrade in place, an edit or a touch of any of them changes it.
    (Statting a real torch's ~9,500 headers takes ~60 ms; reading them would take seconds.)"""
    h = hashlib.sha256(str(root.resolve()).encode())
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            h.update(f"{os.path.relpath(path, root)}\0{store.stat_signature(path)}\n".encode())
    return h.hexdigest()


def op_digests(index: OutputIndex, out: Path) -> dict[str, str]:
    headers: dict[str, str] = {}  # Node -> its struct declaration
    for name, spans in index.node_spans.items():
        lines = (out / name).read_text(encoding="utf-8").split("\n")
        headers.update((node, "\n".join(lines[first - 1 : last])) for first, last, node in spans)
    return {op: index.op_digest(op, headers) for op, ks in index.kernels_of_op.items() if ks}


# -- running ------------------------------------------------------------------------------------
def _settings(out: Path, options: CheckOptions, release: str) -> Settings:
    compiler = identify(find_compiler(options.cxx))
    launcher = launcher_argv(options.launcher)
    include = Path(options.torch_include) if options.torch_include else None
    tty = options.progress if options.progress is not None else sys.stdout.isatty()
    return Settings(
        compiler,
        options.std or default_std(include),
        tuple(include_flags(out, options.headers)),
        out / WORK,
        launcher,
        options.jobs,
        options.cache,
        options.pch,
        tty,
        release,
    )


def _unit(source: Path) -> Unit:
    text = source.read_text(encoding="utf-8")
    return Unit(source, shard_prefix(text))


def _changed_ops(out: Path, digests: dict[str, str], settings: str) -> list[str]:
    return changed_ops(read_state(out / STATE, _STATE_KIND, settings), digests)


@dataclass
class _LazyIndex:
    """The output's index, read on first use: a check that compiles nothing never reads it."""

    out: Path
    index: OutputIndex | None = None
    op_digests: dict[str, str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self) -> OutputIndex:
        with self.lock:
            if self.index is None:
                self.index = read_index(self.out)
            return self.index

    def digests(self) -> dict[str, str]:
        """The digest of each op's code (``op_digests``), computed once."""
        if self.op_digests is None:
            self.op_digests = op_digests(self.get(), self.out)
        return self.op_digests

    def formula_after(self, path: str, line: int) -> tuple[str, int] | None:
        return self.get().formula_after(path, line)

    def ops_at(self, path: str, line: int) -> set[str]:
        return self.get().ops_at(path, line)


CHECK_LOCK = f"{WORK}.lock"  # in --out: held by a check from generating to its last compile


def run_check(inputs: Inputs, gen_options: GenerateOptions, options: CheckOptions) -> CheckResult:
    """Generate a check build into ``gen_options.out_dir`` and compile it; see the module doc.

    Another check of the same directory waits: it would rewrite the files this one compiles."""
    find_compiler(options.cxx)  # a compiler that is not there fails before generating
    with locked(Path(gen_options.out_dir), CHECK_LOCK):
        return _run_check_locked(inputs, gen_options, options)


def _run_check_locked(inputs: Inputs, gen_options: GenerateOptions, options: CheckOptions) -> CheckResult:
    start = time.perf_counter()
    # the backend registrations too (an op library's Register<Key>.cpp, for every key its yaml names)
    request = replace(gen_options.request, stub_decls=True, register_backends=(ALL_KEYS,))
    gen_options = replace(gen_options, line_directives=True, request=request)
    generated = generate(inputs, gen_options)
    fault_point("check generated")
    return _check_generated(gen_options, generated, options, start)


def check_generated(gen_options: GenerateOptions, generated: GenerateResult, options: CheckOptions) -> CheckResult:
    """Compile the translation units a build generated (``generated``, in ``gen_options.out_dir``) as they
    ship: nothing is generated again, no check-only file is added (the setuptools hook's check)."""
    find_compiler(options.cxx)
    with locked(Path(gen_options.out_dir), CHECK_LOCK):
        return _check_generated(gen_options, generated, options, time.perf_counter())


def _check_generated(
    gen_options: GenerateOptions, generated: GenerateResult, options: CheckOptions, start: float
) -> CheckResult:
    out = Path(gen_options.out_dir).resolve()
    settings = _settings(out, options, gen_options.request.target.release)
    state_key = _settings_digest(out, settings, gen_options.request.manual_headers, options)
    lazy = _LazyIndex(out)

    ops: list[str] | None = None  # None: every unit
    if options.ops:
        ops = select_ops(lazy.get(), options.ops)
    if options.since is not None:
        chosen = options.since.select(lazy.get())  # None: every op
        if chosen == []:
            seconds = time.perf_counter() - start
            return CheckResult((), (), seconds, generated.seconds, 0, nothing_to_do=True, since=options.since.revision)
        if chosen is not None:
            ops = list(dict.fromkeys([*(ops or []), *chosen]))
    if options.changed:
        digests = lazy.digests()
        changed = _changed_ops(out, digests, state_key)
        if not changed:
            return CheckResult((), (), time.perf_counter() - start, generated.seconds, 0, nothing_to_do=True)
        if len(changed) <= _PARTIAL_LIMIT * len(digests):
            ops = list(dict.fromkeys([*(ops or []), *changed]))

    if ops is not None:
        source = out / WORK / "ops.cpp"
        _write_if_changed(source, _partial_unit(lazy.get(), ops))
        units = [_unit(source)]
    else:  # every translation unit written, whether it holds kernels, Nodes or neither
        units = [_unit(out / name) for name in sorted(generated.outputs) if name.endswith(".cpp")]
    results = compile_units(units, settings, lazy, out)
    failing = sorted(set().union(*(r.ops for r in results))) if results else []
    checked = -1  # unknown: every unit was unchanged, so the index was not read
    if ops is not None or options.changed or not all(r.cached for r in results):  # --changed: its state too
        checked = _record_passed(out, lazy, state_key, ops, results, failing)
    hint = None if _ok(results) else namespace_hint([r.diagnostics for r in results if not r.ok])
    if hint in gen_options.request.using_namespaces:
        hint = None
    seconds = time.perf_counter() - start
    return CheckResult(tuple(results), tuple(failing), seconds, generated.seconds, checked, hint=hint)


def _ok(results: list[UnitResult]) -> bool:
    return all(r.ok for r in results)


def _record_passed(
    out: Path, lazy: _LazyIndex, state_key: str, ops: list[str] | None, results: list[UnitResult], failing: list[str]
) -> int:
    """Remember the digest of every op that passed (for ``--changed``); the number of ops checked."""
    index, digests = lazy.get(), lazy.digests()
    failed_units = {r.unit for r in results if not r.ok}
    if ops is None:
        checked = list(digests)
        passed = {op for op in checked if op not in failing and not _units_of_op(index, op) & failed_units}
    else:
        checked = [op for op in ops if op in digests]
        passed = set() if failed_units else set(checked)
    if passed:
        state = read_state(out / STATE, _STATE_KIND, state_key)
        state.update({op: digests[op] for op in passed})
        write_state(out / STATE, _STATE_KIND, state_key, state)
    return len(checked)


def _units_of_op(index: OutputIndex, op: str) -> set[str]:
    units = {index.kernels[k].unit for k in index.kernels_of_op.get(op, ()) if k in index.kernels}
    for node in index.nodes_of_op(op):
        units |= {b.unit for b in index.node_blocks.get(node, [])}
    return units
