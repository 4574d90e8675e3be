"""The Python autograd (``generate --python-autograd``): the formula-edit loop, and backward cost.

``edit``: the stable sample (sample_stable/) installed editable (``pip install --no-build-isolation
-e``, scikit-build-core's ``editable.rebuild``) into a new venv seeing this checkout; per round,
softsign's formula in derivatives.yaml is edited (between two correct spellings) and a new process
runs ``import torch, vtstable`` (the import reruns the build: the generator rewrites _autograd.py,
no C++ unit compiles, nothing relinks; asserted from the object files' and library's times) and
gradchecks softsign.  Printed: the wall time from the edit to the op verified (the goal: <= 3 s
idle), its phases in the verifying process, and two references measured in the same rounds, so the
idle figure can be estimated on a loaded machine: a bare ``python -c "import torch"``, and the floor
no op library can beat (the same process verifying a built-in op: torch imported, torch.sin
gradchecked, which pays torch's own lazy imports of a first gradcheck).  The children run as a
user's would: bytecode written (``PYTHON*`` variables dropped).

``edit-cli``: the CLI route on a copy of tests/packages/py_autograd (``vtgen-build generate
--python-autograd``, then a new process gradchecking ``scale_add``).

``backward --classic-library SO``: the classic sample's shared library (its C++ forward kernels
and C++ Nodes, e.g. ``build/_vtsample_ops.so`` of sample_project); ``scale_add``'s backward per call
and its forward+backward, through its C++ Node, through the generated Python autograd (the
generated module's kernel registered over the same library: same forward kernel), and through a
hand-written ``autograd.Function`` with the same backward (the floor of any Python autograd), at 8
and 262,144 elements.  The three run in one process, in turn, nine rounds (the op's Autograd kernel
swapped by ``torch.library`` registrations), so load drift hits them alike, each round starting at the
next form, so none always runs right after the C++ Node; ``--repeats`` processes (default 3), medians
printed.  Fair per call on both sides, and why:
- one intra-op thread in all three (``--threads``, default 1): the figure is the CPU time of the
  calling thread, and at 262,144 elements ATen runs element-wise ops on its OpenMP pool, whose
  share of the work that clock does not count (nor the pool's waits, which on a shared machine
  swamp the figures); with one thread all of a call's work is the calling thread's;
- freed memory kept (``GLIBC_TUNABLES``; ``--allocator-defaults`` turns it off): by default glibc
  gives a freed 1 MiB tensor's pages back, so every 262,144-element call faults its tensors' pages in
  again, a number of minor faults that differs by the order of frees (measured 29-91 per call
  between the modes in one run, up to 480 in a fresh process) and whose kernel time made the
  per-process ratio range 0.75-1.58x; minor faults per call are printed;
- the wall time is printed too, and each Python form's difference from the C++ Node in us per call
  at both sizes: the 8-element one is the fixed cost of a Python Function per call, and what the
  262,144-element one adds is not more work (the three run the same ATen calls, allocate the same,
  fault no page in) but where glibc's allocator places the 1 MiB blocks, which differs by process and
  path;
- ``--preload LIB`` runs the children with LIB preloaded (``LD_PRELOAD``), e.g. jemalloc
  (``/usr/lib/x86_64-linux-gnu/libjemalloc.so.2``), the allocator PyTorch's CPU performance guide
  recommends: the same comparison without glibc's placement of the blocks.

``call --site DIR``: forward+backward of the stable sample's ``softsign`` per call (DIR holds an
installed ``vtstable`` with its generated ``_autograd.py``), through the generated Function, through
a hand-written Function of the same form (``setup_context``, registered as the op's Autograd kernel
the same way) and through ``torch.library.register_autograd``, at 8 and 262,144 elements; the CPU
time of the calling thread, the best of 7 batches in 3 rotations, the load average printed.

Usage: python bench/bench_python_autograd.py edit [--rounds N]
       python bench/bench_python_autograd.py edit-cli [--rounds N]
       python bench/bench_python_autograd.py backward --classic-library SO [--calls N] [--threads N]
           [--repeats N] [--allocator-defaults] [--preload LIB]
       python bench/bench_python_autograd.py call --site DIR [--calls N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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
    subprocess.run(cmd, check=True, capture_output=True, env=_env())


def edit_cli(rounds: int) -> None:
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


def _env() -> dict[str, str]:
    """A user's environment: no PYTHON* variables (PYTHONDONTWRITEBYTECODE would recompile every
    module of vtgen_build in each generator run), no CMake generator override."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "SKBUILD_"))}
    env.pop("CMAKE_GENERATOR", None)
    return env


