"""Which checks reach an op: every sample entry's reach, computed once per installed torch and cached.

The child (``child.py --reach``) runs the first calls (``capture.REACH_CALLS``) of every entry of every sample source
(OpInfo, ModuleInfo, plugged-in sources) under a dispatch mode and records the aten ops it
reaches below autograd, in the forward pass and in the backward pass.  That map is kept in the
artifact cache (``analyses``: the one key rule, over the torch's interpreter and version), verified
before use by the content of the torch libraries and of the child-side files that produce it;
damage reads as "no map" and it is computed again (about three minutes on two busy cores: eight calls per entry).

``targets`` then turns the selected ops into the request's target list: for each op, the
entries whose calls reach it (an op called by a backward formula, such as ``elu_backward``,
is reached by the backward pass of ``nn.functional.elu`` and ``nn.functional.celu``), the
most specific first.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .. import gradcheck_child as child_package
from ..base import store
from ..base.errors import VtgenError
from ..compile import remove_legacy
from ..gradcheck_child.protocol import CaptureTarget as Target
from ..gradcheck_child.protocol import ProtocolError, ReachRequest, ReachRow
from ..model.schema import op_name
from ..torchlib import TorchInstall
from ..torchlib.build import Session
from ..worker import Worker
from .analyses import child_files, recall, remember, torch_key
from .formulas import FormulaPlaces
from .records import Entry, read_rows
from .supervise import Child, run_to_end
from .units import Registration

__all__ = ["Reach", "ReachMap", "Target", "cached_reach_map", "reach_map", "reach_rows", "target_of", "targets"]

KIND = "gradcheck_reach"


@dataclass(frozen=True)
class Reach:
    entry: str  # "nn.functional.elu", "module:nn.Conv2d", "sin (inplace)"
    forward: frozenset[str]  # ops its call reaches below autograd
    backward: frozenset[str]  # ops the backward pass of that call reaches


@dataclass(frozen=True)
class ReachMap:
    entries: tuple[Reach, ...]

    def reaching(self, op: str) -> tuple[list[Reach], list[Reach]]:
        """The entries whose forward pass reaches ``op``, and those whose backward pass does."""
        return [r for r in self.entries if op in r.forward], [r for r in self.entries if op in r.backward]


def _decode(data: store.JSON, key: str) -> ReachMap | None:
    rows = data.get("entries") if isinstance(data, dict) and data.get("key") == key else None
    if not isinstance(rows, list):
        return None
    found: list[Reach] = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3):
            return None
        name, forward, backward = row
        if not (isinstance(name, str) and isinstance(forward, list) and isinstance(backward, list)):
            return None
        found.append(Reach(name, frozenset(map(str, forward)), frozenset(map(str, backward))))
    return ReachMap(tuple(found))


def _compute(torch: TorchInstall, work: Path, worker: Worker | None, timeout: int = 60) -> list[list[store.JSON]]:
    """Run the child over every entry (past the entries that kill it); each entry's reach as a row."""
    paths = (work / "reach-request.json", work / "reach.jsonl", work / "reach-stderr.txt")
    what = "finding what each sample reaches"
    child = Child(
        torch.python, tuple(child_package.command("child", "--reach")), *paths, what, "entry", timeout, worker
    )
    run_to_end(child, lambda skip: ReachRequest(tuple(skip), timeout))
    found, left_out = reach_rows(read_rows(child.results))
    if left_out:  # never wrong, only less covered: the ops only those entries reach get no captured check
        print(f"vtgen-build: note: the reach map leaves out {left_out}", file=sys.stderr)
    return found


def reach_rows(rows: Sequence[dict[str, object]]) -> tuple[list[list[store.JSON]], str]:
    """The reach child's entry rows (``ReachRow``) as ``[name, forward ops, backward ops]``; and what was left
    out, said in a phrase ("" when nothing was): entries whose calls failed or killed the child (error rows),
    and rows of neither form."""
    found: list[list[store.JSON]] = []
    failed: list[str] = []
    unreadable = 0
    for row in rows:
        if "entry" not in row:
            continue
        try:
            reach = ReachRow.from_json(row)
            found.append([reach.entry, list(reach.forward), list(reach.backward)])
            continue
        except ProtocolError:
            pass
        try:
            entry = Entry.from_json(row)
        except ProtocolError:
            unreadable += 1
            continue
        if entry.error and not entry.unreadable:
            failed.append(entry.name)
        else:
            unreadable += 1
    said = []
    if failed:
        shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        said.append(f"{len(failed)} entries whose calls failed or ended the process ({shown})")
    if unreadable:
        said.append(f"{unreadable} result rows of the wrong shape")
    return found, " and ".join(said)


