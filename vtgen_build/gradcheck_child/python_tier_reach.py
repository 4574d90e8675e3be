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

from typing import Any

from . import child, sample_sources
from .batching import timed
from .child_loop import Counters
from .protocol import CheckRequest

_OURS = ("passed", "failed")


def pending(targets: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets whose op no check of ``rows`` judged through our kernel (passed or failed): a check judges
    the ops of its row it called directly and entered, as the parent reads it (an OpInfo check of
    ``linalg.svd`` entering ``_linalg_svd`` inside is no verdict on it)."""
    done: set[str] = set()
    for row in rows:
        direct = row.get("direct") or {}
        own = {*direct.get("function", []), *direct.get("inplace", [])} or {str(row.get("aten"))}
        for c in row.get("checks", []):
            if c.get("status") in _OURS and c.get("ours_ran"):
                done.update(set(c.get("hit") or [str(row.get("aten"))]) & own)
    return [t for t in targets if t["counter"] not in done]


def _asked(request: dict[str, Any], targets: list[dict[str, Any]]) -> CheckRequest:
    """What ``child._target_records`` reads of a request (no reference files: ours are rerun here)."""
    dtypes, samples, batched = tuple(request["dtypes"]), request.get("max_samples", 0), bool(request.get("batched"))
    return CheckRequest("", None, (), (), (), dtypes, samples, int(request["timeout"]), (), tuple(targets), None,
                        batched, False, ())  # fmt: skip


def entries(request: dict[str, Any], rows: list[dict[str, Any]], counters: Any) -> list[tuple[str, list[str], Any]]:
    """(name, the ops it checks, run) per sample entry reaching a pending target."""
    by_entry: dict[str, list[dict[str, Any]]] = {}
    for t in pending(list(request.get("targets", [])), rows):
        for name in t["entries"]:
            by_entry.setdefault(name, []).append(t)
    found = []
    for entry in sample_sources.all_entries(set(by_entry)):
        targets = by_entry[entry.name]
        run = _run(entry, targets, _asked(request, targets), counters)
        found.append((f"via {entry.name} (python tier)", [t["counter"] for t in targets], run))
    return found


def _run(entry: Any, targets: list[dict[str, Any]], asked: CheckRequest, counters: Any) -> Any:
    """The entry's captured checks; a failed one names the other kernels of ours whose formulas ran in it."""

    def run() -> list[dict[str, Any]]:
        before = counters.live_snapshot()
        rows: list[dict[str, Any]] = child._target_records(entry, targets, asked, counters)
        ran = counters.live_entered(before)
        for row in rows:
            others = sorted(ran - {row["aten"]})
            for c in row["checks"]:
                if c["status"] == "failed" and others:
                    c["others"] = others
        return rows

    return timed(run)


class _Told(Counters):
    """torch's own kernels standing for ``op``'s: a whole-call check counts as having entered it."""

    def __init__(self, op: str) -> None:  # no library: Counters' own state is unused
        self.op = op

    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return {self.op}


def reference(rows: list[dict[str, Any]], request: dict[str, Any]) -> None:
    """Each captured row with a failed check again with torch's own kernels (ours removed by now): a check
    failing there too (same test, kind and dtype) is the arguments', not our formulas' ("not run")."""
    by_op = {t["op"]: t for t in request.get("targets", [])}
    for row in rows:
        target = by_op.get(str(row.get("aten")))
        if target is None or not any(c.get("status") == "failed" for c in row.get("checks", [])):
            continue
        entry = next(iter(sample_sources.all_entries({str(row.get("source"))})), None)
        if entry is None:
            continue
        try:
            theirs = child._target_records(entry, [target], _asked(request, [target]), _Told(target["counter"]))
        except Exception as exc:  # their calls cannot be made again: ours stands as it is
            row.setdefault("notes", []).append(f"reference rerun raised: {exc}")
            continue
        theirs_failed = (c for r in theirs for c in r["checks"] if c["status"] == "failed")
        failing = {(c["test"], c["kind"], c["dtype"]): c for c in theirs_failed}
        for c in row["checks"]:
            also = failing.get((c.get("test"), c.get("kind"), c.get("dtype")))
            if c.get("status") == "failed" and also is not None:
                c.update({"status": "not run", "why": f"torch's own kernels fail it too: {also['message'][:200]}"})
