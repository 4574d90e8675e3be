"""Running the Python tier (``python_tier.py`` plans it) and its verdict, per op, at the yaml line.

The child is started first and imports torch while this process plans (it waits for its request);
its rows are the schema child's shape (``records.Entry``).  Each carried op gets one verdict:

- *failed*: a check that entered our kernel of it failed on a gradient mismatch (gradcheck's, the
  adjoint test's, or a batched part's), and torch's own kernels pass that check (the child reran it);
- *passed*: a check entered our kernel and passed, and none failed or raised;
- *not verified by the Python tier*: it could not be carried (``NotCarried``), its translated
  formulas raised (a translation gap, never a verdict on the formula), or no check entered it.

``disagreements`` compares the verdicts with the compiled tier's: a Python-tier pass against a
compiled failure (or the reverse) of the same op is an error naming both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence, Set
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base.errors import Location, VtgenError
from ..base.write import locked, write_atomic
from ..check import CHECK_LOCK, files_text
from ..gradcheck_child.protocol import TierRequest
from ..inputs.files import Inputs
from ..model.schema import OpSelector, op_name
from ..torchlib import TorchInstall, torch_of_answer
from ..worker import Versions, Worker
from ..worker import find as find_worker
from ..worker.client import WorkerProcess
from .formulas import FormulaPlaces
from .python_tier import HELPERS, NotCarried, TierPlan, plan_library_tier, plan_tier, request_of
from .python_tier_helpers import AGREE, HelperProof, without_agree
from .python_tier_reach import reach_targets
from .python_tier_state import TierState
from .records import FAILED, PASSED, Check, Entry, entries_of, read_rows, tier_start

__all__ = [
    "KINDS",
    "LibraryTier",
    "OpVerdict",
    "Reach",
    "TierOptions",
    "TierReport",
    "disagreements",
    "run_python_tier",
]

KINDS = ("backward", "gradgrad", "forward", "adjoint")
WORK = "python-tier"
TORCH_SAID = "torch.json"  # the child's word on the torch it imported (torchlib/probe.py's fields)
_LOOK = 0.02  # seconds between looks for it
TAG = "[python tier]"
NOT_VERIFIED = "not verified"
_MISMATCH = re.compile(
    r"Jacobian (computed with forward mode )?mismatch|failed to compare equal|not reentrant|adjoint mismatch"
    r"|differ from the installed torch|batched grad",
    re.IGNORECASE,
)
# vmap refusing an in-place write into a batched tangent inside our Function's jvp (index_copy_, index_fill_):
# a limit of the Python Function under vmap, not of the formula (torch's own kernels pass that check)
_VMAP_REFUSED = re.compile(r"vmap: aten::\w+_\(self, \*extra_args\) is not possible")
# forward AD refused by the translated Function of an op whose entry has no forward formula (emit.python_autograd)
_NO_FORWARD = re.compile(
    r"forward-mode AD of '[\w.]+' is not implemented by the Python autograd \(its entry has no forward formula"
)
# the batched part raised (not a batched value mismatch): the Python Function could not run under vmap
# there (sum's batched forward AD on a 0-dim sample); a raise is no verdict
_RAISED_UNDER_VMAP = re.compile(r"While computing batched gradients, got:")
Process = subprocess.Popen[bytes] | WorkerProcess
_INPUT = re.compile(r"with respect to input (\d+)")
_OUTPUT = re.compile(r"mismatch for output (\d+)")
_WHAT = {"backward": "backward", "gradgrad": "double-backward", "forward": "forward-AD", "adjoint": "adjoint",
         "fwd_over_rev": "forward-over-reverse"}  # fmt: skip


@dataclass(frozen=True)
class LibraryTier:
    """An op library's own ops through the tier (``--library``): its built library gives the ops and their
    forward kernels, the Python tier their Autograd kernels."""

    library: str  # the shared library its build produced, or a package whose import loads it
    formulas: str | None = None  # its module of Python equivalents of the C++ helpers its formulas call
    helpers: tuple[str, ...] = ()  # the C++ helper files those mirror (in the --changed digests)
    policy_root: str | None = None


class Reach(Enum):
    """Which reach map the checks on arguments captured from the entries reaching each op read
    (``python_tier_reach``): those checks need one."""

    NONE = "none"  # no such checks (an op library's yaml: no entry of PyTorch's reaches its ops)
    CACHED = "cached"  # only a cached map (--op runs: none cached, none run, said)
    COMPUTE = "compute"  # computed when not cached (--coverage of the whole yaml: minutes, once)


@dataclass(frozen=True)
class TierOptions:
    ops: tuple[OpSelector, ...]  # the ops (with their families) to check (``op_selection``)
    python: str | None = None
    pytorch_root: str | None = None  # a checkout holding FunctionsManual.cpp: its helper-calling entries left out
    hints: tuple[str, ...] = ()
    kinds: tuple[str, ...] = KINDS  # the checks run ("agree": our values against torch's own, unedited yaml)
    timeout: int = 300
    batched: bool = True
    allow_unverified: bool = False
    all_checks: bool = False  # default: an op's checks end at its first gradient mismatch
    use_worker: bool = True  # fork the child from the warm worker of the check directory when one is up
    opinfo: bool = True  # the ops' OpInfo entries after the schema samples (not when those already failed)
    max_samples: int = 0  # OpInfo samples per check (0: all)
    library: LibraryTier | None = None  # an op library's yaml (else PyTorch's)
    changed: bool = False  # only the ops changed (or failed) since the last run (python_tier_state)
    reach: Reach = Reach.CACHED  # the checks on arguments captured from the entries reaching each op
    reach_limit: int = 2  # entries per op (the compiled tier's rule: 2 for --op, 1 for --coverage)
    versions: Versions | None = field(default=None, compare=False)  # the caller's, for the worker's staleness


@dataclass(frozen=True)
class OpVerdict:
    op: str
    status: str  # passed | failed | not verified
    location: Location | None
    message: str

    def __str__(self) -> str:
        level = "error" if self.status == FAILED else "note"
        where = f"{self.location}: {level}: " if self.location else f"vtgen-build: {level}: "
        return f"{where}{TAG} {self.message}"


@dataclass
class TierReport:
    verdicts: list[OpVerdict]
    seconds: float = 0.0
    allow_unverified: bool = False
    notes: list[str] = field(default_factory=list)
    entries: dict[str, Location] = field(default_factory=dict)  # op -> its derivatives.yaml entry
    outs: tuple[str, ...] = ()  # the out= overloads planned (no formula runs through them)
    release: str = ""  # the release the yaml was planned for (its policy)
    errors: list[str] = field(default_factory=list)  # entries named after no op that hung or crashed (``_unjudged``)

    def of(self, status: str) -> list[OpVerdict]:
        return [v for v in self.verdicts if v.status == status]

    @property
    def status(self) -> int:
        """The exit status when the Python tier alone answers: 1 a failure, 3 an op it did not verify."""
        if self.of(FAILED) or self.errors:
            return 1
        return 3 if self.of(NOT_VERIFIED) and not self.allow_unverified else 0

    def render(self) -> str:
        counts = ", ".join(f"{len(self.of(s))} {s}" for s in (PASSED, FAILED, NOT_VERIFIED))
        lines = [str(v) for v in self.verdicts] + self.errors + self.notes
        return "\n".join([*lines, f"vtgen-build: {TAG} {counts} in {self.seconds:.1f} s (nothing compiled)"])


def _start(python: str, work: Path, worker: Worker | None) -> tuple[Process, Path, Path]:
    """The child, started before its request exists (it imports torch meanwhile, and says which torch in
    ``TORCH_SAID``); forked by ``worker`` when one is up (torch already imported)."""
    work.mkdir(parents=True, exist_ok=True)
    request, results, said = work / "request.json", work / "results.jsonl", work / "stderr.txt"
    for p in (request, results, work / TORCH_SAID):
        p.unlink(missing_ok=True)
    argv = child_package.command("python_tier", str(request), str(results), str(work / TORCH_SAID))
    if worker is not None:
        return worker.spawn(argv, said, {**os.environ, "PYTHONWARNINGS": "ignore"}), request, results
    with open(said, "wb") as err:
        process = subprocess.Popen([python, *argv], stdout=subprocess.DEVNULL, stderr=err)
    return process, request, results


def _torch_of(process: Process, python: str, work: Path, timeout: float) -> TorchInstall:
    """The torch the child imported, as it said (``TORCH_SAID``): no process of ours asks again."""
    path, end = work / TORCH_SAID, time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            _wait(process, 0.0, work / "stderr.txt")  # its failure, said
        if process.poll() is not None or time.monotonic() > end:
            raise VtgenError(f"{TAG} the checking process did not say which torch it imported")
        time.sleep(_LOOK)
    return torch_of_answer(python, path.read_text(encoding="utf-8", errors="replace").strip())


def _wait(process: Process, timeout: float, said: Path) -> None:
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise VtgenError(f"{TAG} the checking process ran past {timeout:.0f} s and was stopped") from None
    if code != 0:
        text = said.read_text(errors="replace").strip()[-1500:]
        raise VtgenError(f"{TAG} the checking process failed (exit {code}): {text}")


def run_python_tier(inputs: Inputs, out_dir: Path, release: str, options: TierOptions) -> TierReport:
    """Plan, run the child, judge: the Python tier's verdict on each selected op."""
    with locked(out_dir, CHECK_LOCK):
        return _run_locked(inputs, out_dir, release, options)