def reach_map(
    torch: TorchInstall, work: Path, session: Session, release: str, worker: Worker | None = None
) -> ReachMap:
    """Every entry's reach for this torch (kept in ``session``'s artifact cache; computed in ``work``, in
    children ``worker`` forks, if given).  ``release``: the target release (a part of the key)."""
    cached = cached_reach_map(torch, session, release)
    if cached is not None:
        return cached
    key = torch_key(KIND, torch, release, "")
    remove_legacy(work, ("reach.json",))  # earlier versions' record, keyed by version strings
    data: store.JSON = {"key": key, "entries": list(_compute(torch, work, worker))}
    remember(session, key, KIND, data, [*torch.libraries, *child_files()])
    found = _decode(data, key)
    if found is None:
        raise VtgenError("internal error: the reach map just computed does not read back")
    return found


def cached_reach_map(torch: TorchInstall, session: Session, release: str) -> ReachMap | None:
    """The reach map ``reach_map`` keeps for this torch and release, when it is in ``session``'s cache and
    what it was computed from is unchanged (None: it would have to be computed: minutes)."""
    key = torch_key(KIND, torch, release, "")
    return _decode(recall(session, key, KIND), key)


def _rank(op: str, reach: Reach, forward: bool, seconds: Mapping[str, float]) -> tuple[int, int, int, float, str]:
    """Most specific first: an entry named after the op, then the one reaching fewest ops, then the cheapest
    (``seconds``: the measured seconds of an op group's checks, ``shard.Costs``; unmeasured: last).

    An op reached only by a backward pass (``log_sigmoid_backward``) is checked best by an OpInfo entry:
    only an OpInfo has the double-backward checks that run its formulas on the arguments its forward
    op's backward gives it (``child._through_backward``); a ModuleInfo entry comes after.  Of ``cos`` and
    ``_foreach_cos``, which both reach ``sin`` through three backward ops, ``cos`` (0.1 s) goes first.
    """
    base = op_name(op).family
    own = reach.entry.split(" ")[0].split(".")[-1] in (base, base.removesuffix("_backward"))
    module = not forward and reach.entry.startswith("module:")
    cost = seconds.get(reach.entry.removesuffix(" (inplace)"), math.inf)
    return (0 if own else 1, int(module), len(reach.forward if forward else reach.backward), cost, reach.entry)


def _entries_for(reach: ReachMap, op: str, limit: int, seconds: Mapping[str, float]) -> tuple[str, ...]:
    """Up to ``limit`` entries, most specific first, one variant of each (function or in-place)."""
    forward, backward = reach.reaching(op)
    ranked = sorted(forward, key=lambda r: _rank(op, r, True, seconds))
    ranked += sorted(backward, key=lambda r: _rank(op, r, False, seconds))
    chosen: dict[str, str] = {}
    for r in ranked:
        chosen.setdefault(r.entry.removesuffix(" (inplace)"), r.entry)
    return tuple(chosen.values())[:limit]


def targets(
    reach: ReachMap,
    regs: Iterable[Registration],
    places: dict[str, FormulaPlaces],
    limit: int,
    seconds: Mapping[str, float] = MappingProxyType({}),
) -> Sequence[Target]:
    """The registered Autograd ops with a formula, each with the entries that reach it (up to ``limit``; of
    equally specific entries the cheapest by ``seconds``, the measured seconds per op group)."""
    found: list[Target] = []
    for r in regs:
        place = places.get(r.op)
        if r.key != "Autograd" or place is None:
            continue
        op = r.op if r.namespace == "aten" else f"{r.namespace}::{r.op}"
        target = target_of(reach, op, r.op, place, limit, seconds)
        if target is not None:
            found.append(target)
    return found


def target_of(
    reach: ReachMap, op: str, counter: str, place: FormulaPlaces, limit: int, seconds: Mapping[str, float]
) -> Target | None:
    """``op`` (its kernel counted as ``counter``) with the entries that reach it; None when it has no formula
    a captured check runs (an out= overload, or nothing differentiable) or no entry reaches it."""
    if place.out or not (place.differentiable or place.forward_ad):
        return None
    entries = _entries_for(reach, op, limit, seconds)
    if not entries:
        return None
    forward = {x.entry for x in reach.reaching(op)[0]}
    late = tuple(e for e in entries if e not in forward)
    return Target(op, counter, entries, place.differentiable, place.forward_ad, late, place.outputs)