def _run(cmd: list[str | Path], cwd: Path) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


SOFTSIGN = ("  self: softsign_backward(grad, self)\n", "  self: grad / (1 + self.abs()).pow(2)\n")
INSTALLED = (  # each spelling's place comment in the installed module
    "# derivatives.yaml:11: softsign_backward(grad, self)\n",
    "# derivatives.yaml:11: grad / (1 + self.abs()).pow(2)\n",
)
# The edited op verified: phases on stderr (torch import; vtstable import, which rebuilds; gradcheck).
VERIFY_STABLE = """
import time
start = time.perf_counter()
import torch
torch_done = time.perf_counter()
import vtstable
x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
imported = time.perf_counter()
assert torch.autograd.gradcheck(torch.ops.vtstable.softsign, (x,))
print(torch_done - start, imported - torch_done, time.perf_counter() - imported)
"""
FLOOR = """
import torch
x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
assert torch.autograd.gradcheck(torch.sin, (x,))
"""


def _editable_stable(tmp: Path) -> tuple[Path, Path, Path]:
    """sample_stable installed editable into a new venv importing this checkout's vtgen_build:
    (its python, the copy's derivatives.yaml, its build directory)."""
    source = Path(shutil.copytree(REPO / "sample_stable", tmp / "sample", ignore=shutil.ignore_patterns("build")))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv], tmp)
    python = venv / "bin" / "python"
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).strip()
    (Path(site) / "_vtgen_checkout.pth").write_text(f"{REPO}\n")
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps"]
    _run([*pip, "--no-build-isolation", "-C", f"cmake.define.vtgen_build_DIR={REPO / 'cmake'}", "-e", source], tmp)
    (build,) = (source / "build").iterdir()
    return python, source / "derivatives.yaml", build


def _compiled(build: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (*build.rglob("*.o"), *build.glob("*.so"))}