def _run_locked(inputs: Inputs, out_dir: Path, release: str, options: TierOptions) -> TierReport:
    start = time.perf_counter()
    work = out_dir / ".vtgen-gradcheck" / WORK
    python = options.python or sys.executable
    worker = find_worker(out_dir, python, options.versions) if options.use_worker else None
    process, request, results = _start(python, work, worker)
    notes: list[str] = []
    try:
        plan, state = _planned(inputs, work, release, options)
        if not plan.modules and not plan.not_carried:
            return TierReport([], time.perf_counter() - start, notes=[_NOTHING])
        lib = options.library
        proof = HelperProof.read(work, lib.library, lib.formulas, lib.helpers) if lib is not None else None
        prove = proof is not None and proof.needed(plan) and AGREE not in options.kinds
        kinds = (*options.kinds, AGREE) if prove else options.kinds  # the helpers' proof (python_tier_helpers)
        payload = _request(plan, replace(options, kinds=kinds))
        if options.reach is not Reach.NONE and lib is None:
            reached = reach_targets(plan, out_dir, _torch_of(process, python, work, options.timeout), worker,
                                    options.reach is Reach.COMPUTE, options.reach_limit)  # fmt: skip
            payload = replace(payload, targets=reached.targets)
            notes.append(f"vtgen-build: note: {TAG} {reached.said}")
        write_atomic(request, json.dumps(payload.to_json()))
        _wait(process, options.timeout * max(1, len(plan.samples)) + 120, work / "stderr.txt")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    rows = read_rows(results)
    verdicts = _verdicts(plan, rows, proof, state)
    records = entries_of(rows)
    notes += _unjudged(plan, records, fatal=False)
    errors = _unjudged(plan, records, fatal=True)
    entries = {op: p.entry for op, p in plan.places.items() if p.entry is not None}
    report = TierReport(verdicts, time.perf_counter() - start, options.allow_unverified, entries=entries,
                        outs=plan.outs, notes=notes, release=release, errors=errors)  # fmt: skip
    if plan.outs:
        report.notes.append(
            f"vtgen-build: note: {TAG} no verdict on the out= overloads {', '.join(plan.outs)}: autograd refuses "
            "their calls, so no formula runs through them (the compiled tier checks that they dispatch)"
        )
    return report


