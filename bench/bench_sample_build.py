"""Time a CMake + Ninja build of sample_project against the installed torch, in one run.

Cases, each the wall time of ``cmake --build`` on a copy of the sample configured with
``VTSAMPLE_USE_TORCH=ON`` (the real op library, real torch headers):

* first build: generation and every translation unit (the reference of the ratios);
* no-op rebuild: nothing changed;
* one-formula edit: the ``softsign`` backward formula multiplied by 2, then a rebuild (the
  generator rewrites the Node's shard, plus the kernel shard whose forward formula
  ``auto_element_wise`` derives from it; only those compile, then the link).

The figures are ratios against the first build of the same run, so they carry over between
machines better than seconds do.  ``--shards`` sets VTSAMPLE_SHARDS (default 2).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDIT = ("  self: softsign_backward(grad, self)", "  self: maybe_multiply(softsign_backward(grad, self), 2)")
_COMPILED = re.compile(r"Building CXX object \S*/(\w+\.cpp)\.o\b")


@dataclass(frozen=True)
class Case:
    name: str
    seconds: float
    ratio: float  # seconds / the first build's
    compiled: tuple[str, ...]  # translation units compiled


def _build(binary: Path, jobs: int) -> tuple[float, tuple[str, ...]]:
    start = time.perf_counter()
    proc = subprocess.run(
        ["cmake", "--build", str(binary), "--parallel", str(jobs)],
        check=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return time.perf_counter() - start, tuple(sorted(_COMPILED.findall(proc.stdout)))


def run(work: Path, shards: int, jobs: int) -> list[Case]:
    source = Path(shutil.copytree(ROOT / "sample_project", work / "sample", ignore=shutil.ignore_patterns("build")))
    binary = work / "build"
    subprocess.run(
        [
            "cmake",
            "-S",
            str(source),
            "-B",
            str(binary),
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DVTSAMPLE_USE_TORCH=ON",
            f"-DVTSAMPLE_SHARDS={shards}",
            f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
            f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    timings: list[tuple[str, float, tuple[str, ...]]] = []
    for name in ("first build", "no-op rebuild", "one-formula edit"):
        if name == "one-formula edit":
            derivatives = source / "derivatives.yaml"
            text = derivatives.read_text()
            assert text.count(EDIT[0]) == 1, EDIT[0]
            derivatives.write_text(text.replace(EDIT[0], EDIT[1]))
        seconds, compiled = _build(binary, jobs)
        timings.append((name, seconds, compiled))
    first = timings[0][1]
    return [Case(name, round(seconds, 2), round(seconds / first, 4), compiled) for name, seconds, compiled in timings]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (default 2)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-") as tmp:
        cases = run(Path(tmp), args.shards, args.jobs)
    if args.json:
        print(json.dumps([asdict(c) for c in cases], indent=2))
        return 0
    print(f"{'case':<18} {'seconds':>8} {'ratio':>8}  compiled")
    for c in cases:
        print(f"{c.name:<18} {c.seconds:>8} {c.ratio:>8}  {', '.join(c.compiled) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
