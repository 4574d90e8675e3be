"""Time the stable-ABI sample's build against the classic sample's, in one run.

Both on fresh copies, with CMake + Ninja against the installed torch, vtgen_build's defaults:

* classic: ``sample_project/`` with ``VTSAMPLE_USE_TORCH=ON`` (ATen kernels, generated autograd
  VariableType/Nodes/ADInplaceOrView, precompiled ATen/autograd header);
* stable: ``sample_stable/`` (``STABLE_ABI 2.10``: torch's stable headers only, no C++ autograd,
  and the ABI audit after linking).

Cases: cold (configure + build) of each, in alternating order over ``--repeats``; then one-kernel
edits: a changed constant in one kernel of each sample's ``src/kernels.cpp`` and a rebuild (one
unit compiles, then the link; the stable one also re-audits).  Every case records the 1-minute load
average at its start and the CPU seconds of the processes it ran: on a loaded (shared) machine the
CPU seconds carry over better than the wall seconds.  The goal (issue 32): stable cold <= 0.25x
classic cold.

    python bench/bench_stable_build.py [--repeats N] [--jobs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (sample directory, extra configure flags, one kernel's edit in src/kernels.cpp: text -> replacement)
SAMPLES = {
    "classic": ("sample_project", ["-DVTSAMPLE_USE_TORCH=ON"], ("out.copy_(self / (self.abs() + 1));",
                                                                "out.copy_(self / (self.abs() + 1.0));")),
    "stable": ("sample_stable", [], ("return xp[i] * wp[i] + (bp ? bp[i] : T(0));",
                                     "return xp[i] * wp[i] + (bp ? bp[i] : T(0)) + T(0) * xp[i];")),
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    sample: str
    name: str  # cold | one-kernel edit
    seconds: float
    cpu: float
    load: float


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: Sequence[str | Path], cwd: Path) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.pop("CMAKE_GENERATOR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])  # this checkout
    start, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, args))} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return time.perf_counter() - start, _cpu() - cpu


def build(sample: str, work: Path, jobs: int, edit: bool) -> list[Case]:
    directory, flags, change = SAMPLES[sample]
    source = Path(shutil.copytree(ROOT / directory, work / sample / "src", ignore=shutil.ignore_patterns("build")))
    binary = work / sample / "build"
    configure: list[str | Path] = ["cmake", "-S", source, "-B", binary, "-G", "Ninja", *flags]
    configure += [f"-Dvtgen_build_DIR={ROOT / 'cmake'}", f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}"]
    load = os.getloadavg()[0]
    wall_c, cpu_c = _run(configure, work)
    wall_b, cpu_b = _run(["cmake", "--build", binary, "--parallel", str(jobs)], work)
    cases = [Case(sample, "cold", round(wall_c + wall_b, 2), round(cpu_c + cpu_b, 2), round(load, 2))]
    if edit:
        kernels = source / "src" / "kernels.cpp"
        text = kernels.read_text()
        assert text.count(change[0]) == 1, change[0]
        kernels.write_text(text.replace(change[0], change[1]))
        load = os.getloadavg()[0]
        wall, cpu = _run(["cmake", "--build", binary, "--parallel", str(jobs)], work)
        cases.append(Case(sample, "one-kernel edit", round(wall, 2), round(cpu, 2), round(load, 2)))
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1, help="cold builds of each sample (alternating)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-stable-") as tmp:
        for i in range(args.repeats):
            order = ("stable", "classic") if i % 2 else ("classic", "stable")
            for sample in order:
                work = Path(tmp) / f"r{i}"
                cases += build(sample, work, args.jobs, edit=i == 0)
                shutil.rmtree(work / sample)
    if args.json:
        print(json.dumps([asdict(c) for c in cases], indent=1))
    for c in cases:
        print(f"{c.sample:8} {c.name:16} {c.seconds:7.2f} s wall {c.cpu:7.2f} s CPU  (load {c.load})")
    for key in ("seconds", "cpu"):
        cold = {s: min(getattr(c, key) for c in cases if c.sample == s and c.name == "cold") for s in SAMPLES}
        print(f"stable / classic cold ({'wall' if key == 'seconds' else 'CPU'}, best of each): "
              f"{cold['stable'] / cold['classic']:.2f}x (goal <= 0.25x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