_NOTHING = f"vtgen-build: note: {TAG} no op changed or failed since the last run"
_NO_CHECK = "{op}: not verified by the Python tier: no check entered its kernel"
_UNPROVEN = "the Python equivalents of"


def _verdicts(
    plan: TierPlan, rows: list[dict[str, object]], proof: HelperProof | None, state: TierState | None
) -> list[OpVerdict]:
    """``judge``'s verdicts; an op library's with the helpers' proof settled (an op calling an unproven
    helper has none); recorded for ``--changed`` (a failed or unproven op is checked again next time)."""
    records, agreed = without_agree(entries_of(rows)) if proof is not None else (entries_of(rows), {})
    verdicts = judge(plan, records, _install_failures(rows))
    if proof is not None:
        verdicts = _withheld(verdicts, proof.settle(plan, agreed)[1])
    if state is not None:
        redo = {v.op for v in verdicts if v.status == FAILED or _UNPROVEN in v.message}
        state.write(plan.carried | {n.op for n in plan.not_carried}, redo)
    return verdicts


def _withheld(verdicts: list[OpVerdict], why: dict[str, str]) -> list[OpVerdict]:
    """An op calling a helper whose Python equivalent is not proven: no verdict of the Python tier."""

    def withheld(v: OpVerdict) -> OpVerdict:
        text = (
            f"{v.op}: not verified by the Python tier: {why[v.op]} (on them it {v.status}; left to the compiled tier)"
        )
        return replace(v, status=NOT_VERIFIED, message=text)

    return [withheld(v) if v.op in why and v.status in (PASSED, FAILED) else v for v in verdicts]


