"""Formula coverage (``check --gradcheck --coverage``): which derivatives.yaml formulas ran in a passing check.

Per derivatives.yaml entry: each backward formula per input and each forward formula, the
check it ran inside (a check passes only when our kernel of the op ran, proven by its
counter), or why none did (``verdict.REASONS``, or ``FAILED``).  The figures, over the entries
with a CPU kernel: the entries whose every backward formula ran, the backward formulas (per
input) and the forward formulas that ran.  Kept as a table on stdout and a JSON file; the JSON
files of the parts of a sharded run (``--shard K/N``) merge into the one a single run writes
(``merge``).  Each file holds its run's identity (``RunIdentity``: the inputs' content, the release,
the torch, the options that shape the checks), and parts merge only when theirs is one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import Location, VtgenError
from ..base.store import sha256_hex
from ..compile import artifact_key
from ..inputs.files import Inputs
from .formulas import FormulaPlaces
from .records import Entry
from .verdict import REASONS, Unverified

__all__ = [
    "FAILED",
    "MAX_PARTS",
    "EntryCoverage",
    "FormulaRun",
    "Report",
    "RunIdentity",
    "coverage",
    "figure",
    "from_json",
    "merge",
    "render",
    "run_identity",
    "shard_problem",
    "to_json",
]

FAILED = "a check of it failed"  # not a reason it could not run: a failure (never on the unmodified yaml)
_NO_CPU = frozenset(REASONS[:2])  # needs another backend, or sparse / quantized / nested inputs
MAX_PARTS = 1024  # --shard K/N: N at most this


def shard_problem(k: int, n: int) -> str | None:
    """Why ``K/N`` is no part of a sharded run (None: 1 <= K <= N <= ``MAX_PARTS``)."""
    return None if 1 <= k <= n <= MAX_PARTS else f"expected K/N with 1 <= K <= N <= {MAX_PARTS}"


@dataclass(frozen=True)
class RunIdentity:
    """Which run a report is of: parts merge only when theirs is one.  ``key``: the one key rule
    (``artifact_key``) over the content of the three yaml files, the release, the torch's version and
    the options that shape the checks (never the part: every part of a run, and the whole, have one)."""

    key: str
    release: str
    torch: str

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "release": self.release, "torch": self.torch}


def run_identity(inputs: Inputs, release: str, torch: str, options: Sequence[str]) -> RunIdentity:
    """The identity of a run of ``inputs`` (read now: their content, not their paths) with ``options``."""
    files = (inputs.native_functions, inputs.derivatives, inputs.tags)
    with_content = [sha256_hex(Path(p).read_bytes()) if p else "-" for p in files]
    text = "\n".join([inputs.namespace, *with_content])
    return RunIdentity(artifact_key("coverage-run", "", options, release, text, [torch]), release, torch)


@dataclass(frozen=True)
class FormulaRun:
    kind: str  # "backward" or "forward"
    inputs: tuple[str, ...]  # backward: the one input this record is of (a formula of two inputs: two records)
    where: Location
    check: str | None  # the passing check it ran inside, None: it did not run
    note: str = ""  # it ran, but that check's batched (vmap) part could not (``batching.py``): why


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


# A ``*_backward`` op checked through its forward op's double backward (``child._through_backward``):
# gradgradcheck differentiates the backward op's own backward formulas, forward-over-reverse its forward one.
_THROUGH_BACKWARD = {"gradgrad": "backward", "fwd_over_rev": "forward"}


# (op, kind) → differentiated input ("*": every input) → (the passing check it ran in, that check's note)
_Ran = dict[tuple[str, str], dict[str, tuple[str, str]]]


def _ran(records: Iterable[Entry]) -> _Ran:
    """The first passing check each formula ran in; one whose batched part ran over one with a note."""
    ran: _Ran = {}
    for entry in records:
        for c in entry.checks:
            kind = _THROUGH_BACKWARD.get(c.kind, c.kind) if entry.source else c.kind
            if not c.passed_ours or kind not in ("backward", "forward"):
                continue
            for op in entry.ops(c.variant):
                found = ran.setdefault((op, kind), {})
                for name in c.inputs or ("*",):
                    if name not in found or (found[name][1] and not c.unbatched):
                        found[name] = (f"{entry.name}: {c.test or c.kind} {c.dtype}".strip(), c.unbatched)
    return ran


def _check_of(ran: _Ran, ops: Sequence[str], kind: str, inputs: Sequence[str]) -> tuple[str | None, str]:
    """The check a formula ran in and its note; (None, ""): it did not run."""
    for op in ops:
        found = ran.get((op, kind), {})
        if "*" in found:
            return found["*"]
        if inputs and all(name in found for name in inputs):
            return found[inputs[0]]
        if kind == "forward" and found:
            return next(iter(found.values()))
    return None, ""


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
            FormulaRun("backward", (name,), at, *_check_of(ran, ops, "backward", (name,)))
            for names, at in place.backward
            for name in names
            if name in place.differentiable
        ]
        runs += [FormulaRun("forward", (), at, *_check_of(ran, ops, "forward", ())) for at in place.forward]
        missing = [f for f in runs if f.check is None]
        reason, detail = None, ""
        if missing:
            told = next((why[op] for op in ops if op in why), None)
            reason, detail = _fixed(told.reason, told.detail) if told else (REASONS[4], "")
            if wrong & set(ops):
                reason, detail = FAILED, ", ".join(sorted(wrong & set(ops)))
        found.append(EntryCoverage(where, tuple(ops), tuple(runs), reason, detail))
    return found


def _eligible(entries: Sequence[EntryCoverage]) -> list[EntryCoverage]:
    return [e for e in entries if e.has_cpu_kernel]


def figure(entries: Sequence[EntryCoverage]) -> tuple[int, int]:
    """(entries with a CPU kernel and a backward formula whose every backward formula ran, such entries)."""
    eligible = [e for e in _eligible(entries) if any(f.kind == "backward" for f in e.formulas)]
    return sum(e.backward_covered for e in eligible), len(eligible)


def formula_figure(entries: Sequence[EntryCoverage], kind: str) -> tuple[int, int]:
    """(formulas of ``kind`` that ran, such formulas) of the entries with a CPU kernel (backward: per input)."""
    runs = [f for e in _eligible(entries) for f in e.formulas if f.kind == kind]
    return sum(f.check is not None for f in runs), len(runs)


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} ({100.0 * part / whole if whole else 0.0:.1f}%)"


def render(entries: Sequence[EntryCoverage], by_name: Sequence[EntryCoverage] = ()) -> str:
    """The figures, the uncovered entries counted by reason; ``by_name``: the same run's OpInfo-by-name checks alone."""
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
    lines.append(f"  backward formulas run (per input): {_share(*formula_figure(entries, 'backward'))}")
    lines.append(f"  forward formulas run: {_share(*formula_figure(entries, 'forward'))}")
    noted = [f for e in _eligible(entries) for f in e.formulas if f.check and f.note]
    if noted:
        lines.append(f"  note: {len(noted)} of them ran only in checks whose batched (vmap) part could not run")
        lines += [f"    {f.where}: {f.note}" for f in noted]
    return "\n".join(lines)


