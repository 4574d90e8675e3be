"""The Python tier's captured checks, child side; standalone (stdlib and torch only).

The request's ``targets`` (``gradcheck.reach.Target``'s form) name, for each carried op, the sample
entries (OpInfo or ModuleInfo: ``sample_sources``) whose calls reach it, read from the compiled tier's
reach map.  After the schema samples and the OpInfo checks, each op none of those verified is
gradchecked on the arguments it received in those entries' calls, through the installed Python kernels,
with the compiled tier's own code (``child._target_records``: captured backward and forward-AD checks,
the entry's whole call when one fails, the double backward of an OpInfo reaching it only in its backward
pass).  A failed check is run again with torch's own kernels once ours are removed (``reference``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import child, sample_sources
from .batching import timed
from .child_loop import Counters, Progress
from .protocol import CaptureTarget, CheckRequest, TierRequest
from .rows import FAILED, NOT_RUN, Entry

_OURS = ("passed", "failed")


def pending(targets: tuple[CaptureTarget, ...], rows: list[Entry]) -> list[CaptureTarget]:
    """The targets whose op no check of ``rows`` judged through our kernel (passed or failed): a check judges
    the ops of its row it called directly and entered, as the parent reads it (an OpInfo check of
    ``linalg.svd`` entering ``_linalg_svd`` inside is no verdict on it)."""
    done: set[str] = set()
    for row in rows:
        direct = dict(row.direct or ())
        own = {*direct.get("function", ()), *direct.get("inplace", ())} or {row.aten}
        for c in row.checks:
            if c.status in _OURS and c.ours_ran:
                done.update(set(c.hit or (row.aten,)) & own)
    return [t for t in targets if t.counter not in done]


def _asked(request: TierRequest, targets: list[CaptureTarget]) -> CheckRequest:
    """What ``child._target_records`` reads of a request (no reference files: ours are rerun here)."""
    return CheckRequest("", None, (), (), (), request.dtypes, request.max_samples, request.timeout, (),
                        tuple(targets), None, request.batched, False, ())  # fmt: skip


def entries(request: TierRequest, rows: list[Entry], counters: Any, at: Progress) -> list[tuple[str, list[str], Any]]:
    """(name, the ops it checks, run) per sample entry reaching a pending target; ``at`` hears of each sample
    before it runs."""
    by_entry: dict[str, list[CaptureTarget]] = {}
    for t in pending(request.targets, rows):
        for name in t.entries:
            by_entry.setdefault(name, []).append(t)
    found = []
    for entry in sample_sources.all_entries(set(by_entry)):
        targets = by_entry[entry.name]
        run = _run(entry, targets, _asked(request, targets), counters, at)
        found.append((f"via {entry.name} (python tier)", [t.counter for t in targets], run))
    return found


def _run(entry: Any, targets: list[CaptureTarget], asked: CheckRequest, counters: Any, at: Progress) -> Any:
    """The entry's captured checks; a failed one names the other kernels of ours whose formulas ran in it."""

    def run() -> list[Entry]:
        before = counters.live_snapshot()
        rows: list[Entry] = child._target_records(entry, targets, asked, counters, at)
        ran = counters.live_entered(before)
        return [r.with_checks([_with_others(c, ran - {r.aten}) for c in r.checks]) for r in rows]

    return timed(run)


def _with_others(check: Any, others: set[str]) -> Any:
    return replace(check, others=tuple(sorted(others))) if check.status == FAILED and others else check


class _Told(Counters):
    """torch's own kernels standing for ``op``'s: a whole-call check counts as having entered it."""

    def __init__(self, op: str) -> None:  # no library: Counters' own state is unused
        self.op = op

    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return {self.op}


def reference(rows: list[Entry], request: TierRequest) -> list[Entry]:
    """Each captured row with a failed check again with torch's own kernels (ours removed by now): a check
    failing there too (same test, kind and dtype) is the arguments', not our formulas' ("not run")."""
    return [_against_theirs(row, request) for row in rows]


def _against_theirs(row: Entry, request: TierRequest) -> Entry:
    target = next((t for t in request.targets if t.op == row.aten), None)
    if target is None or not any(c.status == FAILED for c in row.checks):
        return row
    entry = next(iter(sample_sources.all_entries({row.source})), None)
    if entry is None:
        return row
    try:
        theirs = child._target_records(entry, [target], _asked(request, [target]), _Told(target.counter))
    except Exception as exc:  # their calls cannot be made again: ours stands, and says why
        return replace(row, reference_error=f"{type(exc).__name__}: {exc}"[:300])
    failing = {(c.test, c.kind, c.dtype): c for r in theirs for c in r.checks if c.status == FAILED}
    checks = []
    for c in row.checks:
        also = failing.get((c.test, c.kind, c.dtype))
        if c.status == FAILED and also is not None:
            c = replace(c, status=NOT_RUN, why=f"torch's own kernels fail it too: {also.message[:200]}")
        checks.append(c)
    return row.with_checks(checks)