def _plan(inputs: Inputs, release: str, options: TierOptions) -> TierPlan:
    """PyTorch's yaml: the --op families (required); an op library's: those, else every op."""
    lib = options.library
    if lib is None:
        own_manual = _own_manual(options.pytorch_root)
        return plan_tier(inputs, options.pytorch_root, release, options.ops, options.hints, own_manual)
    return plan_library_tier(inputs, lib.policy_root, release, options.ops, options.hints, lib.formulas)


def _request(plan: TierPlan, options: TierOptions) -> TierRequest:
    """The child's request; an op library's names the library to load and its formulas module (no OpInfo
    entries: PyTorch's tests know none of its ops)."""
    opinfo = options.opinfo and options.library is None and bool(set(options.kinds) & {"backward", "gradgrad",
                                                                                         "forward"})  # fmt: skip
    first = not options.all_checks
    payload = request_of(plan, options.kinds, options.timeout, options.batched, first, opinfo, options.max_samples)
    lib = options.library
    if lib is not None:
        formulas = str(Path(lib.formulas).resolve()) if lib.formulas else None
        payload = replace(payload, library=lib.library, formulas=formulas)
    return payload


def _planned(inputs: Inputs, work: Path, release: str, options: TierOptions) -> tuple[TierPlan, TierState | None]:
    """The plan of the selected ops, and the ``--changed`` record: an op library's plan is cut to the changed
    ops; PyTorch's yaml is planned for the changed families (with the --op ones) alone, chosen before anything
    is translated (``TierState.of_families``)."""
    if not options.changed:
        return _plan(inputs, release, options), None
    if options.library is not None:
        plan = _plan(inputs, release, options)
        state = _state(work, plan, release, options)
        return state.chosen(plan), state
    helpers = [child_package.HERE / f"{HELPERS}.py"]
    state = TierState.of_families(work, inputs, helpers, _words(release, "aten", options))
    families = sorted({*state.changed(), *(op_name(s.name).family for s in options.ops)})
    if not families:
        return TierPlan((), (), frozenset(), (), {}), state
    return _plan(inputs, release, replace(options, ops=tuple(OpSelector("aten", f) for f in families))), state


def _words(release: str, library: str, options: TierOptions) -> list[str]:
    """The ``--changed`` record's settings besides the translator: the release, the library (by content) and
    the options that shape the checks."""
    return [release, library, *options.kinds, f"batched={options.batched}", f"all={options.all_checks}",
            files_text(Path(h) for h in options.hints)]  # fmt: skip


def _state(work: Path, plan: TierPlan, release: str, options: TierOptions) -> TierState:
    """An op library's ``--changed`` record, per op."""
    lib = options.library
    helpers = [Path(h) for h in (*(lib.helpers if lib else ()), *([lib.formulas] if lib and lib.formulas else []))]
    loaded = Path(lib.library) if lib is not None else None
    library = files_text([loaded]) if loaded is not None and loaded.is_file() else (lib.library if lib else "aten")
    return TierState.read(work, plan, helpers, _words(release, library, options))


def _own_manual(pytorch_root: str | None) -> bool:
    from .manual_source import find_manual_source

    return find_manual_source(pytorch_root) is not None


def _ops_of(entry: Entry, check: Check) -> list[str]:
    """The ops a check is a verdict on: a schema-sample row's own op; an OpInfo row's ops of ours it called
    directly and entered; a row through a backward op's forward OpInfo: that op, when it entered it."""
    direct = entry.ops(check.variant)
    if entry.name.endswith(" (python tier)"):
        return list(direct[:1]) or [entry.aten]
    return [op for op in check.hit if op in direct]


def _install_failures(rows: Sequence[dict[str, object]]) -> dict[str, str]:
    """Op -> why the child could not install its kernel (its first row, a ``TierStart``, says; none readable:
    every kernel counted as installed, and each check says what ran)."""
    start = tier_start(rows)
    return dict(start.failed) if start is not None else {}