def _formula_row(f: FormulaRun, reason: str | None) -> dict[str, object]:
    row: dict[str, object] = {"kind": f.kind, "inputs": list(f.inputs), "line": f.where.line, "check": f.check,
                              "reason": None if f.check else reason}  # fmt: skip
    if f.note:
        row["note"] = f.note
    return row


def to_json(
    entries: Sequence[EntryCoverage], shard: tuple[int, int] | None = None, run: RunIdentity | None = None
) -> str:
    """The report as JSON; ``shard``: this run was part K of N (``merge`` joins the parts); ``run``: its identity."""
    covered, eligible = figure(entries)
    rows = [
        {
            "entry": f"{e.where.file}:{e.where.line}",
            "ops": list(e.ops),
            "covered": e.backward_covered,
            "reason": e.reason,
            "detail": e.detail,
            "formulas": [_formula_row(f, e.reason) for f in e.formulas],
        }
        for e in entries
    ]
    summary = {
        "entries": dict(zip(("covered", "eligible"), figure(entries), strict=True)),
        "backward_formulas": dict(zip(("run", "eligible"), formula_figure(entries, "backward"), strict=True)),
        "forward_formulas": dict(zip(("run", "eligible"), formula_figure(entries, "forward"), strict=True)),
    }
    data: dict[str, object] = {"covered": covered, "eligible": eligible, "summary": summary, "entries": rows}
    if shard is not None:
        data["shard"] = list(shard)
    if run is not None:
        data["run"] = run.to_json()
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _entry_of(row: object) -> EntryCoverage:
    if not isinstance(row, dict):
        raise ValueError(f"an entry is not an object: {row!r}")
    file, _, line = str(row["entry"]).rpartition(":")
    runs = tuple(
        FormulaRun(
            str(f["kind"]),
            tuple(map(str, f["inputs"])),
            Location(file, int(f["line"])),
            None if f["check"] is None else str(f["check"]),
            str(f.get("note", "")),
        )
        for f in row["formulas"]
    )
    reason = row["reason"]
    return EntryCoverage(
        Location(file, int(line)), tuple(map(str, row["ops"])), runs, None if reason is None else str(reason),
        str(row["detail"]),
    )  # fmt: skip


