"""The verdict of ``check --gradcheck --op sin`` with and without a warm worker, in the same run.

In a copy of the real yaml (bench_gradcheck.py's), after one cold run and one run of the wrong
formula (so that both sin units are in the artifact cache, and no step below compiles):

* unchanged: ``--op sin`` again, nothing changed (the goal: <= 10 s idle);
* wrong: sin's formula ``self.cos()`` -> ``self.sin()``, FAILED at its line (the goal: <= 30 s idle,
  the compile of the edited unit included; this bench leaves the compile out: its cost is
  bench_gradcheck.py's ``edit``);

each without the worker (``--no-worker``: a new Python per child) and with it, alternating, as a
ratio. ``--repeat N`` pairs (default 2); the machine's load is printed with the figures.

    python bench/bench_worker.py [--pytorch-root DIR] [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_gradcheck import _copy_inputs  # the same copy of the yaml
from common import default_root, timed  # bench/common.py (the script's own directory)

RIGHT, WRONG = "  self: grad * self.cos().conj()", "  self: grad * self.sin().conj()"


def _run(base: list[str], expect: int, *extra: str) -> float:
    seconds, done = timed([*base, *extra])
    if done.returncode != expect:
        raise SystemExit(f"exit {done.returncode}, not {expect}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytorch-root", default=None, help="an installed torchgen package (default: this one)")
    parser.add_argument("--repeat", type=int, default=2, help="pairs per step (default: 2)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = Path(args.pytorch_root or default_root())
    tool = [sys.executable, "-m", "vtgen_build"]
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-worker-") as tmp_dir:
        tmp = Path(tmp_dir)
        derivatives = _copy_inputs(root, tmp / "src")
        text = derivatives.read_text(encoding="utf-8")
        out = tmp / "out"
        base = [*tool, "check", "--pytorch-root", str(tmp / "src"), "--out", str(out), "--gradcheck", "--op", "sin"]
        _run(base, 0)  # cold: both units built once, the reach map computed
        derivatives.write_text(text.replace(RIGHT, WRONG, 1), encoding="utf-8")
        _run(base, 1)
        _run([*tool, "worker", "start", "--out", str(out)], 0)
        seconds: dict[str, list[float]] = {}
        try:
            for step, content, expect in (("unchanged", text, 0), ("wrong", text.replace(RIGHT, WRONG, 1), 1)):
                derivatives.write_text(content, encoding="utf-8")
                _run(base, expect)  # the edit's generation, once: every timed run below sees the same files
                for _ in range(args.repeat):
                    seconds.setdefault(f"{step}_cold_python", []).append(_run(base, expect, "--no-worker"))
                    seconds.setdefault(f"{step}_worker", []).append(_run(base, expect))
        finally:
            _run([*tool, "worker", "stop", "--out", str(out)], 0)
    median = {k: statistics.median(v) for k, v in seconds.items()}
    ratios = {step: median[f"{step}_worker"] / median[f"{step}_cold_python"] for step in ("unchanged", "wrong")}
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"seconds": seconds, "median": median, "ratio": ratios, "load": load}, indent=2))
        return 0
    for step in ("unchanged", "wrong"):
        print(f"--op sin {step:>9}: {median[f'{step}_cold_python']:6.1f}s without the worker, "
              f"{median[f'{step}_worker']:6.1f}s with it ({ratios[step]:.2f}x)")  # fmt: skip
    print(f"(load average {load:.1f}; medians of {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