def _timed(cmd: list[str | Path], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    out = _run(cmd, cwd)
    return time.perf_counter() - start, out


def edit(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        python, yaml, build = _editable_stable(tmp)
        _timed([python, "-c", VERIFY_STABLE], tmp)  # bytecode written, caches warm
        compiled = _compiled(build)
        rows = []
        for i in range(rounds):
            bare, _ = _timed([python, "-c", "import torch"], tmp)
            floor, _ = _timed([python, "-c", FLOOR], tmp)
            old, new = SOFTSIGN[i % 2], SOFTSIGN[(i + 1) % 2]
            load = os.getloadavg()[0]
            yaml.write_text(yaml.read_text().replace(old, new))
            total, out = _timed([python, "-c", VERIFY_STABLE], tmp)
            module = (build / "install" / "platlib" / "vtstable" / "_autograd.py").read_text()
            assert INSTALLED[(i + 1) % 2] in module and INSTALLED[i % 2] not in module, "not regenerated"
            assert _compiled(build) == compiled, "a C++ unit was compiled or the library relinked"
            phases = [float(x) for x in out.split()[-3:]]
            rows.append((total, bare, floor, load, phases))
            print(
                f"load {load:5.2f}: edit -> softsign verified {total:.2f} s (torch import {phases[0]:.2f}, "
                f"import vtstable incl. regeneration {phases[1]:.2f}, gradcheck {phases[2]:.2f}); "
                f"references: import torch {bare:.2f} s, built-in op verified {floor:.2f} s"
            )
        median = statistics.median
        print(
            f"median edit -> verified {median(r[0] for r in rows):.2f} s; "
            f"/ import torch: {median(r[0] / r[1] for r in rows):.2f}x; "
            f"/ built-in op verified: {median(r[0] / r[2] for r in rows):.2f}x "
            f"(+{median(r[0] - r[2] for r in rows):.2f} s); C++ units compiled: 0, library relinked: no"
        )


TIMING = """
import json, resource, statistics, sys, time, warnings, torch
torch.ops.load_library(sys.argv[1])
sys.path.insert(0, sys.argv[2])
calls, threads, rounds = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
warnings.simplefilter("ignore")  # the override of the C++ Autograd kernel is the point here
import vtsample_autograd as generated

generated._lib._destroy()  # its kernels are registered per mode below: the C++ Node's is the library's own


class ScaleAdd(torch.autograd.Function):  # the same backward, written by hand: the floor of a Python autograd
    @staticmethod
    def forward(ctx, self, other, alpha):
        ctx.alpha = alpha
        with torch._C._AutoDispatchBelowAutograd():
            return torch.ops.vtsample.scale_add.default(self, other, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad * ctx.alpha, None


KERNELS = {
    "classic": None,
    "python": generated._scale_add_autograd,
    "handwritten": lambda self, other, *, alpha=1: ScaleAdd.apply(self, other, alpha),
}
registered = []


def use(mode):
    while registered:
        registered.pop()._destroy()
    if KERNELS[mode] is not None:
        lib = torch.library.Library("vtsample", "IMPL")
        lib.impl("scale_add", KERNELS[mode], "Autograd")
        registered.append(lib)


def faults():
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


op = torch.ops.vtsample.scale_add
found = {}
for n in (8, 262144):
    x, y, g = torch.randn(n, requires_grad=True), torch.randn(n, requires_grad=True), torch.ones(n)
    for r in range(rounds):  # the modes in turn (load drifts over a run), each round starting one later:
        for mode in [*KERNELS][r % 3 :] + [*KERNELS][: r % 3]:  # none always follows the C++ Node
            use(mode)
            found.setdefault(f"node {mode}", type(op(x, y, alpha=2.0).grad_fn).__name__)
            for _ in range(20):
                torch.autograd.grad(op(x, y, alpha=2.0), (x, y), g)
            outs = [op(x, y, alpha=2.0) for _ in range(calls)]
            start = time.thread_time()
            for o in outs:
                torch.autograd.grad(o, (x, y), g)
            found.setdefault(f"{mode} backward {n}", []).append((time.thread_time() - start) / calls)
            del outs, o
            flt, start, wall = faults(), time.thread_time(), time.perf_counter()
            for _ in range(calls):  # forward+backward: what a training step pays for the op
                torch.autograd.grad(op(x, y, alpha=2.0), (x, y), g)
            found.setdefault(f"{mode} both {n}", []).append((time.thread_time() - start) / calls)
            found.setdefault(f"{mode} wall {n}", []).append((time.perf_counter() - wall) / calls)
            found.setdefault(f"{mode} faults {n}", []).append((faults() - flt) / calls)
print(json.dumps({k: v if isinstance(v, str) else statistics.median(v) for k, v in found.items()}))
"""

MODES = ("classic", "python", "handwritten")
ROTATIONS = 3  # call: the modes in turn (new processes), the best of each
# The children's allocator keeps the memory it frees (glibc's trim and mmap thresholds raised): otherwise
# each 262,144-element call takes its 1 MiB tensors from fresh pages, about 480 minor faults per call on
# every side, and the kernel's page-fault time (noisy under load) swamps the op's cost per call.
ALLOCATOR = "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=1073741824"


def backward(library: str, calls: int, threads: int, repeats: int, keep_pages: bool, preload: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        mod = Path(tmp) / "vtsample_autograd"
        mod.mkdir()
        derivatives = Path(tmp) / "derivatives.yaml"  # the sample's scale_add entry only: its helpers are built in
        text = (REPO / "sample_project" / "derivatives.yaml").read_text()
        derivatives.write_text(text[text.index("- name: scale_add(") :].split("\n\n")[0] + "\n")
        cmd = [sys.executable, "-m", "vtgen_build", "generate", "--native-functions"]
        cmd += [str(REPO / "sample_project" / "native_functions.yaml"), "--derivatives", str(derivatives)]
        cmd += ["--namespace", "vtsample", "--out", str(Path(tmp) / "out")]
        cmd += ["--python-autograd", str(mod / "__init__.py")]
        subprocess.run(cmd, check=True, capture_output=True)
        env = {**os.environ, **({"GLIBC_TUNABLES": ALLOCATOR} if keep_pages else {})}
        if preload:
            env["LD_PRELOAD"] = preload
        load = os.getloadavg()[0]
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", TIMING, library, tmp, str(calls), str(threads), "9"],
                    check=True, capture_output=True, text=True, env=env,
                ).stdout.splitlines()[-1]
            )
            for _ in range(repeats)
        ]  # fmt: skip
        pages = "freed memory kept (GLIBC_TUNABLES)" if keep_pages else "glibc's allocator defaults"
        _report(runs, calls, threads, load, f"preloaded {preload}" if preload else pages)


