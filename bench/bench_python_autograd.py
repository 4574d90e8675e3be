"""The Python autograd (``generate --python-autograd``): the formula-edit loop, and backward cost.

``edit``: a copy of tests/packages/py_autograd; per round, one formula of derivatives.yaml is
edited, the module regenerated (``vtgen-build generate --python-autograd``: no C++ unit exists to
compile), and a fresh torch process imports the package and gradchecks the edited op.  Prints
the wall time from the edit to the op verified (the goal: <= 3 s idle).

``backward --classic-library SO``: the classic sample's shared library (its C++ forward kernels
and C++ Nodes, e.g. ``build/_vtsample_ops.so`` of sample_project); the backward of
``scale_add`` per call, through its C++ Node, then through the generated Python autograd
registered over the same library (same forward kernel), at 8 and 262,144 elements.

Usage: python bench/bench_python_autograd.py edit [--rounds N]
       python bench/bench_python_autograd.py backward --classic-library SO [--calls N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tests" / "packages" / "py_autograd"
FORMULA = "self: handle_r_to_c(self.scalar_type(), grad)"
EDITS = ("self: handle_r_to_c(self.scalar_type(), grad * 1.0)", "self: handle_r_to_c(self.scalar_type(), grad)")

VERIFY = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import pyag
x, y = (torch.randn(4, 3, dtype=torch.float64, requires_grad=True) for _ in range(2))
assert torch.autograd.gradcheck(lambda a, b: torch.ops.pyag.scale_add(a, b, alpha=2.0), (x, y))
"""


def _generate(pkg: Path) -> None:
    cmd = [sys.executable, "-m", "vtgen_build", "generate", "--native-functions", str(pkg / "native_functions.yaml")]
    cmd += ["--derivatives", str(pkg / "derivatives.yaml"), "--namespace", "pyag", "--out", str(pkg / "out")]
    cmd += ["--python-autograd", str(pkg / "pyag/_autograd.py"), "--python-formulas", str(pkg / "pyag/formulas.py")]
    subprocess.run(cmd, check=True, capture_output=True)


def edit(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "py_autograd"
        shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__"))
        _generate(pkg)
        yaml = pkg / "derivatives.yaml"
        times = []
        for i in range(rounds):
            text = yaml.read_text()
            start = time.perf_counter()
            yaml.write_text(text.replace(FORMULA if i % 2 == 0 else EDITS[0], EDITS[i % 2], 1))
            _generate(pkg)
            generated = time.perf_counter()
            subprocess.run([sys.executable, "-c", VERIFY, str(pkg)], check=True, capture_output=True)
            done = time.perf_counter()
            times.append((generated - start, done - start))
        for gen, total in times:
            print(f"edit -> regenerated {gen:.2f} s -> scale_add verified (gradcheck, new process) {total:.2f} s")
        print(f"median edit -> verified: {sorted(t for _, t in times)[len(times) // 2]:.2f} s; C++ units compiled: 0")


TIMING = """
import json, sys, time, torch
torch.ops.load_library(sys.argv[1])
if sys.argv[2] == "python":
    sys.path.insert(0, sys.argv[3])
    import warnings
    warnings.simplefilter("ignore")  # the override of the C++ Autograd kernel is the point here
    import vtsample_autograd
calls = int(sys.argv[4])
found = {}
for n in (8, 262144):
    x = torch.randn(n, requires_grad=True)
    y = torch.randn(n, requires_grad=True)
    g = torch.ones(n)
    for _ in range(20):
        torch.autograd.grad(torch.ops.vtsample.scale_add(x, y, alpha=2.0), (x, y), g)
    best = []
    for _ in range(5):
        outs = [torch.ops.vtsample.scale_add(x, y, alpha=2.0) for _ in range(calls)]
        start = time.perf_counter()
        for o in outs:
            torch.autograd.grad(o, (x, y), g)
        best.append((time.perf_counter() - start) / calls)
    found[n] = min(best)
    node = torch.ops.vtsample.scale_add(x, y, alpha=2.0).grad_fn
found["node"] = type(node).__name__ + " " + node.name()
print(json.dumps(found))
"""


def backward(library: str, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        mod = Path(tmp) / "vtsample_autograd"
        mod.mkdir()
        derivatives = Path(tmp) / "derivatives.yaml"  # the sample's scale_add entry only: its helpers are built in
        text = (REPO / "sample_project" / "derivatives.yaml").read_text()
        derivatives.write_text(text[text.index("- name: scale_add(") :].split("\n\n")[0] + "\n")
        cmd = [sys.executable, "-m", "vtgen_build", "generate", "--native-functions"]
        cmd += [str(REPO / "sample_project" / "native_functions.yaml"), "--derivatives", str(derivatives)]
        cmd += [
            "--namespace",
            "vtsample",
            "--out",
            str(Path(tmp) / "out"),
            "--python-autograd",
            str(mod / "__init__.py"),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        results = {}
        for mode in ("classic", "python"):
            done = subprocess.run(
                [sys.executable, "-c", TIMING, library, mode, tmp, str(calls)],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            results[mode] = json.loads(done.stdout.splitlines()[-1])
        for n in ("8", "262144"):
            c, p = results["classic"][n], results["python"][n]
            print(f"{n:>7} elements: classic C++ Node {c * 1e6:8.1f} us, Python {p * 1e6:8.1f} us, ratio {p / c:.2f}x")
        print(f"nodes: classic {results['classic']['node']}; python {results['python']['node']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    e = sub.add_parser("edit")
    e.add_argument("--rounds", type=int, default=5)
    b = sub.add_parser("backward")
    b.add_argument("--classic-library", required=True, metavar="SO")
    b.add_argument("--calls", type=int, default=200)
    opts = parser.parse_args()
    if opts.what == "edit":
        edit(opts.rounds)
    else:
        backward(opts.classic_library, opts.calls)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
