"""The schema-sample source of ``check --gradcheck``: plan the samples, run them in a child.

Used for the ops no OpInfo check entered (PyTorch's yaml) and for every op of an op library
(``--library``: the shared library the user's build produced, or a package that loads it).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base.errors import VtgenError
from ..base.write import locked
from ..check import CHECK_LOCK
from ..gradcheck_child.protocol import SchemaRequest
from ..inputs.files import Inputs
from ..model.schema import OpSelector, resolve_ops
from ..worker import Versions, Worker
from ..worker import find as find_worker
from .formulas import formula_places
from .hints import BUILTIN, Hints, load_hints
from .records import NOT_RUN, Entry, read_entries
from .reference import REFERENCE_DIR, judge_schema_failures
from .report import Report
from .schema_samples import NOTHING, OpSamples, plan_samples
from .supervise import Child, run_to_end
from .verdict import REASONS, Unverified

__all__ = [
    "LibraryOptions",
    "SampleSource",
    "library_ops",
    "run_library",
    "run_schema_child",
    "sample_source",
    "schema_fallback",
    "schema_whys",
]


@dataclass(frozen=True)
class SampleSource:
    """The samples of the selected ops: those that can run, and the ops that cannot (why)."""

    plans: tuple[OpSamples, ...]
    not_verified: tuple[tuple[str, str], ...]  # (op, reason)

    def ops(self) -> list[str]:
        """Every op the samples run: the functional op, its in-place and out= ops."""
        found = [o for p in self.plans for o in (p.op, p.inplace, p.out) if o]
        return found + [op for op, _ in self.not_verified]


def _hints(inputs: Inputs, hint_files: Sequence[str]) -> Hints:
    builtin = [str(BUILTIN)] if inputs.namespace == "aten" else []
    return load_hints([*builtin, *hint_files])


def sample_source(inputs: Inputs, hint_files: Sequence[str], ops: Sequence[str] | None) -> SampleSource:
    """Plan the schema samples of ``ops`` (None: every differentiable op) with the hints files."""
    from ..model import load_model
    from ..plan.kernel import build_plan
    from ..plan.policy import load_policy

    kernels = build_plan(load_model(inputs), load_policy()).kernels
    hints = _hints(inputs, hint_files)
    # the user's files name ops of these inputs; the built-in one names PyTorch's, of which a
    # checkout-shaped test or a trimmed yaml may hold only some
    load_hints(hint_files).check_ops(k.op for k in kernels)
    planned = plan_samples(kernels, hints, ops)
    ready = tuple(p for p in planned if p.why_not is None)
    missing = tuple((p.op, p.why_not) for p in planned if p.why_not is not None and p.why_not != NOTHING)
    return SampleSource(ready, missing)


def run_schema_child(
    python: str,
    library: str,
    plans: Sequence[OpSamples],
    work: Path,
    timeout: int,
    batched: bool = True,
    worker: Worker | None = None,
    transforms: bool = False,
) -> list[Entry]:
    """Run the plans in a child Python (``batched``: with the checks' batched parts; ``transforms``: and
    torch.func over each op); restart it past an op that crashes it."""

    def request(skip: list[str]) -> SchemaRequest:
        return SchemaRequest(library, tuple(plans), timeout, tuple(skip), batched, transforms)

    work.mkdir(parents=True, exist_ok=True)
    paths = (work / "schema-request.json", work / "schema-results.jsonl", work / "schema-stderr.txt")
    what = "the schema-sample gradcheck process"
    run_to_end(
        Child(python, tuple(child_package.command("schema_child")), *paths, what, "op", timeout, worker), request
    )
    return read_entries(paths[1])


def library_ops(selected: Sequence[OpSelector], known: Sequence[str]) -> list[str] | None:
    """The ops the ``--op`` selectors select among the library's (``resolve_ops``); None: all."""
    if not selected:
        return None
    return resolve_ops(selected, known, "the library has no differentiable op of that name")


@dataclass(frozen=True)
class LibraryOptions:
    """``check --gradcheck --library``: check an op library's own built library on schema samples."""

    library: str  # the shared library its build produced, or a package that loads it
    ops: tuple[OpSelector, ...] = ()  # these ops (``op_selection``); (): every differentiable op
    hints: tuple[str, ...] = ()  # sample hints files besides the built-in one
    python: str | None = None  # the Python whose torch is used (default: this one)
    timeout: int = 300  # seconds per op's schema samples
    batched: bool = True  # the batched (vmap) part of each check
    allow_unverified: bool = False  # a selected op no passing check entered does not fail the run
    use_worker: bool = True  # run the child through the warm worker of --out when one is up (``worker``)
    versions: Versions | None = field(default=None, compare=False)  # the caller's, for the worker's staleness


def run_library(inputs: Inputs, work: Path, release: str, policy_root: str | None, options: LibraryOptions) -> Report:
    """``check --gradcheck --library``: every (or each named) differentiable op of an op library.

    Holds the check lock of ``--out`` (``work``'s parent) as ``run_gradcheck`` does: the schema request and
    results files under ``work`` are one run's at a time, so concurrent runs on one ``--out`` cannot read each
    other's verdicts."""
    with locked(work.parent, CHECK_LOCK):
        return _run_library_locked(inputs, work, release, policy_root, options)


_NO_NAMESPACE = (
    "--library: the ops would be looked up in namespace 'aten' (no --namespace given, and the yaml names none): "
    "pass the namespace the library registers its ops in (its TORCH_LIBRARY / STABLE_TORCH_LIBRARY name, "
    "vtgen_generate's NAMESPACE){guess}"
)


