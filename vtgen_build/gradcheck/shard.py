"""``check --gradcheck --shard K/N``: a deterministic, balanced part of the selected ops.

The ops are grouped by their base name (``add.Tensor``, ``add_.Tensor`` and ``add.out`` are one
group: an OpInfo entry named ``add`` checks all of them, so they must run in one part), and groups
whose ops share a derivatives.yaml entry are one (``exp`` and ``_foreach_exp``, ``view`` and
``view_copy``): an entry's coverage is computed in one part.  Each
group has a cost: the seconds its checks took in a measured whole run
(``data/gradcheck_costs.json``, written by a run as ``<out>/.vtgen-gradcheck/costs.json``), else
an estimate from the reach map (``estimate``), plus what compiling its kernels takes (each part builds
a library of its own ops: the measured seconds per kernel times the group's kernels; a group no check
ran still costs its compile).  The groups are dealt out largest first, each to
the part with the least cost so far (ties: the lower part), names breaking ties between groups:
every process of a sharded run computes the same partition from the same inputs, whatever its
``--out``.  A part's predicted seconds are its groups' costs plus what every run pays once (the
measured run's rest: generating, the reach map, the children's start).  The coverage JSONs of the N
parts merge into the one a single run writes (``coverage.merge``).

A costs file is data, content-verified when read: ``{"format": FORMAT, "measured": what ran,
"per_kernel": compile seconds per kernel, "once": seconds beside the checks and the compile,
"costs": {group: seconds of checks}, "sha256": digest of the canonical JSON of the rest}``.  A
missing file is no measurement; a damaged one (not JSON, another format, a digest that does not
match, a cost that is not a duration) is no measurement either, and says so (``Costs.damaged``):
the parts are then balanced by the estimate, never refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeGuard

from ..base.errors import VtgenError
from ..base.store import sha256_hex
from ..model.schema import op_name
from .coverage import shard_problem
from .reach import ReachMap
from .units import Registration

__all__ = [
    "COSTS", "FORMAT", "PER_KERNEL", "Costs", "Partition", "base_of", "costs_text", "estimate", "load_costs",
    "parse_shard", "partition", "shard_of",
]  # fmt: skip

COSTS = Path(__file__).resolve().parent.parent / "data" / "gradcheck_costs.json"
FORMAT = "vtgen_build gradcheck costs 2"
_SHARD = re.compile(r"([1-9][0-9]*)/([1-9][0-9]*)")

# The estimate, in seconds of a two-core machine, for a group no measured run timed: its schema
# samples and share of the library, plus each entry whose calls reach one of its ops (the captured
# checks run the most specific ``reach_limit`` of them; more reaching entries mean bigger sample sets).
BASE_SECONDS = 1.0
PER_REACHING_ENTRY = 2.0
# compile seconds per kernel when no run measured it (two busy cores, -O0, about 1,600 kernels)
PER_KERNEL = 0.3


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` (1 <= K <= N <= 1024) as (K, N); anything else is an error."""
    m = _SHARD.fullmatch(text.strip())
    problem = shard_problem(int(m.group(1)), int(m.group(2))) if m else shard_problem(0, 0)
    if m is None or problem is not None:
        raise VtgenError(f"--shard {text}: {problem} (e.g. --shard 2/4)")
    return int(m.group(1)), int(m.group(2))


def base_of(op: str) -> str:
    """The group an op is sharded with, its family: ``add_.Tensor`` -> ``add``, ``__iand__`` -> ``__and__``."""
    return op_name(op.split("::")[-1]).family


@dataclass(frozen=True)
class Costs:
    """The measured seconds of each op group (empty: none), and why a damaged file gave none."""

    seconds: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    damaged: str = ""  # a file was there but is not a costs file: the note that says so
    per_kernel: float = PER_KERNEL  # compile seconds per kernel of the library
    once: float = 0.0  # seconds the measured run spent beside its checks and its compile


