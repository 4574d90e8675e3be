"""Wall time of ``vtgen-build check`` on PyTorch 2.13's whole output vs one shard against the real headers.

Both in the same run, on the same machine:

* ``check``: a cold check build (generate + every VariableType and Functions shard
  against the stub headers, ``-j`` all cores), in a fresh directory;
* ``--op``: a one-op check in that directory (what a one-formula edit costs);
* one shard (``VariableType_0.cpp``) compiled alone against the wheel's real headers,
  the way ``check --torch-include`` compiles it.

    python bench/bench_check.py [--pytorch-root DIR] [--jobs N] [--goal SECONDS] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _default_root() -> str:
    import torchgen

    return os.path.dirname(torchgen.__file__)


def _timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytorch-root", default=None, help="PyTorch checkout or torchgen package")
    parser.add_argument("--jobs", type=int, default=0, help="parallel compiles for check (default: all cores)")
    parser.add_argument("--goal", type=float, default=60.0, help="target wall time of the whole check (s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = args.pytorch_root or _default_root()
    torch_include = Path(root).parent / "torch" / "include"
    vtgen = [sys.executable, "-m", "vtgen_build"]
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-check-") as tmp:
        out = Path(tmp) / "check"
        base = [*vtgen, "check", "--pytorch-root", root, "--out", str(out)]
        whole, done = _timed([*base, *(["-j", str(args.jobs)] if args.jobs else [])])
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
            return 1
        one_op, done = _timed([*base, "--op", "sin"])
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr)
            return 1
        shim = out / ".vtgen-check" / "real" / "shim"
        shim.joinpath("torch/csrc/autograd/generated").mkdir(parents=True, exist_ok=True)
        shim.joinpath("torch/csrc/autograd/generated/Functions.h").write_text(f'#include "{out / "Functions.h"}"\n')
        cxx = os.environ.get("CXX", "g++")
        real, done = _timed(
            [
                cxx,
                "-std=c++17",
                "-fsyntax-only",
                f"-I{shim}",
                f"-I{out}",
                f"-isystem{torch_include}",
                f"-isystem{torch_include / 'torch/csrc/api/include'}",
                str(out / "VariableType_0.cpp"),
            ]
        )
        if done.returncode != 0:
            print(done.stderr[-4000:], file=sys.stderr)
            return 1
    result = {
        "check_whole_s": round(whole, 1),
        "check_one_op_s": round(one_op, 1),
        "real_headers_one_shard_s": round(real, 1),
        "cores": os.cpu_count(),
        "goal_s": args.goal,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"check, whole output (20 units, cold, stubs): {whole:6.1f} s  (goal <= {args.goal:.0f} s)")
        print(f"check --op sin (one small unit):             {one_op:6.1f} s")
        print(f"one shard against the real headers:          {real:6.1f} s")
    return 0 if whole <= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
