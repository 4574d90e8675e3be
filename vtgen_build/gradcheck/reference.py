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
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base.write import write_atomic

__all__ = ["REFERENCE_DIR", "judge_failures"]

REFERENCE_DIR = "reference"  # under the gradcheck work directory: the kept argument sets, the checks described
_CHILD = Path(__file__).resolve().parent / "child.py"


def _kept(records: Sequence[dict[str, Any]]) -> list[str]:
    return sorted(
        {
            str(c["reference"])
            for r in records
            for c in r.get("checks", [])
            if isinstance(c, dict) and c.get("status") == "failed" and c.get("reference")
        }
    )


_INPUT = re.compile(r"with respect to input (\d+)")


def _earlier(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Ours failed at a sample, or at an input, before the one theirs failed at: theirs passed it, so
    that failure is ours."""
    at, their_at = ours.get("sample"), theirs.get("sample")
    if isinstance(at, int) and isinstance(their_at, int) and at != their_at:
        return at < their_at
    mine, other = _INPUT.search(str(ours.get("message", ""))), _INPUT.search(str(theirs.get("message", "")))
    return bool(mine and other and int(mine.group(1)) < int(other.group(1)))


def judge_failures(python: str, records: list[dict[str, Any]], work: Path) -> list[dict[str, Any]]:
    """The records with each failed check that torch's own kernels fail too turned into ``not run``."""
    kept = _kept(records)
    if not kept:
        return records
    listing, answer = work / "reference-list.json", work / "reference-results.json"
    write_atomic(listing, json.dumps(kept))
    answer.unlink(missing_ok=True)
    command = [python, str(_CHILD), "--reference", str(listing), str(answer)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found: dict[str, Any] = json.loads(answer.read_text(encoding="utf-8")) if done.returncode == 0 else {}
    for r in records:
        for c in r.get("checks", []):
            theirs = found.get(str(c.get("reference", ""))) if c.get("status") == "failed" else None
            if isinstance(theirs, dict) and theirs.get("status") == "failed" and not _earlier(c, theirs):
                message = str(theirs.get("message", ""))[:200]
                c.update(status="not run", why=f"PyTorch's own kernels fail it on these arguments too: {message}")
                c["hit"] = []
    return records
