"""The Python tier's reach: the compiled tier's reach map, asked for the ops the Python tier carries.

The compiled tier checks an op on the arguments it received in the calls of the sample entries (OpInfo
and ModuleInfo: ``gradcheck_child.sample_sources``) that reach it below autograd (``reach.py``: the map is
computed once per installed torch and kept in the artifact cache of the check directory, which both tiers
share).  The Python tier asks the same map for each carried op with the same rule (``reach.target_of``)
and hands the targets to its child (``gradcheck_child.python_tier_reach``), which checks them through the
installed Python kernels.  Nothing is compiled; a cold map costs its computation once (minutes), so only a
run that asks for it (``--coverage``) reads it.
"""

from __future__ import annotations

from pathlib import Path

from ..compile.artifacts import ArtifactCache
from ..torchlib import locate_torch
from ..torchlib.build import CACHE, Session
from ..worker import Worker
from .python_tier import TierPlan
from .reach import Target, reach_map, target_of
from .shard import load_costs

__all__ = ["GRADCHECK_WORK", "reach_targets"]

GRADCHECK_WORK = ".vtgen-gradcheck"  # the check directory's folder of gradcheck work (the compiled tier's too)
LIMIT = 1  # entries per op: the most specific one reaching it (the compiled tier's coverage rule)


def reach_targets(
    plan: TierPlan, out_dir: Path, release: str, python: str, worker: Worker | None
) -> tuple[Target, ...]:
    """Each carried op with a formula a captured check runs, with the entry whose calls reach it."""
    torch = locate_torch(python, worker)
    work = out_dir / GRADCHECK_WORK
    work.mkdir(parents=True, exist_ok=True)
    cache = ArtifactCache.open(work / CACHE)
    found = reach_map(torch, work, Session(cache, cache.digests()), release, worker)
    seconds = load_costs().seconds
    chosen = []
    for op in sorted(plan.carried):
        place = plan.places.get(op)
        target = target_of(found, op, op, place, LIMIT, seconds) if place is not None else None
        if target is not None:
            chosen.append(target)
    return tuple(chosen)
