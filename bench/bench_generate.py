"""Time `vtgen-build generate` against torchgen's autograd codegen on the real yaml, in one run.

Every measurement is the wall time of a fresh process (imports included), median of
``--repeats``.  Cases: a cold full generation, a no-op rerun, a one-formula edit of the
``sin`` backward, a saved-value change in one op (``dist``); torchgen: its load +
VariableType + Functions stages (the part vtgen_build replaces) and its whole
``gen_autograd`` rerun after the same edit.  Files rewritten are counted by mtime.

By default vtgen_build runs from a fresh virtual environment holding a regular
(non-editable) install of this checkout, as a user's would: the interpreter
running the bench may carry start-up costs of its own (``.pth`` files, an
editable-install finder, no bytecode cache) that are not vtgen_build's.
``--interpreter current`` uses the running interpreter's ``vtgen-build`` instead.

``--noop-vs CHECKOUT`` times only the no-op rerun, of this checkout and of CHECKOUT (another
git worktree, say the main branch's), each from a fresh venv of its own, alternating A B A B
so that both see the same machine; it prints both medians, their ratio and the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIN = ("self: grad * self.cos().conj()", "self: grad * self.cos().conj() * 2")
DIST = (
    "  self: norm_backward(grad, self - other, p, result)\n  other: -norm_backward(grad, self - other, p, result)",
    "  self: norm_backward(grad, self - other, p, (self - other).norm(p))\n"
    "  other: -norm_backward(grad, self - other, p, (self - other).norm(p))",
)

TORCHGEN_STAGES = """
import sys
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.gen_autograd import match_differentiability_info, gen_variable_type
from torchgen.packaged.autograd.gen_autograd_functions import gen_autograd_functions_lib
from torchgen.packaged.autograd.load_derivatives import load_derivatives
from torchgen.api import cpp
native, tags, out, autograd = sys.argv[1:5]
infos, keys = load_derivatives(autograd + "/derivatives.yaml", native, tags)
fns = sorted(parse_native_yaml(native, tags).native_functions, key=lambda f: cpp.name(f.func))
with_infos = match_differentiability_info(fns, infos)
gen_variable_type(out, native, tags, with_infos, autograd + "/templates", keys)
gen_autograd_functions_lib(out, infos, autograd + "/templates")
"""


def _wall(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _includers(out: Path, header: str) -> list[str]:
    return [p.name for p in out.glob("*.cpp") if f'#include "{header}"' in p.read_text()]


def _snapshot(out: Path) -> dict[str, int]:
    return {
        str(p.relative_to(out)): p.stat().st_mtime_ns
        for p in out.rglob("*")
        if p.is_file() and not p.relative_to(out).parts[0].startswith(".")  # not the manifest, cache, record
    }


def _rewritten(before: dict[str, int], out: Path) -> list[str]:
    return sorted(rel for rel, mtime in _snapshot(out).items() if before.get(rel) != mtime)


REPO = Path(__file__).resolve().parent.parent


def _fresh_venv(work: Path, repo: Path = REPO, name: str = "venv") -> Path:
    """A new virtual environment with ``repo`` installed (not editable); its ``bin`` directory."""
    venv = work / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(repo)]
    subprocess.run(pip, check=True, stdout=subprocess.DEVNULL)
    return venv / "bin"


def _goals(rows: list[tuple[str, float, str]], files: dict[str, list[str]]) -> list[str]:
    seconds = {name: s for name, s, _ in rows}
    cold = seconds["vtgen cold full generation"] / seconds["torchgen load + VariableType + Functions"]
    checks = [
        (f"cold full generation {cold:.2f}x torchgen's stages", cold <= 0.30, "<= 0.30x"),
        (f"no-op rerun {seconds['vtgen no-op rerun']:.3f} s", seconds["vtgen no-op rerun"] <= 0.060, "<= 0.060 s"),
        (
            f"one-formula edit {seconds['vtgen one-formula edit (sin backward)']:.3f} s",
            seconds["vtgen one-formula edit (sin backward)"] <= 0.150,
            "<= 0.150 s",
        ),
        (f"one-formula edit rewrote {len(files['sin'])} files", len(files["sin"]) <= 2, "<= 2"),
        (f"saved-value change rewrote {len(files['dist'])} files", len(files["dist"]) <= 3, "<= 3"),
    ]
    return [f"{'met   ' if ok else 'MISSED'} {what} (goal {goal})" for what, ok, goal in checks]


def _noop_vs(other: Path, repeats: int, work: Path, inputs: list[str]) -> None:
    """The no-op rerun of this checkout (A) against ``other``'s (B), alternating, in one run."""
    trees = {"A": REPO, "B": other.resolve()}
    commands = {}
    for key, repo in trees.items():
        bindir = _fresh_venv(work, repo, f"venv-{key}")
        command = [str(bindir / "vtgen-build"), "generate", *inputs, "--out", str(work / f"out-{key}")]
        _wall(command)  # the cold run writes the output and the no-op record
        _wall(command)  # a first rerun warms the file cache
        commands[key] = command
    times: dict[str, list[float]] = {"A": [], "B": []}
    load = os.getloadavg()
    for _ in range(repeats):
        for key, command in commands.items():
            times[key].append(_wall(command))
    ratios = [a / b for a, b in zip(times["A"], times["B"], strict=True)]
    for key, repo in trees.items():
        print(
            f"{key} no-op rerun  median {statistics.median(times[key]):.4f} s  "
            f"min {min(times[key]):.4f}  max {max(times[key]):.4f}  ({repo})"
        )
    print(f"A/B median ratio {statistics.median(ratios):.3f} (pair by pair), {repeats} pairs")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: {os.getloadavg()[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-torchgen-full", action="store_true", help="skip torchgen's whole gen_autograd runs")
    parser.add_argument(
        "--interpreter",
        choices=("venv", "current"),
        default="venv",
        help="run vtgen-build from a fresh venv with a regular install (default) or from this interpreter",
    )
    parser.add_argument("--noop-vs", type=Path, metavar="CHECKOUT", help="only the no-op rerun, against CHECKOUT's")
    args = parser.parse_args()
    import torchgen

    tg = Path(torchgen.__file__).parent
    work = Path(tempfile.mkdtemp(prefix="vtgen-bench-"))
    native, tags, deriv = work / "native_functions.yaml", work / "tags.yaml", work / "derivatives.yaml"
    shutil.copy(tg / "packaged/ATen/native/native_functions.yaml", native)
    shutil.copy(tg / "packaged/ATen/native/tags.yaml", tags)
    autograd = work / "autograd"
    shutil.copytree(tg / "packaged/autograd", autograd)
    original = (autograd / "derivatives.yaml").read_text()
    deriv.write_text(original)
    if args.noop_vs:
        inputs = ["--native-functions", str(native), "--derivatives", str(deriv), "--tags", str(tags)]
        _noop_vs(args.noop_vs, args.repeats, work, inputs)
        shutil.rmtree(work, ignore_errors=True)
        return 0
    bindir = str(_fresh_venv(work)) if args.interpreter == "venv" else os.path.dirname(sys.executable)
    python = os.path.join(bindir, "python") if args.interpreter == "venv" else sys.executable
    exe = shutil.which("vtgen-build", path=bindir) or ""
    base = [exe, "generate"] if exe else [python, "-m", "vtgen_build", "generate"]
    out = work / "out"
    gen = [
        *base,
        "--native-functions",
        str(native),
        "--derivatives",
        str(deriv),
        "--tags",
        str(tags),
        "--out",
        str(out),
    ]
    rows: list[tuple[str, float, str]] = []

    def median(fn: object) -> float:
        return statistics.median(fn() for _ in range(args.repeats))  # type: ignore[operator]

    def cold() -> float:
        shutil.rmtree(out, ignore_errors=True)
        return _wall(gen)

    tg_out = work / "tg_out"
    tg_out.mkdir()
    stages = [sys.executable, "-c", TORCHGEN_STAGES, str(native), str(tags), str(tg_out), str(autograd)]
    # the two cold cases alternate, so both see the same machine (the ratio is the goal)
    pairs = [(cold(), _wall(stages)) for _ in range(args.repeats)]
    rows.append(("vtgen cold full generation", statistics.median(v for v, _ in pairs), f"{len(_snapshot(out))} files"))
    rows.append(("vtgen no-op rerun", median(lambda: _wall(gen)), "0 files"))
    rows.append(("python -c pass (interpreter start)", median(lambda: _wall([python, "-c", "pass"])), ""))
    files: dict[str, list[str]] = {}

    for key, label, (old, new) in (
        ("sin", "one-formula edit (sin backward)", SIN),
        ("dist", "saved-value change (dist)", DIST),
    ):
        times, rewritten = [], []
        for i in range(args.repeats):
            deriv.write_text(original.replace(old, new, 1) if i % 2 == 0 else original)
            before = _snapshot(out)
            times.append(_wall(gen))
            rewritten.append(_rewritten(before, out))
        edited = files[key] = rewritten[0]
        # a rewritten header is "shared" when translation units beyond its own shard's two include it
        shared = [h for h in edited if h.endswith(".h") and len(_includers(out, h)) > 2]
        rows.append(
            (
                f"vtgen {label}",
                statistics.median(times),
                f"{len(edited)} files {edited}; shared headers: {shared or 'none'}",
            )
        )
        deriv.write_text(original)
        _wall(gen)

    rows.append(("torchgen load + VariableType + Functions", statistics.median(t for _, t in pairs), "alternating"))
    if not args.skip_torchgen_full:
        full = [
            sys.executable,
            "-m",
            "torchgen.packaged.autograd.gen_autograd",
            str(native),
            str(tags),
            str(tg_out),
            str(autograd),
        ]
        rows.append(("torchgen gen_autograd full (no change)", median(lambda: _wall(full)), ""))
        (autograd / "derivatives.yaml").write_text(original.replace(*SIN, 1))
        before = _snapshot(tg_out)
        t = _wall(full)
        edited = _rewritten(before, tg_out)
        rows.append(("torchgen gen_autograd after sin edit", t, f"{len(edited)} files {edited}"))
        (autograd / "derivatives.yaml").write_text(original)

    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'median s':>9}  notes")
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:9.3f}  {note}")
    print(f"\nvtgen_build from: {'a fresh venv (regular install)' if args.interpreter == 'venv' else sys.executable}")
    print("\n".join(_goals(rows, files)))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
