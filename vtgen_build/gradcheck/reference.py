"""Failed captured checks run again with PyTorch's own kernels: a failure of theirs too is not ours.

A captured check gradchecks an op on arguments another call gave it.  Some arguments carry an
invariant the op's formula relies on and gradcheck's perturbations break: a matrix an OpInfo
symmetrised before calling ``cholesky``, the mean and inverse deviation a norm's forward computed
from the very input the backward op is differentiated in.  Such a check fails with any correct
formula.  The child keeps each failed captured check's arguments (``capture.save_sets``); a
second child that loads no library runs them with torch's own kernels (``child.py --reference``).
A check that fails there too becomes ``not run`` with that reason: never a failure, never a pass.

An OpInfo's own check of a whole call (run by name, or ``through_grad`` and the double backward of
an op its call reaches) gets the same judgement: the child describes it (entry, kind, variant,
dtype, samples) and the reference child runs it again.  PyTorch's own Tensor-overload ``_foreach_*``
kernels, for one, fail any backward that differentiates the single ``other`` tensor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base.write import write_atomic
from ..gradcheck_child.protocol import ReferenceAnswer, ReferenceRequest
from ..worker import Worker, run_python
from .records import FAILED, NOT_RUN, PASSED, Check, Entry

__all__ = ["REFERENCE_DIR", "judge_failures", "judge_schema_failures", "judged"]

REFERENCE_DIR = "reference"  # under the gradcheck work directory: the kept argument sets, the checks described


def _kept(records: Sequence[Entry]) -> list[str]:
    return sorted({c.reference for r in records for c in r.checks if c.status == FAILED and c.reference})


_INPUT = re.compile(r"with respect to input (\d+)")


def _earlier(ours: Check, theirs: Check) -> bool:
    """Ours failed at a sample, or at an input, before the one theirs failed at: theirs passed it, so
    that failure is ours."""
    if ours.sample is not None and theirs.sample is not None and ours.sample != theirs.sample:
        return ours.sample < theirs.sample
    mine, other = _INPUT.search(ours.message), _INPUT.search(theirs.message)
    return bool(mine and other and int(mine.group(1)) < int(other.group(1)))


def _judged(check: Check, found: ReferenceAnswer) -> Check:
    theirs = found.of(check.reference) if check.status == FAILED and check.reference else None
    return judged(check, theirs)


def judged(check: Check, theirs: Check | None) -> Check:
    """Our failed check, given the same check with PyTorch's own kernels (None: not rerun)."""
    if check.status != FAILED or theirs is None or theirs.status != FAILED or _earlier(check, theirs):
        return check
    if check.batched and theirs.batched:  # the values passed (batching.py); PyTorch's formula breaks under vmap too
        why = f"its batched part fails with PyTorch's own kernels too: {theirs.message[:200]}"
        return replace(check, status=PASSED, samples=(check.sample or 0) + 1, why=why, message="")
    why = f"PyTorch's own kernels fail it on these arguments too: {theirs.message[:200]}"
    return replace(check, status=NOT_RUN, why=why, hit=())


def judge_failures(python: str, records: list[Entry], work: Path, worker: Worker | None = None) -> list[Entry]:
    """The records with each failed check that torch's own kernels fail too turned into ``not run``."""
    kept = _kept(records)
    if not kept:
        return records
    listing, answer = work / "reference-list.json", work / "reference-results.json"
    write_atomic(listing, json.dumps(ReferenceRequest(tuple(kept)).to_json()))
    answer.unlink(missing_ok=True)
    said = work / "reference-stderr.txt"
    argv = child_package.command("child", "--reference", str(listing), str(answer))
    code = run_python(worker, python, argv, said)
    found = _answer(answer) if code == 0 else ReferenceAnswer(())
    return [r.with_checks(_judged(c, found) for c in r.checks) for r in records]


def _answer(path: Path) -> ReferenceAnswer:
    """The reference child's answer; none (every failure stays ours) when it cannot be read."""
    try:
        return ReferenceAnswer.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):  # ProtocolError is a ValueError
        return ReferenceAnswer(())


def judge_schema_failures(records: list[Entry], rerun: Callable[[set[str]], list[Entry]]) -> list[Entry]:
    """Schema-sample records with each failed check that torch's own kernels fail too turned into ``not run``.

    ``rerun``: the schema child again over the named ops, loading no library of ours (their samples are
    made from fixed seeds, so it gradchecks the very arguments ours did).
    """
    failing = {r.aten for r in records if r.schema and any(c.status == FAILED for c in r.checks)}
    if not failing:
        return records
    theirs = {(r.aten, c.kind, c.variant, c.dtype): c for r in rerun(failing) for c in r.checks}
    return [
        r.with_checks(judged(c, theirs.get((r.aten, c.kind, c.variant, c.dtype))) for c in r.checks)
        if r.aten in failing
        else r
        for r in records
    ]