@dataclass(frozen=True)
class Report:
    """A coverage JSON as read: its entries, its part (None: a whole run) and its run (None: an older file)."""

    entries: list[EntryCoverage]
    shard: tuple[int, int] | None
    run: RunIdentity | None


def _run_of(data: dict[str, object]) -> RunIdentity | None:
    run = data.get("run")
    if run is None:
        return None
    if not isinstance(run, dict) or not all(isinstance(run.get(k), str) for k in ("key", "release", "torch")):
        raise ValueError(f"'run' is not a run identity: {run!r}")
    return RunIdentity(str(run["key"]), str(run["release"]), str(run["torch"]))


def from_json(text: str, path: str = "coverage JSON") -> Report:
    """A report ``to_json`` wrote.  Anything else, or an impossible part (``5 of 2``), is an error."""
    try:
        data = json.loads(text)
        entries = [_entry_of(row) for row in data["entries"]]
        shard = data.get("shard")
        part = None if shard is None else (int(shard[0]), int(shard[1]))
        run = _run_of(data)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise VtgenError(f"{path}: not a coverage report of check --gradcheck --coverage ({exc})") from exc
    if part is not None and (problem := shard_problem(*part)) is not None:
        raise VtgenError(f"{path}: part {part[0]} of {part[1]} is no part of a sharded run ({problem})")
    return Report(entries, part, run)


def _same_run(path: str, report: Report, first: tuple[str, Report]) -> None:
    """Refuse a part that is not of the run of ``first`` (its path and report)."""
    where, one = first
    if (report.run is None) != (one.run is None):
        old, new = (path, where) if report.run is None else (where, path)
        raise VtgenError(
            f"{path}: {old} holds no run identity (written by an older vtgen-build) and {new} does: "
            "run every part with one version"
        )
    if report.run is not None and one.run is not None and report.run != one.run:
        if (report.run.release, report.run.torch) != (one.run.release, one.run.torch):
            raise VtgenError(
                f"{path}: a part of a run for PyTorch {report.run.release} (torch {report.run.torch}), but {where} "
                f"is of one for PyTorch {one.run.release} (torch {one.run.torch}): the parts are of different runs"
            )
        raise VtgenError(
            f"{path}: a part of another run than {where}: the yaml files' content or the options that shape the "
            "checks (--op, --max-samples, --hints, ...) differ"
        )
    mine, theirs = sorted({e.where.file for e in report.entries}), sorted({e.where.file for e in one.entries})
    if mine and theirs and mine != theirs:
        raise VtgenError(
            f"{path}: its entries are of {', '.join(mine)}, those of {where} of {', '.join(theirs)}: "
            "the parts are of different runs"
        )


def merge(parts: Sequence[tuple[str, str]]) -> tuple[list[EntryCoverage], RunIdentity | None]:
    """The entries of the N parts of a sharded run (``(path, text)`` each), as one run would report them,
    and that run's identity.

    Each part 1..N must be there once, all of one N and of one run, and no derivatives.yaml entry in two
    of them.
    """
    seen: dict[int, str] = {}
    total: int | None = None
    first: tuple[str, Report] | None = None
    entries: dict[Location, EntryCoverage] = {}
    for path, text in parts:
        report = from_json(text, path)
        if report.shard is None:
            raise VtgenError(f"{path}: not part of a sharded run (no --shard K/N): nothing to merge it with")
        k, n = report.shard
        if total is not None and n != total:
            raise VtgenError(f"{path}: part {k} of {n}, but {seen[min(seen)]} is part of {total}")
        if k in seen:
            raise VtgenError(f"{path}: part {k} of {n} again (also {seen[k]})")
        first = first or (path, report)
        _same_run(path, report, first)
        total, seen[k] = n, path
        for e in report.entries:
            if e.where in entries:
                raise VtgenError(f"{path}: entry {e.where} is also in another part: the parts are of different runs")
            entries[e.where] = e
    missing = sorted(set(range(1, (total or 0) + 1)) - set(seen))
    if missing:
        raise VtgenError(f"parts {', '.join(map(str, missing))} of {total} are missing")
    run = first[1].run if first is not None else None
    return sorted(entries.values(), key=lambda e: (e.where.file, e.where.line)), run
