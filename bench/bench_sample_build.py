"""Time the sample op library's build loop against the installed torch, in one run.

Two routes, each on a fresh copy of ``sample_project/`` built for real (``VTSAMPLE_USE_TORCH=ON``,
the installed torch's headers and libraries), each with vtgen_build's defaults and again with
precompiled headers off (``CMAKE_DISABLE_PRECOMPILE_HEADERS=ON``, CMake's own switch):

* ``cmake``: ``cmake -S -B -G Ninja`` with no build type (vtgen_generate() then picks Release)
  and ``cmake --build``;
* ``pip``: the dev loop of sample_project/README.md: ``pip install --no-build-isolation -e``
  into a venv that sees this interpreter's packages (torch, scikit-build-core) and holds this
  checkout of vtgen_build; a rebuild is ``python -c "import vtsample"`` (scikit-build-core's
  ``editable.rebuild``), timed minus ``python -c "import torch"`` measured just before.

Cases per route and setting:

* cold: configure + build (pip: the whole ``pip install -e``);
* no-op: nothing changed;
* one-formula edit: the ``softsign`` backward formula multiplied by 2, then a rebuild (the
  generator rewrites the Node's unit and the kernel unit whose forward formula
  ``auto_element_wise`` derives from it; only those compile, then the link).

The goals (issue 24): cold with the defaults at most 0.4x the same build without precompiled
headers; a one-formula edit at most 10 s on an idle 2-core machine, recompiling only the
changed units; a no-op under 1 s.  Every case has its 1-minute load average at its start, and the
CPU seconds of the processes it ran: on a loaded machine the CPU seconds and their ratios carry
over, the wall seconds do not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDIT = ("  self: softsign_backward(grad, self)", "  self: maybe_multiply(softsign_backward(grad, self), 2)")
_COMPILED = re.compile(r"Building CXX object \S*/(\w+\.cpp)\.o\b")
NO_PCH = "CMAKE_DISABLE_PRECOMPILE_HEADERS=ON"


@dataclass(frozen=True)
class Case:
    route: str  # cmake | pip
    pch: bool  # precompiled headers (the default) or not
    name: str  # cold | no-op | one-formula edit
    seconds: float  # wall
    cpu: float  # user + system seconds of every process it ran: what the load inflates least
    compiled: tuple[str, ...]  # translation units compiled
    load: float  # the 1-minute load average when the case started
    header: float | None = None  # cold, cmake, precompiled: the header's own compile (Ninja's log), wall s


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float

    def __add__(self, other: Timing) -> Timing:
        return Timing(self.wall + other.wall, self.cpu + other.cpu)

    def __sub__(self, other: Timing) -> Timing:
        return Timing(self.wall - other.wall, self.cpu - other.cpu)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant
    return usage.ru_utime + usage.ru_stime


def _run(args: Sequence[str | Path], cwd: Path, env: dict[str, str] | None = None) -> tuple[Timing, str]:
    """Run ``args``; its wall and CPU seconds and the output (stdout and stderr).  A failure stops the bench."""
    start, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    timing = Timing(time.perf_counter() - start, _cpu() - cpu)
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, args))} failed:\n{proc.stdout[-4000:]}")
    return timing, proc.stdout


def _case(route: str, pch: bool, name: str, timing: Timing, log: str, load: float) -> Case:
    return Case(route, pch, name, round(timing.wall, 2), round(timing.cpu, 2), _compiled(log), round(load, 2))


def _compiled(log: str) -> tuple[str, ...]:
    return tuple(sorted(_COMPILED.findall(log)))


def _copy_sample(dest: Path) -> Path:
    return Path(shutil.copytree(ROOT / "sample_project", dest, ignore=shutil.ignore_patterns("build", "dist")))


def _edit(source: Path) -> None:
    derivatives = source / "derivatives.yaml"
    text = derivatives.read_text()
    assert text.count(EDIT[0]) == 1, EDIT[0]
    derivatives.write_text(text.replace(EDIT[0], EDIT[1]))


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env.pop("CMAKE_GENERATOR", None)
    env.pop("MAKEFLAGS", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def cmake_route(work: Path, pch: bool, jobs: int) -> list[Case]:
    source = _copy_sample(work / "sample")
    binary = work / "build"
    configure: list[str | Path] = ["cmake", "-S", source, "-B", binary, "-G", "Ninja", "-DVTSAMPLE_USE_TORCH=ON"]
    configure += [f"-Dvtgen_build_DIR={ROOT / 'cmake'}", f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}"]
    configure += [] if pch else [f"-D{NO_PCH}"]
    build: list[str | Path] = ["cmake", "--build", binary, "--parallel", str(jobs)]
    env = _clean_env()
    start = os.getloadavg()[0]
    configured, _ = _run(configure, work, env)
    cases = []
    for name in ("cold", "no-op", "one-formula edit"):
        if name == "one-formula edit":
            _edit(source)
        start = start if name == "cold" else os.getloadavg()[0]
        timing, log = _run(build, work, env)
        case = _case("cmake", pch, name, timing + configured if name == "cold" else timing, log, start)
        if name == "cold" and pch:
            case = replace(case, header=_header_seconds(binary))
        cases.append(case)
    return cases


def _header_seconds(binary: Path) -> float | None:
    """The precompiled header's compile in Ninja's log (``start end mtime output hash``), wall s."""
    for line in (binary / ".ninja_log").read_text().splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) == 5 and fields[3].endswith(".gch"):
            return round((int(fields[1]) - int(fields[0])) / 1000, 2)
    return None


def make_venv(work: Path) -> Path:
    """A venv seeing this interpreter's packages (torch, scikit-build-core) with this checkout of
    vtgen_build installed (editable): what `pip install --no-build-isolation` needs."""
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv], work)
    python = venv / "bin" / "python"
    # --system-site-packages reaches the base interpreter's packages only: when this interpreter
    # is itself a venv's, its own site-packages (scikit-build-core, torch, ...) join by a .pth file.
    own = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work)[1].strip()
    (Path(site) / "_bench_parent.pth").write_text("".join(f"{path}\n" for path in own))
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps"]
    pip += ["--no-build-isolation"]
    _run([*pip, "-e", ROOT], work, _clean_env())
    return python


def pip_route(work: Path, python: Path, pch: bool, jobs: int) -> list[Case]:
    source = _copy_sample(work / "sample")
    env = _clean_env()
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(jobs)
    install: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "-v", "--no-deps"]
    install += ["--no-build-isolation"]
    install += [] if pch else ["-C", f"cmake.define.{NO_PCH}"]
    start = os.getloadavg()[0]
    timing, log = _run([*install, "-e", source], work, env)
    cases = [_case("pip", pch, "cold", timing, log, start)]
    for name in ("no-op", "one-formula edit"):
        if name == "one-formula edit":
            _edit(source)
        start = os.getloadavg()[0]
        reference, _ = _run([python, "-c", "import torch"], work, env)
        timing, log = _run([python, "-c", "import vtsample"], work, env)
        cases.append(_case("pip", pch, name, timing - reference, log, start))
    return cases


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(work: Path, routes: Sequence[str], baseline: bool, jobs: int) -> list[Case]:
    python = make_venv(work) if "pip" in routes else None
    cases: list[Case] = []
    for route in routes:
        for pch in (True, False) if baseline else (True,):
            where = work / f"{route}-{'pch' if pch else 'nopch'}"
            where.mkdir()
            if route == "cmake":
                done = cmake_route(where, pch, jobs)
            else:
                assert python is not None
                done = pip_route(where, python, pch, jobs)
            for c in done:  # as they come: a later failure keeps them
                print(f"bench: {c.route} pch={'on' if c.pch else 'off'} {c.name}: {c.seconds} s, CPU {c.cpu} s, "
                      f"load {c.load}, compiled {len(c.compiled)}", file=sys.stderr, flush=True)  # fmt: skip
            cases += done
    return cases


def summary(cases: Sequence[Case]) -> list[str]:
    """The goals, one line each, from the measured cases."""
    by = {(c.route, c.pch, c.name): c for c in cases}
    lines = []
    for route in dict.fromkeys(c.route for c in cases):
        cold, plain = by.get((route, True, "cold")), by.get((route, False, "cold"))
        if cold and plain:
            ratio, cpu = cold.seconds / plain.seconds, cold.cpu / plain.cpu
            lines.append(
                f"{route}: cold {ratio:.2f}x the build without precompiled headers, CPU {cpu:.2f}x (goal <= 0.4x)"
            )
            if cold.header is not None:
                lines.append(
                    f"{route}: the precompiled header alone took {cold.header} s, {cold.header / plain.seconds:.2f}x"
                    " the build without it: no cold build with this compiler can go below that ratio"
                    " (one serial step that every unit waits for)"
                )
        edit, noop = by[(route, True, "one-formula edit")], by[(route, True, "no-op")]
        units = ", ".join(edit.compiled)
        lines.append(
            f"{route}: one-formula edit {edit.seconds} s (CPU {edit.cpu} s) at load {edit.load}, compiled {units}"
            " (goal <= 10 s idle)"
        )
        plain_edit = by.get((route, False, "one-formula edit"))
        if plain_edit:
            lines.append(f"{route}: the edit is {edit.cpu / plain_edit.cpu:.2f}x the CPU seconds without them")
        lines.append(f"{route}: no-op {noop.seconds} s (CPU {noop.cpu} s), compiled {len(noop.compiled)} (goal < 1 s)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", default="cmake,pip", help="comma-separated: cmake, pip (default both)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the builds without precompiled headers")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs (default 2)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    routes = [r for r in args.routes.split(",") if r]
    unknown = sorted(set(routes) - {"cmake", "pip"})
    if unknown:
        parser.error(f"unknown route(s): {', '.join(unknown)}")
    before = load()
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-") as tmp:
        cases = run(Path(tmp), routes, not args.no_baseline, args.jobs)
    after = load()
    if args.json:
        print(json.dumps({"load_before": before, "load_after": after, "cases": [asdict(c) for c in cases]}, indent=2))
        return 0
    print(f"load average before: {before}; after: {after}")
    print(f"{'route':<6} {'pch':<4} {'case':<17} {'seconds':>8} {'CPU s':>8} {'load':>5}  compiled")
    for c in cases:
        pch = "on" if c.pch else "off"
        units = ", ".join(c.compiled) or "-"
        print(f"{c.route:<6} {pch:<4} {c.name:<17} {c.seconds:>8} {c.cpu:>8} {c.load:>5}  {units}")
    print("\n".join(summary(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
