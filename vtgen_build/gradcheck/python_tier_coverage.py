"""``check --gradcheck --coverage JSON --tier python``: the whole yaml (or the ``--op`` ones) through the Python tier.

Nothing is compiled.  Every Autograd kernel with formulas gets the Python tier's verdict (``python_tier_run``),
and each derivatives.yaml entry the tier it falls to:

- ``python``: a kernel of the entry passed a check of the Python tier and none of its kernels failed;
- ``failed``: a check of the Python tier failed on one of its kernels (an error at the formula's line);
- ``compiled``: no kernel of it was verified by the Python tier (each says why): left to the compiled tier,
  which a ``--tier python`` run does not start (its whole-yaml run compiles every kernel: tens of minutes).

The out= overloads are counted apart: no formula runs through them, so neither tier verifies one (the
compiled tier's coverage leaves them out as well).  The counts are the Python tier's own: an entry is
``python`` when a check entered its kernel and passed, which is weaker than the compiled coverage's
"every backward formula ran in a passing check" (the Python tier does not record formula by formula).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.errors import Location
from ..model.schema import SchemaError, op_name
from .coverage import EntryCoverage
from .python_tier_run import NOT_VERIFIED, OpVerdict, TierReport
from .records import FAILED, PASSED

__all__ = ["COMPILED", "PYTHON", "EntryTier", "both_tiers", "entry_tiers", "render", "shard_ops", "to_json"]

PYTHON, COMPILED = "python", "compiled"
_WHY = re.compile(r"not verified by the Python tier: (.*)$")
_GIST = re.compile(r"^(.*?)(?:[:(]|$)")


@dataclass(frozen=True)
class EntryTier:
    where: Location | None  # the derivatives.yaml entry (None: an op with none, which the tier never plans)
    verdicts: tuple[OpVerdict, ...]

    @property
    def tier(self) -> str:
        statuses = {v.status for v in self.verdicts}
        return FAILED if FAILED in statuses else PYTHON if PASSED in statuses else COMPILED


def entry_tiers(report: TierReport) -> list[EntryTier]:
    """The report's verdicts grouped by derivatives.yaml entry, in yaml order."""
    grouped: dict[Location | None, list[OpVerdict]] = {}
    for v in report.verdicts:
        grouped.setdefault(report.entries.get(v.op), []).append(v)
    ordered = sorted(grouped.items(), key=lambda item: (item[0].file, item[0].line) if item[0] else ("", 0))
    return [EntryTier(where, tuple(vs)) for where, vs in ordered]


def why_not(v: OpVerdict) -> str:
    """The gist of why the Python tier did not verify an op (``its formulas cannot be translated``)."""
    found = _WHY.search(v.message)
    text = found.group(1) if found else v.message.split(": ", 1)[-1]
    gist = _GIST.match(text)
    return (gist.group(1) if gist else text).strip()


def _counts(entries: Sequence[EntryTier]) -> tuple[Counter[str], Counter[str]]:
    by_entry = Counter(e.tier for e in entries)
    by_kernel = Counter(PYTHON if v.status == PASSED else FAILED if v.status == FAILED else COMPILED
                        for e in entries for v in e.verdicts)  # fmt: skip
    return by_entry, by_kernel


def render(report: TierReport, entries: Sequence[EntryTier], path: str, alone: bool = True) -> str:
    """The per-tier counts (entries, then kernels) and the kernels left to the compiled tier, by reason
    (``alone``: --tier python, which does not run the compiled tier)."""
    by_entry, by_kernel = _counts(entries)
    unrun = " (not run: --tier python)" if alone else ""

    def line(what: str, counts: Counter[str], total: int) -> str:
        return (
            f"  {what}: {total}: {counts[PYTHON]} verified by the Python tier, {counts[FAILED]} failed, "
            f"{counts[COMPILED]} left to the compiled tier{unrun}"
        )

    reasons = Counter(why_not(v) for e in entries for v in e.verdicts if v.status == NOT_VERIFIED)
    lines = [
        f"python tier coverage ({report.seconds:.0f} s, nothing compiled), per tier:",
        line("derivatives.yaml entries with an Autograd kernel", by_entry, len(entries)),
        line("kernels (functional, in-place, others)", by_kernel, sum(by_kernel.values())),
        *(f"    {n:4d} kernels: {why}" for why, n in reasons.most_common()),
        f"  out= overloads: {len(report.outs)} (no formula runs through them: verified by neither tier)",
        f"  per entry and kernel, which tier: {path}",
    ]
    return "\n".join(lines)