def judge(plan: TierPlan, records: Sequence[Entry], uninstalled: dict[str, str] | None = None) -> list[OpVerdict]:
    """One verdict per carried op (yaml order of the plan), then the ops not carried."""
    missing = [
        NotCarried(op, f"its kernel could not be installed: {why}", None) for op, why in (uninstalled or {}).items()
    ]
    plan = replace(plan, modules=tuple(m for m in plan.modules if m[0] not in (uninstalled or {})),
                   not_carried=(*plan.not_carried, *missing))  # fmt: skip
    checks: dict[str, list[tuple[Entry, Check]]] = {op: [] for op in plan.carried}
    for entry in records:
        if entry.error or entry.unreadable:  # the entry raised, hung or its row is damaged: no verdict
            broken = Check(
                "backward", "function", FAILED, message=f"the check itself: {entry.error or entry.unreadable}"
            )
            checks.setdefault(entry.name.removesuffix(" (python tier)"), []).append((entry, broken))
        for c in entry.checks:
            for op in _ops_of(entry, c):
                if op in checks:
                    checks[op].append((entry, c))
    verdicts = [_verdict(op, checks[op], plan.places.get(op)) for op, _ in plan.modules]
    alone = {v.op for v in verdicts if v.status == FAILED and not any(c.others for _, c in checks[v.op])}
    verdicts = [_verdict(op, checks[op], plan.places.get(op), alone) for op, _ in plan.modules]
    failed = {op_name(v.op).family for v in verdicts if v.status == FAILED}
    verdicts = [_stopped(v) if not checks[v.op] and op_name(v.op).family in failed else v for v in verdicts]
    verdicts = [_unsampled(v, plan.unsampled) for v in verdicts]
    return verdicts + [_not_carried(n, plan.places.get(n.op)) for n in plan.not_carried]


def _unjudged(plan: TierPlan, records: Sequence[Entry], fatal: bool) -> list[str]:
    """The entries that raised, hung or whose row is damaged and are named after no carried op (an OpInfo's,
    the captured checks' ``via ...``): ``judge`` gives no op their failure, and the ops they would have checked
    may have no other check; said, never dropped.  ``fatal``: those that hung or crashed, in a formula of ours
    as likely as anywhere: errors, the run's failure (as the compiled tier's); else those that raised: notes."""
    level = "error" if fatal else "note"
    return [
        f"vtgen-build: {level}: {TAG} the checks of {e.name.removesuffix(' (python tier)')} gave no verdict: "
        f"{(e.error or e.unreadable)[:300]}"
        for e in records
        if (e.error or e.unreadable) and e.fatal == fatal and e.name.removesuffix(" (python tier)") not in plan.carried
    ]


def _unsampled(v: OpVerdict, unsampled: Sequence[NotCarried]) -> OpVerdict:
    """An op with no schema sample that no other check entered either: the sample's reason is the answer."""
    why = next((n.why for n in unsampled if n.op == v.op), None)
    if why is None or v.message != _NO_CHECK.format(op=v.op):
        return v
    return replace(v, message=f"{v.op}: not verified by the Python tier: {why} (and no other check entered its "
                              "kernel; left to the compiled tier)")  # fmt: skip


def _stopped(v: OpVerdict) -> OpVerdict:
    """An op none of whose checks ran because its family's checks ended at a failure (not ``--all-checks``)."""
    text = f"{v.op}: not reached: its family's checks ended at the failure above (--all-checks runs them all)"
    return replace(v, message=text)


def _not_carried(n: NotCarried, place: FormulaPlaces | None) -> OpVerdict:
    where = n.location or (place.entry if place else None)
    text = f"{n.op}: not verified by the Python tier: {n.why} (left to the compiled tier)"
    return OpVerdict(n.op, NOT_VERIFIED, where, text)


