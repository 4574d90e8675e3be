"""vmap of an op with a generated batching rule (``vmap: elementwise``) against one call on the stacked input.

The stable sample's ``softsign`` (or with ``--package vtsample`` the classic sample's) over a float32
batch of 64 x 256, per call, in one process (one intra-op thread, CPU time of the calling thread, the
best of 9 batches taken in turn): ``torch.vmap`` of the op (its generated rule, registered by the
stable package's ``_autograd.py``, or by the classic package's typed API), one call of the op on
the stacked (64, 256) input, ``torch.vmap`` of the equivalent aten expression ``x / (1 + x.abs())``,
of ``torch.abs`` (one aten op, its C++ batching rule) and of the identity (``torch.vmap``'s own cost
per call: the floor no rule can go under), and, in a second process that loads only the library
(no generated module, so no rule; the classic package: its rules unregistered), ``torch.vmap`` of
the op through PyTorch's fallback loop.  The load average is printed; with ``--repeats N`` the whole
measure runs N times (new processes) and each figure is the median, with the rule's ratio to the aten
expression's vmap per run.

Usage: python bench/bench_vmap.py --site DIR [--calls N] [--package vtstable|vtsample] [--repeats N]
(DIR holds the installed package, on sys.path; run with the Python whose torch it was built for.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

TIMING = """
import json, sys, time, warnings, torch
sys.path.insert(0, sys.argv[1])
calls = int(sys.argv[3])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
package = sys.argv[4]
if sys.argv[2] == "rule":
    __import__(package)
elif package == "vtsample":  # the classic package, its rules unregistered (PyTorch's fallback)
    import vtsample
    for library in vtsample.ops._batching_libraries:
        library._destroy()
else:  # the library alone: no generated module, no rule (PyTorch's fallback)
    import glob
    torch.ops.load_library(glob.glob(sys.argv[1] + "/vtstable/_vtstable_ops*.so")[0])
op = getattr(torch.ops, package).softsign
x = torch.randn(64, 256)


def per_call(fn):
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return (time.thread_time() - start) / calls


if sys.argv[2] == "rule":
    torch.testing.assert_close(torch.vmap(op)(x), op(x))
    timed = {
        "vmap (generated rule)": lambda: torch.vmap(op)(x),
        "one call, stacked input": lambda: op(x),
        "vmap of aten x / (1 + x.abs())": lambda: torch.vmap(lambda t: t / (1 + t.abs()))(x),
        "vmap of torch.abs (a C++ rule)": lambda: torch.vmap(torch.abs)(x),
        "vmap of the identity (the floor)": lambda: torch.vmap(lambda t: t)(x),
    }
else:
    timed = {"vmap (fallback loop)": lambda: torch.vmap(op)(x)}
for fn in timed.values():
    for _ in range(20):
        fn()
found = {}
for _ in range(9):  # the functions in turn, the best batch of each: load drifts over a run
    for name, fn in timed.items():
        found[name] = min(found.get(name, 1.0), per_call(fn))
print(json.dumps(found))
"""


def _run(site: str, calls: int, package: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for mode in ("rule", "fallback"):
        done = subprocess.run(
            [sys.executable, "-c", TIMING, site, mode, str(calls), package],
            check=True,
            capture_output=True,
            text=True,
        )
        found.update(json.loads(done.stdout.splitlines()[-1]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", required=True, metavar="DIR")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--package", choices=("vtstable", "vtsample"), default="vtstable")
    parser.add_argument("--repeats", type=int, default=1, help="runs (new processes each); medians printed")
    opts = parser.parse_args()
    load = os.getloadavg()[0]
    runs = [_run(opts.site, opts.calls, opts.package) for _ in range(opts.repeats)]
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; intra-op threads 1; float32 64 x 256")
    print(f"median of {len(runs)} run(s), each the best of 9 batches of {opts.calls} calls:")
    one = statistics.median(r["one call, stacked input"] for r in runs)
    for name in runs[0]:
        seconds = statistics.median(r[name] for r in runs)
        print(f"  {name:32} {seconds * 1e6:9.1f} us  ({seconds / one:6.2f}x one call)")
    ratios = sorted(r["vmap (generated rule)"] / r["vmap of aten x / (1 + x.abs())"] for r in runs)
    spread = f" (runs: {', '.join(f'{q:.2f}' for q in ratios)})" if len(runs) > 1 else ""
    print(f"  rule / aten expression's vmap, same run: median {statistics.median(ratios):.2f}x{spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