def _verdict_row(v: OpVerdict) -> dict[str, object]:
    tier = PYTHON if v.status == PASSED else FAILED if v.status == FAILED else COMPILED
    row: dict[str, object] = {"op": v.op, "tier": tier, "message": v.message}
    if v.status == NOT_VERIFIED:
        row["reason"] = why_not(v)
    if v.status == FAILED and v.location is not None:
        row["at"] = str(v.location)
    return row


def to_json(report: TierReport, entries: Sequence[EntryTier]) -> str:
    """Per entry: which tier verifies it and each kernel's verdict; the per-tier counts."""
    by_entry, by_kernel = _counts(entries)
    rows = [{"entry": str(e.where) if e.where else None, "tier": e.tier,
             "kernels": [_verdict_row(v) for v in e.verdicts]} for e in entries]  # fmt: skip
    data = {
        "tier": PYTHON,
        "release": report.release,  # the release the yaml was planned for (tools/python_tier_agreement.py reads it)
        "summary": {
            "entries": {k: by_entry[k] for k in (PYTHON, FAILED, COMPILED)},
            "kernels": {k: by_kernel[k] for k in (PYTHON, FAILED, COMPILED)},
            "out_overloads": len(report.outs),
            "seconds": round(report.seconds, 1),
        },
        "entries": rows,
        "out_overloads": list(report.outs),
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _family(op: str) -> str:
    try:
        return op_name(op).family
    except SchemaError:
        return op


def shard_ops(ops: Sequence[str], k: int, n: int) -> tuple[str, ...]:
    """Part ``k`` of ``n`` of the selected ops: their families (the tier plans by family: ``add.Tensor``
    brings ``add_.Tensor``) sorted by name and dealt out in turn, so the parts are disjoint, cover every
    family, and are the same in every process of the run."""
    families = sorted({_family(op) for op in ops})
    mine = set(families[k - 1 :: n])
    return tuple(op for op in ops if _family(op) in mine)


def _at(where: Location | None) -> tuple[str, int] | None:
    return (where.file, where.line) if where is not None else None


def both_tiers(entries: Sequence[EntryTier], compiled: Sequence[EntryCoverage], clashes: int) -> str:
    """``--coverage --tier both``: per derivatives.yaml entry, which tier verified it.  The compiled tier covers
    an entry when every backward formula of it ran in a passing check (its coverage figure); the Python tier,
    when a check of it passed and none failed.  ``clashes``: the ops the tiers judged differently."""
    judged = [c for c in compiled if any(f.kind == "backward" for f in c.formulas) and c.has_cpu_kernel]
    counted = {_at(c.where) for c in judged}
    python = {_at(e.where) for e in entries if e.tier == PYTHON} & counted
    failed = {_at(e.where) for e in entries if e.tier == FAILED} & counted
    covered = {_at(c.where) for c in judged if c.backward_covered}
    both = covered & python
    share = 100.0 * len(both) / len(covered) if covered else 0.0
    neither = counted - covered - python - failed
    return "\n".join([
        "per tier (derivatives.yaml entries with a CPU kernel and a backward formula):",
        f"  compiled tier covered {len(covered)}; the Python tier verified {len(both)} of them ({share:.1f}%)",
        f"  the Python tier alone: {len(python - covered)}; the compiled tier alone: {len(covered - python)}; "
        f"neither: {len(neither)}; the Python tier failed: {len(failed)}",
        f"  ops the tiers judged differently: {clashes}",
    ])  # fmt: skip