def _report(runs: list[dict[str, float | str]], calls: int, threads: int, load: float, pages: str) -> None:
    def median(key: str) -> float:
        return statistics.median(float(r[key]) for r in runs)

    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; intra-op threads {threads}; {pages}")
    print(f"medians of {len(runs)} process(es), each the median of 9 rounds of {calls} calls, modes in turn:")
    for what, key in (
        ("CPU time of the calling thread per backward call", "backward"),
        ("CPU time of the calling thread per forward+backward call", "both"),
        ("wall time per forward+backward call", "wall"),
    ):
        print(f"{what}:")
        for n in ("8", "262144"):
            c, p, h = (median(f"{m} {key} {n}") for m in MODES)
            print(
                f"  {n:>7} elements: classic C++ Node {c * 1e6:8.1f} us, generated Python {p * 1e6:8.1f} us "
                f"({p / c:.2f}x), hand-written Function {h * 1e6:8.1f} us ({h / c:.2f}x)"
            )
    print("forward+backward beyond the C++ Node (CPU time of the calling thread):")
    for n in ("8", "262144"):
        c, p, h = (median(f"{m} both {n}") for m in MODES)
        print(
            f"  {n:>7} elements: generated - C++ Node {(p - c) * 1e6:+6.1f} us, hand-written - C++ Node "
            f"{(h - c) * 1e6:+6.1f} us, generated - hand-written {(p - h) * 1e6:+6.1f} us"
        )
    ratios = sorted(float(r["python both 262144"]) / float(r["classic both 262144"]) for r in runs)
    print(f"generated / C++ Node, forward+backward at 262,144, per process: {', '.join(f'{q:.2f}' for q in ratios)}")
    for n in ("8", "262144"):
        print(f"minor page faults per forward+backward call, {n} elements: " + ", ".join(
            f"{m} {median(f'{m} faults {n}'):.1f}" for m in MODES))  # fmt: skip
    print("nodes: " + "; ".join(f"{m} {runs[0][f'node {m}']}" for m in MODES))


