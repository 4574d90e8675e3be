"""The Python tier's reach: the compiled tier's reach map, asked for the ops the Python tier carries.

The compiled tier checks an op on the arguments it received in the calls of the sample entries (OpInfo
and ModuleInfo: ``gradcheck_child.sample_sources``) that reach it below autograd (``reach.py``: the map is
computed once per installed torch and kept in the artifact cache of the check directory, which both tiers
share).  The Python tier asks the same map for each carried op with the same rule (``reach.target_of``,
as many entries per op as the compiled tier's run of the same kind takes) and hands the targets to its
child (``gradcheck_child.python_tier_reach``), which checks them through the installed Python kernels.
Nothing is compiled.  A cold map costs its computation once (minutes): only a run that asks for that
(``--coverage`` of the whole yaml: ``compute``) computes it; an ``--op`` run uses the map when it is
cached, and says so either way (``Reached.said``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..compile.artifacts import ArtifactCache
from ..plan.target import supported_release
from ..torchlib import TorchInstall
from ..torchlib.build import CACHE, Session
from ..worker import Worker
from .python_tier import TierPlan
from .reach import ReachMap, Target, cached_reach_map, reach_map, target_of
from .shard import load_costs

__all__ = ["GRADCHECK_WORK", "Reached", "reach_targets"]

GRADCHECK_WORK = ".vtgen-gradcheck"  # the check directory's folder of gradcheck work (the compiled tier's too)


@dataclass(frozen=True)
class Reached:
    """The captured checks' targets, and where they came from (a note of the report)."""

    targets: tuple[Target, ...]
    said: str


def reach_targets(
    plan: TierPlan, out_dir: Path, torch: TorchInstall, worker: Worker | None, compute: bool, limit: int
) -> Reached:
    """Each carried op with a formula a captured check runs, with the (up to ``limit``) entries whose calls
    reach it, from the reach map of ``torch`` (the torch the run's child imported): computed when not cached
    if ``compute``, else only a cached one (none cached: no targets, said)."""
    release = supported_release(torch.version, f"the torch of {torch.python}")  # the compiled tier's key
    work = out_dir / GRADCHECK_WORK
    cache = ArtifactCache.open(work / CACHE)
    session = Session(cache, cache.digests())
    found: ReachMap | None
    if compute:
        work.mkdir(parents=True, exist_ok=True)
        found = reach_map(torch, work, session, release, worker)
    else:
        found = cached_reach_map(torch, session, release)
    if found is None:
        said = (
            f"no reach map of torch {torch.version} is cached in {work}: only the checks of the ops' own samples "
            "and OpInfos ran (the compiled tier's run, or --coverage, computes the map: minutes, once)"
        )
        return Reached((), said)
    seconds = load_costs().seconds
    chosen = []
    for op in sorted(plan.carried):
        place = plan.places.get(op)
        target = target_of(found, op, op, place, limit, seconds) if place is not None else None
        if target is not None:
            chosen.append(target)
    how = "" if compute else "cached "
    said = (
        f"ops no own check verified are checked on the arguments the entries reaching them gave them, by the "
        f"{how}reach map of torch {torch.version} in {work} ({len(chosen)} ops reached)"
    )
    return Reached(tuple(chosen), said)
