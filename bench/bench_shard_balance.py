"""The parts ``check --gradcheck --shard K/N`` would run, and each part's predicted seconds.

Reads an ``--out`` directory where a ``check --gradcheck --coverage`` run of the yaml already ran (its
generated index, reach map and formula places are reused; nothing is compiled or checked) and a costs
file (default: the shipped ``data/gradcheck_costs.json``), and prints, per part, its op groups, the
kernels of the library it builds and its predicted seconds (``gradcheck/shard.py``'s model).  With
``--times T1,T2,...`` (the parts' measured wall seconds) it also prints measured against predicted and
each part's share of their sum.

Usage: python bench/bench_shard_balance.py --pytorch-root TORCHGEN --out DIR [--parts 4] [--costs FILE]
       [--per-kernel S --once S] [--times 613,214,191,176]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from vtgen_build.emit.output_index import read_index
from vtgen_build.gradcheck.formulas import formula_places
from vtgen_build.gradcheck.reach import reach_map
from vtgen_build.gradcheck.run import WORK
from vtgen_build.gradcheck.shard import COSTS, load_costs, partition
from vtgen_build.inputs.files import Inputs
from vtgen_build.inputs.paths import find_pytorch_layout
from vtgen_build.torchlib import locate_torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pytorch-root", required=True)
    ap.add_argument("--out", required=True, help="the --out of an earlier check --gradcheck --coverage run")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--costs", default=str(COSTS))
    ap.add_argument("--release", default="2.13")
    ap.add_argument("--per-kernel", type=float, help="compile seconds per kernel (default: the costs file's)")
    ap.add_argument("--once", type=float, help="seconds every part pays (default: the costs file's)")
    ap.add_argument("--times", help="the parts' measured wall seconds, comma-separated")
    args = ap.parse_args()
    layout = find_pytorch_layout(args.pytorch_root)
    inputs = Inputs(layout.native_functions, layout.derivatives, layout.tags, "aten")
    out = Path(args.out).resolve()
    work = out / WORK
    costs = load_costs(Path(args.costs))
    if costs.damaged:
        raise SystemExit(costs.damaged)
    if args.per_kernel is not None:
        costs = replace(costs, per_kernel=args.per_kernel)
    if args.once is not None:
        costs = replace(costs, once=args.once)
    regs = list(read_index(out).registrations)
    entries = {op: p.entry for op, p in formula_places(inputs, work, args.release).items()}
    parts = partition(regs, args.parts, reach_map(locate_torch(None), work), 2, costs, entries)
    times = [float(t) for t in args.times.split(",")] if args.times else []
    print(f"costs: {args.costs} (per kernel {costs.per_kernel:.3f} s, once {costs.once:.0f} s)")
    total = sum(parts.predicted)
    for k in range(args.parts):
        line = (
            f"part {k + 1}/{args.parts}: {parts.groups[k]:4d} op groups, {parts.kernels[k]:4d} kernels, "
            f"predicted {parts.predicted[k]:6.0f} s ({parts.predicted[k] / total:.2f} of the parts' sum)"
        )
        if times:
            line += f"; measured {times[k]:.0f} s ({times[k] / sum(times):.2f} of the parts' sum)"
        print(line)


if __name__ == "__main__":
    main()
