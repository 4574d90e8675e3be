"""What a gradcheck run found, told where it can be fixed: failures at the formula's yaml line."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..base.errors import Location
from .formulas import FormulaPlaces
from .records import FAILED, NOT_RUN, PASSED, Check, Entry, FuncChecks
from .verdict import UNVERIFIED, Unverified

if TYPE_CHECKING:
    from .library import LibraryBuild

__all__ = ["NO_ENTRY", "STOPPED", "Failure", "Report"]

NO_ENTRY = "no OpInfo check entered its kernel (no OpInfo entry for it)"
STOPPED = "not reached: the run stopped at the first failure confirmed as ours (--all-checks runs every check)"

_INPUT = re.compile(r"with respect to input (\d+)")
_OUTPUT = re.compile(r"mismatch for output (\d+)")
_KINDS = ("backward", "forward", "gradgrad", "fwd_over_rev")
# torch.func's checks (gradcheck_child/transforms.py CHECKS) as the report's columns name them
_FUNC_COLUMNS = (
    ("vmap", "vmap = loop"), ("grad", "grad"), ("vjp", "vjp"), ("jvp", "jvp"), ("jacrev", "jacrev"),
    ("jacfwd", "jacfwd"), ("hessian", "hessian"), ("vmap(grad)", "per-sample grads"), ("vmap(jvp)", "vmap(jvp)"),
    ("vmap(vjp)", "vmap(vjp)"),
)  # fmt: skip
_FORWARD_MODE = ("jvp", "jacfwd", "hessian", "vmap(jvp)")
_WHAT = {
    "backward": "backward",
    "forward": "forward-AD",
    "gradgrad": "double-backward",
    "fwd_over_rev": "forward-over-reverse",
}


@dataclass(frozen=True)
class Failure:
    location: Location | None
    message: str
    op: str | None

    def __str__(self) -> str:
        return f"{self.location}: error: {self.message}" if self.location else f"vtgen-build: error: {self.message}"


def _failure(entry: Entry, check: Check, places: dict[str, FormulaPlaces]) -> Failure:
    kind, hit, direct = check.kind, check.hit, entry.ops(check.variant)
    op = hit[0] if hit and direct else None
    text = check.message
    if check.status == FAILED:
        m = _INPUT.search(text)
        i = check.input if check.batched else int(m.group(1)) if m else None
        argument = check.positions[i] if i is not None and i < len(check.positions) else None
        what = f"{_WHAT[kind]} Jacobian mismatch for input {i}" if m and "mismatch" in text else f"{_WHAT[kind]} check"
        if check.batched:
            which = f" for input {i}" if i is not None and kind == "backward" else ""
            what = f"batching failure of the {_WHAT[kind]} formula{which} under vmap (its values are right)"
        head = f"gradcheck failed for {entry.name}{' (in-place)' if check.variant == 'inplace' else ''}"
        message = f"{head} ({check.dtype} sample {check.sample}): {what}: {text[:300]}"
    else:
        argument = None
        message = f"{entry.name} ({check.dtype}): {check.test} passed but our kernel of {direct[0]} never ran"
    place = places.get(op) if op else None
    where = None
    if place is not None:
        output = _OUTPUT.search(text) if check.status == FAILED else None
        if kind == "forward" or (kind == "fwd_over_rev" and entry.source):  # a backward op's forward formula
            where = place.forward_at(int(output.group(1)) if output else None)
        else:
            where = place.backward_at(argument)
    if op is None and hit:
        message += f" (through our kernels of {', '.join(hit[:6])})"
    return Failure(where, message, op)


def _func_failure(entry: str, func: FuncChecks, check: str, detail: str, places: dict[str, FormulaPlaces]) -> Failure:
    """A torch.func check of ``func.op`` that failed: at its entry's forward formula (forward-mode checks), its
    backward formula (the others), or, for vmap itself (the batching rule or PyTorch's loop), at no formula."""
    op = func.op
    place = places.get(op) or places.get(entry)
    where = None
    if place is not None and check != "vmap":
        where = place.forward_at(None) if check in _FORWARD_MODE else place.backward_at(None)
    how = "its generated batching rule" if func.vmap == "rule" else "PyTorch's fallback loop"
    sample = f"float64 sample {func.sample}" + (f": {func.case}" if func.case else "")
    message = f"torch.func {check} of {op} (vmap through {how}; {sample}) failed: {detail[:300]}"
    return Failure(where, message, op)


@dataclass
class Report:
    seconds: float
    library: LibraryBuild | None = None
    entries: int = 0
    schema_entries: int = 0  # ops checked on schema-driven samples (schema_run.py), not OpInfo entries
    schema_passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    schema_failed: int = 0
    passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    passed_direct: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))  # the OpInfo's own op
    failures: list[Failure] = field(default_factory=list)
    failed_entries: int = 0
    errors: list[str] = field(default_factory=list)  # entries that raised (a crash or a hang is a failure)
    passed_ops: list[str] = field(default_factory=list)
    failed_ops: list[str] = field(default_factory=list)
    not_run: list[tuple[str, str]] = field(default_factory=list)  # (op, why)
    notes: list[str] = field(default_factory=list)  # e.g. where the helpers libtorch hides came from
    checked: list[tuple[str, str]] = field(default_factory=list)  # (op, what ran on which samples): --verbose
    # (entry, a passed check whose batched (vmap) part could not run, and why): printed as notes
    unbatched: list[tuple[str, str]] = field(default_factory=list)
    nothing: bool = False
    phases: tuple[tuple[str, float], ...] = ()  # (what, seconds): where the run's time went
    # checks of an op on the arguments captured from the entries reaching it (``capture.py``)
    captured: int = 0
    captured_passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    captured_failed: int = 0
    unverified: list[Unverified] = field(default_factory=list)  # selected ops no passing check entered
    accept_unverified: bool = False  # --allow-unverified
    schema_only: bool = False  # an op library's run (--library): schema samples only, no OpInfo entries
    # (op, why): variants with no Autograd kernel of ours to verify (a stable library's out= ops): neither
    # passed nor unverified, said as such
    no_kernel: list[tuple[str, str]] = field(default_factory=list)
    func: list[FuncChecks] = field(default_factory=list)  # torch.func over each op: --library

    @property
    def ok(self) -> bool:
        return not self.failures and (self.accept_unverified or not self.unverified)

    @property
    def status(self) -> int:
        """0, 1 (a check failed) or ``UNVERIFIED`` (a selected formula went unchecked)."""
        if self.failures:
            return 1
        return UNVERIFIED if self.unverified and not self.accept_unverified else 0

    @classmethod
    def nothing_to_do(cls, seconds: float, why: str = "no op changed or failed since the last run") -> Report:
        return cls(seconds, nothing=True, notes=[why])

    @classmethod
    def from_results(
        cls,
        records: Sequence[Entry],
        ops: Iterable[str],
        excluded: dict[str, str],
        places: dict[str, FormulaPlaces],
        library: LibraryBuild | None,
        seconds: float,
        autograd_ops: set[str] | None = None,  # ops registered for the Autograd key (None: all)
        unreached: str = NO_ENTRY,  # why an op no check entered was not run
    ) -> Report:
        report = cls(seconds, library)
        ran: set[str] = set()
        bad: set[str] = set()
        for entry in records:
            report._add_entry(_normalized(entry, autograd_ops), places, ran, bad)
        for op in dict.fromkeys(ops):
            if op in excluded:
                report.not_run.append((op, excluded[op]))
            elif op in bad:
                report.failed_ops.append(op)
            elif op in ran:
                report.passed_ops.append(op)
            else:
                report.not_run.append((op, unreached))
        return report

    def _add_entry(self, entry: Entry, places: dict[str, FormulaPlaces], ran: set[str], bad: set[str]) -> None:
        if entry.unreadable:  # a result we cannot read may hide a failure
            message = f"unreadable result line {entry.name} of the gradcheck process: {entry.unreadable!r}"
            self.failures.append(Failure(None, message, None))
            return
        if entry.error and entry.fatal:  # a crash, a hang or an exit in a kernel: the op failed, whatever else
            self.failures.append(Failure(None, f"{entry.name}: {entry.error}", entry.aten or None))
            if entry.aten:
                bad.add(entry.aten)
            return
        if entry.error:
            self.errors.append(f"{entry.name}: {entry.error}")
            return
        for func in entry.func:
            self.func.append(func)
            for check, detail in func.failed():
                self.failures.append(_func_failure(entry.aten, func, check, detail, places))
                bad.add(func.op)
        checks = [c for c in entry.checks if c.status != NOT_RUN]
        if not checks:
            return
        by_capture, by_schema = bool(entry.source), entry.schema
        apart = by_capture or by_schema  # counted apart from the OpInfo entries run by name
        self.entries += not apart
        self.captured += by_capture
        self.schema_entries += by_schema
        passed = self.captured_passed if by_capture else self.schema_passed if by_schema else self.passed
        for c in checks:
            samples = f"{c.samples} samples" if c.status != FAILED else f"sample {c.sample}"
            what = f"{c.kind} ({c.variant}, {c.dtype or 'default dtype'}, {samples}): {c.status}"
            self.checked.append((entry.name, what))
            if c.status == PASSED and c.unbatched:
                told = f"{_WHAT[c.kind]} check ({c.variant}, {c.dtype}) passed; {c.unbatched}"
                self.unbatched.append((entry.name, told))
        failed = False
        for kind in _KINDS:
            mine = [c for c in checks if c.kind == kind]
            wrong = [c for c in mine if c.status == FAILED or _never_ran(entry, c)]
            for c in wrong:
                self.failures.append(_failure(entry, c, places))
                bad.update(c.hit if entry.ops(c.variant) else ())
            if any(c.passed_ours for c in mine) and not wrong:
                passed[kind] += 1
                direct = any(entry.ops(v) for v in ("function", "inplace"))
                self.passed_direct[kind] += direct and not apart
            failed = failed or bool(wrong)
            for c in mine:
                if c.passed_ours and entry.ops(c.variant):
                    ran.update(c.hit)
        self.failed_entries += failed and not apart
        self.captured_failed += failed and by_capture
        self.schema_failed += failed and by_schema

    def render(self, verbose: bool = False) -> str:
        if self.nothing:
            return f"vtgen-build check --gradcheck: {self.notes[0]}, nothing checked ({self.seconds:.1f}s)"
        lines = [str(f) for f in self.failures]
        b = self.library
        if b is not None:
            cached = "linked" if b.linked else "cached"
            lines.append(
                f"vtgen-build check --gradcheck: library of {len(b.registered)} kernels "
                f"({b.units} units, {b.compiled} compiled now, {cached}); total {self.seconds:.1f}s"
            )
            if self.phases:
                lines.append("  time: " + ", ".join(f"{what} {seconds:.1f}s" for what, seconds in self.phases))
            if b.bound:
                lines.append(f"  calling {len(b.bound)} helpers libtorch hides, bound from its symbol table")
        lines += self.notes
        if not self.schema_only:
            lines += self._reach_lines()
        if self.schema_entries or self.schema_only:
            q = self.schema_passed
            lines.append(
                f"ops checked on samples made from their schema: {self.schema_entries}; passed backward "
                f"{q['backward']}, forward-AD {q['forward']}, gradgrad {q['gradgrad']}; failed {self.schema_failed}"
            )
        if verbose:
            lines += [f"  checked: {op}: {what}" for op, what in self.checked]
        lines += self._func_lines()
        lines.append(f"ops: passed {len(self.passed_ops)}, failed {len(self.failed_ops)}, not run {len(self.not_run)}")
        lines += [f"  not run: {op}: {why}" for op, why in self.not_run]
        lines += [f"  note: {name}: {what}" for name, what in self.unbatched]
        lines += [f"  error: {e}" for e in self.errors]
        lines += [f"  not verified: {u}" for u in self.unverified]
        lines += [f"  no autograd kernel of ours: {op}: {why}" for op, why in self.no_kernel]
        lines.append(self._verdict())
        return "\n".join(lines)

    def _func_lines(self) -> list[str]:
        """torch.func over each op: one table row per op, then why a check did not apply."""
        if not self.func:
            return []
        lines = [
            "torch.func over each op (float64, each schema sample it takes: a row per sample where it takes several; "
            "vmap: rule = the op's batching rule, checked with PyTorch's fallback off; fallback = PyTorch's loop):",
            "  | op | vmap | " + " | ".join(title for _, title in _FUNC_COLUMNS) + " |",
            "  |" + "---|" * (len(_FUNC_COLUMNS) + 2),
        ]
        whys: list[str] = []
        rows_of = Counter(func.op for func in self.func)
        for func in self.func:
            op = func.op if rows_of[func.op] == 1 else f"{func.op} ({func.case})"
            verdicts = {name: verdict for name, verdict, _ in func.checks}
            cells = [verdicts.get(name, "-") for name, _ in _FUNC_COLUMNS]
            lines.append(f"  | {op} | {func.vmap} | " + " | ".join(cells) + " |")
            if func.why:
                whys.append(f"  torch.func not run: {op}: {func.why}")
            by_detail: dict[str, list[str]] = {}
            for name, verdict, detail in func.checks:
                if verdict in ("n/a", "no rule"):
                    by_detail.setdefault(f"{verdict}: {detail[:160]}", []).append(name)
            whys += [f"  {told.partition(':')[0]}: {op}: {', '.join(names)}: {told.partition(': ')[2]}"
                     for told, names in by_detail.items()]  # fmt: skip
        every = [verdict for func in self.func for _, verdict, _ in func.checks]
        counts = ", ".join(f"{every.count(v)} {v}" for v in ("ok", "FAIL", "n/a", "no rule") if every.count(v))
        rows = f"{len(rows_of)} ops" + (f", {len(self.func)} samples" if len(self.func) > len(rows_of) else "")
        return [*lines, *whys, f"torch.func: {rows}; {counts or 'no check ran'}"]

    def _reach_lines(self) -> list[str]:
        lines: list[str] = []
        p = self.passed
        lines.append(
            f"OpInfo entries run by name: {self.entries}; passed backward {p['backward']}, forward-AD {p['forward']}, "
            f"gradgrad {p['gradgrad']}, forward-over-reverse {p['fwd_over_rev']}; failed {self.failed_entries}"
        )
        d = self.passed_direct
        lines.append(
            f"  of these, testing an op of ours directly: backward {d['backward']}, forward-AD {d['forward']}, "
            f"gradgrad {d['gradgrad']}, forward-over-reverse {d['fwd_over_rev']} (the others are composites whose "
            "decomposition entered our kernels)"
        )
        c = self.captured_passed
        lines.append(
            f"ops checked on the arguments their samples passed them: {self.captured} (op, sample) pairs; passed "
            f"backward {c['backward']}, forward-AD {c['forward']}, gradgrad {c['gradgrad']}, forward-over-reverse "
            f"{c['fwd_over_rev']}; failed {self.captured_failed}"
        )
        return lines

    def _verdict(self) -> str:
        if self.failures:
            return f"FAILED: {len(self.failures)} failing checks"
        if self.unverified:
            n = len(self.unverified)
            how = "accepted: --allow-unverified" if self.accept_unverified else "--allow-unverified accepts them"
            return f"NOT VERIFIED: {n} selected ops with a formula no passing check entered ({how})"
        if not self.passed_ops:
            return "NOTHING CHECKED: no selected op has a formula to verify"
        return f"OK: {len(self.passed_ops)} ops verified"


def _normalized(entry: Entry, autograd_ops: set[str] | None) -> Entry:
    """An entry whose own ops count only when registered for dense CPU tensors (the Autograd key).

    A kernel registered for AutogradNestedTensor alone never runs for an OpInfo's samples.
    """
    if autograd_ops is None or entry.direct is None:
        return entry
    direct = tuple((v, tuple(op for op in ops if op in autograd_ops)) for v, ops in entry.direct)
    registered = replace(entry, direct=direct)
    checks = []
    for c in entry.checks:
        if entry.ops(c.variant) and not registered.ops(c.variant) and not c.ours_ran:
            c = replace(c, status=NOT_RUN, why="our kernel is registered for another dispatch key only")
        checks.append(c)
    return registered.with_checks(checks)


def _never_ran(entry: Entry, check: Check) -> bool:
    """A check that passed although our kernel of the op it tests was never entered: not a pass."""
    return check.status == PASSED and not check.ours_ran and bool(entry.ops(check.variant))
