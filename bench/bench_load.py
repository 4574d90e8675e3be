"""Time loading the real native_functions.yaml + derivatives.yaml: vtgen_build against torchgen.

Each repeat runs in a fresh Python process, so neither side keeps a cache from an
earlier repeat (torchgen caches parsed files per path; our schema parsers memoise).
A child process imports its loader first and then times only the load:

* vtgen_build: ``load_model(Inputs(native_functions, derivatives, tags))``
* torchgen:    ``parse_native_yaml(native_functions, tags)`` then
               ``load_derivatives(derivatives, native_functions, tags)``

The two kinds of repeat alternate, so a slow moment on the machine hits both.
Prints the median of each and their ratio; ``--check`` exits 1 when the ratio misses ``--goal``.

    python bench/bench_load.py [--repeats 5] [--pytorch-root DIR] [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIDES = ("vtgen_build", "torchgen")
REPO = Path(__file__).resolve().parent.parent  # time the working tree's vtgen_build, installed or not


def _paths(root: str | None) -> tuple[str, str, str]:
    """native_functions.yaml, tags.yaml and derivatives.yaml from ``root`` or the installed torchgen."""
    if root is None:
        spec = importlib.util.find_spec("torchgen")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("bench_load: torch is not installed; give --pytorch-root (pip install torch==2.13.0)")
        root = next(iter(spec.submodule_search_locations))
    from vtgen_build.inputs.paths import find_pytorch_layout

    layout = find_pytorch_layout(root)
    return layout.native_functions, layout.tags, layout.derivatives


def _child(side: str, native: str, tags: str, derivatives: str) -> dict[str, float]:
    """Run in the fresh process: import, then time one load."""
    start = time.perf_counter()
    if side == "vtgen_build":
        from vtgen_build.model import Inputs, load_model

        imported = time.perf_counter()
        model = load_model(Inputs(native, derivatives, tags))
        counts = (len(model.native_functions), len(model.derivatives))
    else:
        from torchgen.gen import parse_native_yaml  # type: ignore[import-untyped]
        from torchgen.packaged.autograd.load_derivatives import load_derivatives  # type: ignore[import-untyped]

        imported = time.perf_counter()
        parsed = parse_native_yaml(native, tags)
        infos, _ = load_derivatives(derivatives, native, tags)
        counts = (len(parsed.native_functions), len(infos))
    done = time.perf_counter()
    return {"import": imported - start, "load": done - imported, "functions": counts[0], "derivatives": counts[1]}


def _run_child(side: str, paths: tuple[str, str, str]) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", side, *paths]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_load: the {side} child failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per side (default 5)")
    parser.add_argument("--pytorch-root", metavar="DIR", help="PyTorch checkout or torchgen (default: installed)")
    parser.add_argument("--goal", type=float, default=0.5, help="target ratio vtgen_build / torchgen (default 0.5)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when the ratio misses --goal")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    if args.child:
        native, tags, derivatives = args.files
        print(json.dumps(_child(args.child, native, tags, derivatives)))
        return 0

    paths = _paths(args.pytorch_root)
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for _ in range(args.repeats):
        for side in SIDES:
            runs[side].append(_run_child(side, paths))
    medians = {
        side: {key: statistics.median(r[key] for r in runs[side]) for key in ("import", "load")} for side in SIDES
    }
    ratio = medians["vtgen_build"]["load"] / medians["torchgen"]["load"]
    if args.json:
        print(json.dumps({"repeats": args.repeats, "median_seconds": medians, "ratio": ratio, "goal": args.goal}))
    else:
        print(f"native_functions.yaml: {paths[0]}")
        print(f"derivatives.yaml:      {paths[2]}")
        print(f"median of {args.repeats} fresh processes (seconds; imports not timed in 'load'):")
        for side in SIDES:
            r = runs[side][0]
            print(
                f"  {side:<12} load {medians[side]['load']:.3f}   import {medians[side]['import']:.3f}"
                f"   ({r['functions']:.0f} native functions, {r['derivatives']:.0f} derivative infos)"
            )
        verdict = "meets" if ratio <= args.goal else "MISSES"
        print(f"ratio vtgen_build / torchgen (load): {ratio:.2f}x  ({verdict} the goal of <= {args.goal}x)")
    return 1 if args.check and ratio > args.goal else 0


if __name__ == "__main__":
    sys.exit(main())