def _digest(measured: str, costs: Mapping[str, float], per_kernel: float, once: float) -> str:
    body = {"costs": dict(costs), "measured": measured, "once": once, "per_kernel": per_kernel}
    return sha256_hex(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def costs_text(costs: Mapping[str, float], measured: str, per_kernel: float = PER_KERNEL, once: float = 0.0) -> str:
    """A costs file (deterministic): groups sorted, seconds rounded to 0.01 (per kernel: 0.001), its digest."""
    rounded = {g: round(float(costs[g]), 2) for g in sorted(costs)}
    pk, rest = round(float(per_kernel), 3), round(float(once), 2)
    data = {"format": FORMAT, "measured": measured, "per_kernel": pk, "once": rest, "costs": rounded}
    data["sha256"] = _digest(measured, rounded, pk, rest)
    return json.dumps(data, indent=0, sort_keys=True) + "\n"


def _duration(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _decoded(text: str) -> Costs:
    """The costs of a costs file's text; ``ValueError`` saying what is wrong with anything else."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a costs file of format {FORMAT!r}")
    costs, measured = data.get("costs"), data.get("measured")
    per_kernel, once = data.get("per_kernel"), data.get("once")
    if not isinstance(costs, dict) or not isinstance(measured, str):
        raise ValueError("no costs or no account of the run that measured them")
    bad = next((g for g, v in costs.items() if not _duration(v)), None)
    if bad is not None:
        raise ValueError(f"the cost of {bad!r} is not a duration")
    if not _duration(per_kernel) or not _duration(once):
        raise ValueError("its per_kernel or once is not a duration")
    if data.get("sha256") != _digest(measured, costs, per_kernel, once):
        raise ValueError("its content does not match its digest")
    seconds = MappingProxyType({str(g): float(v) for g, v in costs.items()})
    return Costs(seconds, per_kernel=float(per_kernel), once=float(once))


def load_costs(path: Path = COSTS) -> Costs:
    """The measured costs of ``path`` (default: the shipped file); missing: none; damaged: none and a note."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Costs()
    except (OSError, UnicodeDecodeError) as exc:
        return Costs(damaged=f"{path}: cannot be read ({exc}): every op group's cost is estimated")
    try:
        return _decoded(text)
    except ValueError as exc:
        return Costs(damaged=f"{path}: damaged ({exc}): every op group's cost is estimated")


def estimate(ops: Iterable[str], reach: ReachMap | None, limit: int) -> float:
    """The estimated seconds of a group's ops (``BASE_SECONDS`` and ``PER_REACHING_ENTRY`` above)."""
    total = 0.0
    for op in ops:
        reaching = 0
        if reach is not None:
            forward, backward = reach.reaching(op)
            reaching = len({r.entry for r in (*forward, *backward)})
        total += BASE_SECONDS + PER_REACHING_ENTRY * min(reaching, max(limit, 1))
    return total


def _groups(ops: Sequence[str], entries: Mapping[str, object]) -> dict[str, list[str]]:
    """The op groups: the ops of one base name, joined with every group holding an op of the same
    derivatives.yaml entry (``exp`` and ``_foreach_exp``, ``view`` and ``view_copy``, ``_batch_norm_with_update``
    and its ``_functional`` variant), so that each entry is covered within one part; named by their first base."""
    root: dict[str, str] = {}

    def find(name: str) -> str:
        while root[name] != name:
            name = root[name]
        return name

    owner: dict[object, str] = {}
    for op in ops:
        base = base_of(op)
        root.setdefault(base, base)
        entry = entries.get(op)
        if entry is None:
            continue
        if entry not in owner:
            owner[entry] = base
            continue
        a, b = find(owner[entry]), find(base)
        if a != b:
            root[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = {}
    for op in ops:
        groups.setdefault(find(base_of(op)), []).append(op)
    return groups


@dataclass(frozen=True)
class Partition:
    """Which part each op goes to (1..N), and each part's predicted seconds (``once`` included)."""

    owner: Mapping[str, int]
    predicted: tuple[float, ...]
    groups: tuple[int, ...]  # op groups per part
    kernels: tuple[int, ...]  # kernels per part (the library it builds)


def partition(
    regs: Sequence[Registration],
    n: int,
    reach: ReachMap | None,
    limit: int,
    costs: Costs,
    entries: Mapping[str, object] | None = None,
) -> Partition:
    """The ops of ``regs`` dealt into ``n`` parts by cost (the module's account); ``entries``: each op's
    derivatives.yaml entry (ops sharing one go to one part)."""
    groups = _groups([r.op for r in regs], entries or {})
    of_op: dict[str, set[str]] = {}
    for r in regs:
        of_op.setdefault(r.op, set()).add(r.kernel)
    kernels = {g: len(set().union(*(of_op[op] for op in set(ops)))) for g, ops in groups.items()}
    cost: dict[str, float] = {}
    for g, ops in groups.items():
        by_base: dict[str, list[str]] = {}
        for op in sorted(set(ops)):
            by_base.setdefault(base_of(op), []).append(op)
        checks = sum(
            costs.seconds[b] if b in costs.seconds else estimate(found, reach, limit) for b, found in by_base.items()
        )
        cost[g] = checks + costs.per_kernel * kernels[g]
    loads, counts, built = [costs.once] * n, [0] * n, [0] * n
    part: dict[str, int] = {}
    for g in sorted(groups, key=lambda g: (-cost[g], g)):
        i = min(range(n), key=lambda i: (loads[i], i))
        part[g] = i + 1
        loads[i] += cost[g]
        counts[i] += 1
        built[i] += kernels[g]
    owner = MappingProxyType({op: part[g] for g, ops in groups.items() for op in ops})
    return Partition(owner, tuple(round(x, 1) for x in loads), tuple(counts), tuple(built))


def shard_of(
    regs: Sequence[Registration],
    shard: tuple[int, int],
    reach: ReachMap | None,
    limit: int,
    costs: Costs,
    entries: Mapping[str, object] | None = None,
) -> list[Registration]:
    """The registrations of part K of N (``shard``), in their given order (``partition``)."""
    owner = partition(regs, shard[1], reach, limit, costs, entries).owner
    return [r for r in regs if owner[r.op] == shard[0]]