def _namespace_guess(library: str) -> str:
    """A package named like its ops' namespace (``vtstable``): said as the likely ``--namespace``."""
    if os.sep in library or library.endswith((".so", ".dylib", ".dll")):
        return ", e.g. --namespace mylib"
    return f", e.g. --namespace {library.partition('.')[0]}"


def _run_library_locked(
    inputs: Inputs, work: Path, release: str, policy_root: str | None, options: LibraryOptions
) -> Report:
    start = time.perf_counter()
    library, names, hint_files = options.library, options.ops, options.hints
    if os.sep in library and not Path(library).is_file():
        raise VtgenError(f"--library {library}: no such file (build the library first)")
    every = sample_source(inputs, hint_files, None)
    if library != "torch" and any(p.namespace == "aten" for p in every.plans):  # torch: PyTorch's own ops
        raise VtgenError(_NO_NAMESPACE.format(guess=_namespace_guess(library)))
    work.mkdir(parents=True, exist_ok=True)
    source = sample_source(inputs, hint_files, library_ops(names, every.ops()))
    places = formula_places(inputs, work, release, policy_root)
    python = options.python or sys.executable
    worker = find_worker(work.parent, python, options.versions) if options.use_worker and source.plans else None
    records = (
        run_schema_child(python, library, source.plans, work, options.timeout, options.batched, worker, True)
        if source.plans
        else []
    )
    seconds = time.perf_counter() - start
    report = Report.from_results(records, source.ops(), {}, places, None, seconds)
    report.not_run = []  # said as not verified, with the reason
    report.schema_only = True
    report.no_kernel = _without_kernel(records)
    done = set(report.passed_ops) | set(report.failed_ops) | {op for op, _ in report.no_kernel}
    whys = schema_whys(records)  # the op's own account: the sample it rejected and why (std::bad_alloc, ...)
    missing = [Unverified(op, why) for op, why in source.not_verified]
    missing += [
        Unverified(op, whys[op]) if op in whys else Unverified(op, REASONS[4], "no schema sample entered our kernel")
        for op in source.ops()
        if op not in done
    ]
    report.unverified = sorted({u.op: u for u in missing}.values(), key=lambda u: u.op)
    report.accept_unverified = options.allow_unverified
    return report


def _without_kernel(records: Sequence[Entry]) -> list[tuple[str, str]]:
    """(op, why) of the variants the library registers no Autograd kernel for: no formula of ours runs there
    (a stable-ABI library's Python autograd leaves out= variants out), so "our kernel never ran" cannot apply."""
    found = {op: c.why for r in records for c in r.checks if c.no_kernel for op in r.ops(c.variant)}
    return sorted(found.items())


def _verified_by(records: Sequence[Entry]) -> set[str]:
    """Ops a passing check of their backward formulas tested directly (the op its entry calls, our kernel
    entered): an op entered only inside another op's decomposition had its formula run on arguments no check
    chose, so coverage does not count it and its schema samples still run; so do the ops only a forward-AD
    check verified (``native_group_norm``, whose OpInfo backward check PyTorch's own kernels fail)."""
    return {
        op
        for entry in records
        for c in entry.checks
        if c.passed_ours and (c.kind == "backward" or (entry.source and c.kind == "gradgrad"))
        for op in entry.ops(c.variant)
    }


def schema_fallback(
    inputs: Inputs,
    hint_files: Sequence[str],
    selected: Sequence[str],
    registered: Sequence[str],
    earlier: Sequence[Entry],
    run: tuple[str, str, Path, int, bool],
    worker: Worker | None = None,
) -> tuple[list[Entry], dict[str, str]]:
    """Schema samples for the selected ops no earlier check verified (``run``: python, library, work, timeout,
    batched).

    Returns the child's records and, for the ops it cannot sample, ``not verified`` with the reason.
    """
    done = _verified_by(earlier)
    rest = [op for op in selected if op not in done and op in set(registered)]
    if not rest:
        return [], {}
    source = sample_source(inputs, hint_files, rest)
    plans = [p for p in source.plans if p.op in set(registered)]
    python, library, work, timeout, batched = run
    records = run_schema_child(python, library, plans, work, timeout, batched, worker) if plans else []

    def theirs(ops: set[str]) -> list[Entry]:  # the same samples with PyTorch's own kernels (no library loaded)
        again = [p for p in plans if p.op in ops]
        return run_schema_child(python, "torch", again, work / REFERENCE_DIR / "schema", timeout, batched, worker)

    records = judge_schema_failures(records, theirs)
    return records, {op: why for op, why in source.not_verified if op in set(rest)}


_NOT_A_REASON = ("no forward formula", "no inplace variant")


def schema_whys(records: Sequence[Entry]) -> dict[str, str]:
    """Op → why its schema samples verified nothing (the op's own account: the sample it rejected, a sparse
    result), as one of ``REASONS`` followed by that account."""
    found: dict[str, str] = {}
    for r in records:
        if not r.schema or any(c.passed_ours for c in r.checks):
            continue
        whys = [c.why for c in r.checks if c.status == NOT_RUN]
        why = next((w for w in whys if w and not w.startswith(_NOT_A_REASON)), "")
        if why:
            found[r.aten] = why if why.startswith(REASONS[:4]) else f"{REASONS[4]}: {why}"
    return found