CALL = """
import json, sys, time, warnings, torch
sys.path.insert(0, sys.argv[1])
mode, calls = sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
warnings.simplefilter("ignore")
if mode == "generated":
    import vtstable
else:
    import importlib, vtstable
    torch.ops.vtstable.softsign  # the library only: the generated module is imported but overridden below
    if mode == "handwritten":  # the same form by hand: forward without ctx, setup_context
        class Softsign(torch.autograd.Function):
            @staticmethod
            def forward(x):
                with torch._C._AutoDispatchBelowAutograd():
                    return torch.ops.vtstable.softsign.default(x)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return torch.ops.vtstable.softsign_backward(grad, x)

        def kernel(x):
            if torch.is_grad_enabled() and x.requires_grad:
                return Softsign.apply(x)
            with torch._C._AutoDispatchBelowAutograd():
                return torch.ops.vtstable.softsign.default(x)

        lib = torch.library.Library("vtstable", "IMPL")
        lib.impl("softsign", kernel, "Autograd")
    else:  # register_autograd
        def setup(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, grad):
            return torch.ops.vtstable.softsign_backward(grad, ctx.saved_tensors[0])

        torch.library.register_autograd("vtstable::softsign", backward, setup_context=setup)
found = {}
for n in (8, 262144):
    x = torch.randn(n, requires_grad=True)
    g = torch.ones(n)
    for _ in range(50):
        torch.autograd.grad(torch.ops.vtstable.softsign(x), (x,), g)
    best = []
    for _ in range(7):
        start = time.thread_time()
        for _ in range(calls):
            torch.autograd.grad(torch.ops.vtstable.softsign(x), (x,), g)
        best.append((time.thread_time() - start) / calls)
    found[n] = min(best)
print(json.dumps(found))
"""
CALL_MODES = ("generated", "handwritten", "register_autograd")


def call(site: str, calls: int) -> None:
    results: dict[str, dict[str, float]] = {}
    load = os.getloadavg()[0]
    for _ in range(ROTATIONS):
        for mode in CALL_MODES:
            done = subprocess.run(
                [sys.executable, "-c", CALL, site, mode, str(calls)], check=True, capture_output=True, text=True
            )
            found = json.loads(done.stdout.splitlines()[-1])
            best = results.setdefault(mode, found)
            best.update({n: min(best[n], found[n]) for n in found})
    print(f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; intra-op threads 1")
    print(f"CPU time of the calling thread per forward+backward call (best of 7 x {calls}, {ROTATIONS} rotations):")
    for n in ("8", "262144"):
        g, h, r = (results[m][n] for m in CALL_MODES)
        print(
            f"  {n:>7} elements: generated {g * 1e6:7.1f} us, hand-written Function (setup_context) {h * 1e6:7.1f} us "
            f"(generated/hand-written {g / h:.3f}x), register_autograd {r * 1e6:7.1f} us (generated/it {g / r:.3f}x)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("edit", "edit-cli"):
        sub.add_parser(name).add_argument("--rounds", type=int, default=5)
    b = sub.add_parser("backward")
    b.add_argument("--classic-library", required=True, metavar="SO")
    b.add_argument("--calls", type=int, default=200)
    b.add_argument("--threads", type=int, default=1, help="torch's intra-op threads (default 1)")
    b.add_argument("--repeats", type=int, default=3, help="processes (medians printed)")
    b.add_argument("--allocator-defaults", action="store_true", help="no GLIBC_TUNABLES: freed pages go back")
    b.add_argument("--preload", metavar="LIB", help="the children's LD_PRELOAD, e.g. jemalloc's shared library")
    c = sub.add_parser("call")
    c.add_argument("--site", required=True, metavar="DIR")
    c.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    if opts.what == "edit":
        edit(opts.rounds)
    elif opts.what == "edit-cli":
        edit_cli(opts.rounds)
    elif opts.what == "call":
        call(opts.site, opts.calls)
    else:
        keep_pages = not opts.allocator_defaults
        backward(opts.classic_library, opts.calls, opts.threads, opts.repeats, keep_pages, opts.preload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