def _verdict(
    op: str, found: list[tuple[Entry, Check]], place: FormulaPlaces | None, failed: Set[str] = frozenset()
) -> OpVerdict:
    """``failed``: the ops whose own checks failed with no other kernel of ours running (``_theirs``)."""
    entry_at = place.entry if place else None
    found = [(e, c) for e, c in found if not _not_applicable(c)]
    for entry, c in found:
        if (
            c.status == FAILED
            and c.ours_ran
            and _MISMATCH.search(c.message)
            and not _RAISED_UNDER_VMAP.search(c.message)
        ):
            theirs = _theirs(op, c, failed, entry_at)
            return theirs or OpVerdict(op, FAILED, _failure_at(entry, c, place), _failure_text(op, entry, c))
    raised = [c for _, c in found if c.status == FAILED or c.why.startswith("raised:")]
    if raised:
        why = raised[0].message or raised[0].why
        text = (
            f"{op}: not verified by the Python tier: its translated formulas raised ({why[:300]}); left to the "
            "compiled tier"
        )
        return OpVerdict(op, NOT_VERIFIED, entry_at, text)
    passed = sorted({c.kind for _, c in found if c.passed_ours}, key=lambda k: KINDS.index(k) if k in KINDS else 9)
    if set(passed) & set(KINDS):  # "agree" alone compares values with torch's own: no check of the formula
        dtypes = sorted({c.dtype for _, c in found if c.passed_ours})
        return OpVerdict(op, PASSED, entry_at, f"{op}: passed ({', '.join(passed)}; {', '.join(dtypes)})")
    return OpVerdict(op, NOT_VERIFIED, entry_at, _NO_CHECK.format(op=op))


def _not_applicable(c: Check) -> bool:
    """A check that tests no formula of the entry through the Python tier: vmap refusing a write into a batched
    tangent; forward AD through an op with no forward formula (torch runs a decomposition of the op there,
    the Python tier refuses: the entry has no forward formula to judge, its backward ones are judged apart)."""
    text = c.message or c.why
    return bool(_VMAP_REFUSED.search(text) or _NO_FORWARD.search(text))


def _theirs(op: str, c: Check, failed: Set[str], entry_at: Location | None) -> OpVerdict | None:
    """A failed check of ``op`` that also ran our kernel of an op whose own checks failed is no verdict on
    ``op`` (``mul.Scalar``'s complex forward-AD check runs ``mul.Tensor``: gradcheck multiplies by 1j)."""
    theirs = sorted(set(c.others) & set(failed) - {op})
    if not theirs:
        return None
    text = (f"{op}: not verified by the Python tier: its failed {_WHAT.get(c.kind, c.kind)} check ({c.dtype}) also "
            f"ran our kernel of {', '.join(theirs)}, which failed on its own")  # fmt: skip
    return OpVerdict(op, NOT_VERIFIED, entry_at, text)


def _failure_at(entry: Entry, c: Check, place: FormulaPlaces | None) -> Location | None:
    """The formula a failed check is at: a forward-AD or adjoint check's forward formula; forward-over-reverse
    through a backward op's forward OpInfo (``source``) differentiates that op's forward formula, an OpInfo's
    own differentiates its backward formulas (as the double backward does)."""
    if place is None:
        return None
    if c.kind in ("forward", "adjoint") or (c.kind == "fwd_over_rev" and entry.source):
        output = _OUTPUT.search(c.message) if c.kind == "forward" else None
        return place.forward_at(int(output.group(1)) if output else None)
    m = _INPUT.search(c.message)
    i = c.input if c.batched else int(m.group(1)) if m else None
    argument = c.positions[i] if i is not None and i < len(c.positions) else None
    return place.backward_at(argument)


def _failure_text(op: str, entry: Entry, c: Check) -> str:
    variant = " (in-place)" if c.variant == "inplace" else ""
    what = _WHAT.get(c.kind, c.kind)
    through = f" through {entry.source}" if entry.source else ""  # an OpInfo's, or a reaching entry's arguments
    said = f"gradcheck failed for {op}{variant} ({c.dtype} sample {c.sample}){through}: {what} check: {c.message[:300]}"
    if entry.reference_error:  # whether torch's own kernels fail it too is unknown: the failure stands
        said += f" (its rerun with torch's own kernels raised: {entry.reference_error})"
    return said


def disagreements(python: TierReport, passed: Sequence[str], failed: Sequence[str]) -> list[str]:
    """The ops the two tiers judged differently (both gave a verdict): errors naming both results."""
    found = []
    for v in python.verdicts:
        compiled = FAILED if v.op in failed else PASSED if v.op in passed else None
        if compiled is not None and v.status in (PASSED, FAILED) and compiled != v.status:
            where = f"{v.location}: " if v.location else "vtgen-build: "
            found.append(
                f"{where}error: the tiers disagree on {v.op}: the Python tier {v.status}, the compiled tier {compiled} "
                "(a translator or helper bug, or a library built from other formulas: neither answer is taken)"
            )
    return found
