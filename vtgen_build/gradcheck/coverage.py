"""Formula coverage (``check --gradcheck --coverage``): which derivatives.yaml formulas ran in a passing check.

Per derivatives.yaml entry: each backward formula (per input) and each forward formula, the
check it ran inside (a check passes only when our kernel of the op ran, proven by its
counter), or why none did (``verdict.REASONS``).  The figure: the share of entries with a CPU
kernel whose every backward formula ran.  Kept as a table on stdout and a JSON file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..base.errors import Location
from .formulas import FormulaPlaces
from .records import Entry
from .verdict import REASONS, Unverified

__all__ = ["FAILED", "EntryCoverage", "FormulaRun", "coverage", "render", "to_json"]

FAILED = "a check of it failed"  # not a reason it could not run: a failure (never on the unmodified yaml)
_NO_CPU = frozenset(REASONS[:2])  # needs another backend, or sparse / quantized / nested inputs


@dataclass(frozen=True)
class FormulaRun:
    kind: str  # "backward" or "forward"
    inputs: tuple[str, ...]  # the inputs a backward formula computes (forward: ())
    where: Location
    check: str | None  # the passing check it ran inside, None: it did not run


@dataclass(frozen=True)
class EntryCoverage:
    where: Location  # the derivatives.yaml entry
    ops: tuple[str, ...]  # our kernels whose formulas these are
    formulas: tuple[FormulaRun, ...]
    reason: str | None  # why a formula did not run (None: every one did): one of ``verdict.REASONS``
    detail: str = ""  # the op's own account of it (the sample the op rejected, the hint's ``skip``)

    @property
    def backward_covered(self) -> bool:
        backward = [f for f in self.formulas if f.kind == "backward"]
        return bool(backward) and all(f.check for f in backward)

    @property
    def has_cpu_kernel(self) -> bool:
        return self.reason not in _NO_CPU


def _ran(records: Iterable[Entry]) -> dict[tuple[str, str], dict[str, str]]:
    """(op, kind) → differentiated input ("*": every input) → the first passing check it ran in."""
    ran: dict[tuple[str, str], dict[str, str]] = {}
    for entry in records:
        for c in entry.checks:
            if not c.passed_ours or c.kind not in ("backward", "forward"):
                continue
            for op in entry.ops(c.variant):
                found = ran.setdefault((op, c.kind), {})
                for name in c.inputs or ("*",):
                    found.setdefault(name, f"{entry.name} {c.kind} {c.dtype}".strip())
    return ran


def _check_of(
    ran: dict[tuple[str, str], dict[str, str]], ops: Sequence[str], kind: str, inputs: Sequence[str]
) -> str | None:
    for op in ops:
        found = ran.get((op, kind), {})
        if "*" in found:
            return found["*"]
        if inputs and all(name in found for name in inputs):
            return found[inputs[0]]
        if kind == "forward" and found:
            return next(iter(found.values()))
    return None


def _fixed(reason: str, detail: str) -> tuple[str, str]:
    """The reason as one of ``REASONS`` (the rest of a longer one goes to the detail)."""
    fixed = next((r for r in REASONS if reason.startswith(r)), REASONS[4])
    rest = reason.removeprefix(fixed).lstrip(": ") if reason.startswith(fixed) else reason
    return fixed, "; ".join(part for part in (rest, detail) if part)


def coverage(
    places: Mapping[str, FormulaPlaces],
    records: Iterable[Entry],
    unverified: Iterable[Unverified],
    failed: Iterable[str] = (),
) -> list[EntryCoverage]:
    """Every derivatives.yaml entry with a formula of ours, in yaml order (``failed``: ops a check failed)."""
    ran = _ran(records)
    why = {u.op: u for u in unverified}
    wrong = set(failed)
    by_entry: dict[Location, list[str]] = {}
    for op, place in sorted(places.items()):
        if place.entry is not None and not place.out:
            by_entry.setdefault(place.entry, []).append(op)
    found: list[EntryCoverage] = []
    for where, ops in sorted(by_entry.items(), key=lambda item: (item[0].file, item[0].line)):
        place = places[ops[0]]
        runs = [
            FormulaRun("backward", names, at, _check_of(ran, ops, "backward", names))
            for names, at in place.backward
            if set(names) & set(place.differentiable)
        ]
        runs += [FormulaRun("forward", (), at, _check_of(ran, ops, "forward", ())) for at in place.forward]
        missing = [f for f in runs if f.check is None]
        reason, detail = None, ""
        if missing:
            told = next((why[op] for op in ops if op in why), None)
            reason, detail = _fixed(told.reason, told.detail) if told else (REASONS[4], "")
            if wrong & set(ops):
                reason, detail = FAILED, ", ".join(sorted(wrong & set(ops)))
        found.append(EntryCoverage(where, tuple(ops), tuple(runs), reason, detail))
    return found


def figure(entries: Sequence[EntryCoverage]) -> tuple[int, int]:
    """(entries with a CPU kernel and a backward formula whose every backward formula ran, such entries)."""
    eligible = [e for e in entries if e.has_cpu_kernel and any(f.kind == "backward" for f in e.formulas)]
    return sum(e.backward_covered for e in eligible), len(eligible)


def render(entries: Sequence[EntryCoverage], by_name: Sequence[EntryCoverage] = ()) -> str:
    """The figure, the uncovered entries counted by reason; ``by_name``: the same run's OpInfo-by-name checks alone."""
    covered, eligible = figure(entries)
    share = 100.0 * covered / eligible if eligible else 0.0
    lines = [
        f"formula coverage: {covered} of {eligible} entries with a CPU kernel ran every backward formula ({share:.1f}%)"
    ]
    counts: dict[str, int] = {}
    for e in entries:  # the entries the figure counts against: a backward formula that did not run
        if e.reason and not e.backward_covered and any(f.kind == "backward" for f in e.formulas):
            counts[e.reason] = counts.get(e.reason, 0) + 1
    if by_name:
        alone, _ = figure(by_name)
        lines.append(
            f"  by the OpInfo entries named after the op alone: {alone} ({100.0 * alone / max(eligible, 1):.1f}%)"
        )
    lines += [f"  not covered: {n:4d} entries: {reason}" for reason, n in sorted(counts.items())]
    ran = sum(1 for e in entries for f in e.formulas if f.check)
    total = sum(len(e.formulas) for e in entries)
    lines.append(f"  formulas run: {ran} of {total} (backward per input and forward)")
    return "\n".join(lines)


def to_json(entries: Sequence[EntryCoverage]) -> str:
    covered, eligible = figure(entries)
    rows = [
        {
            "entry": f"{e.where.file}:{e.where.line}",
            "ops": list(e.ops),
            "covered": e.backward_covered,
            "reason": e.reason,
            "detail": e.detail,
            "formulas": [
                {"kind": f.kind, "inputs": list(f.inputs), "line": f.where.line, "check": f.check} for f in e.formulas
            ],
        }
        for e in entries
    ]
    return json.dumps({"covered": covered, "eligible": eligible, "entries": rows}, indent=1, sort_keys=True) + "\n"
