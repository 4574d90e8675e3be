"""Time `vtgen-build generate` against torchgen's autograd codegen on the real yaml, in one run.

Every measurement is the wall time of a fresh process (imports included), median of
``--repeats``.  Cases: a cold full generation, a no-op rerun, a one-formula edit of the
``sin`` backward, a saved-value change in one op (``dist``); torchgen: its load +
VariableType + Functions stages (the part vtgen_build replaces) and its whole
``gen_autograd`` rerun after the same edit.  Files rewritten are counted by mtime.
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
        if p.is_file() and not p.name.startswith(".")
    }


def _rewritten(before: dict[str, int], out: Path) -> list[str]:
    return sorted(rel for rel, mtime in _snapshot(out).items() if before.get(rel) != mtime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-torchgen-full", action="store_true", help="skip torchgen's whole gen_autograd runs")
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
    exe = shutil.which("vtgen-build", path=os.path.dirname(sys.executable)) or ""
    base = [exe, "generate"] if exe else [sys.executable, "-m", "vtgen_build", "generate"]
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

    rows.append(("vtgen cold full generation", median(cold), f"{len(_snapshot(out))} files"))
    rows.append(("vtgen no-op rerun", median(lambda: _wall(gen)), "0 files"))
    rows.append(("python -c pass (interpreter start)", median(lambda: _wall([sys.executable, "-c", "pass"])), ""))

    for label, (old, new) in (("one-formula edit (sin backward)", SIN), ("saved-value change (dist)", DIST)):
        times, files = [], []
        for i in range(args.repeats):
            deriv.write_text(original.replace(old, new, 1) if i % 2 == 0 else original)
            before = _snapshot(out)
            times.append(_wall(gen))
            files.append(_rewritten(before, out))
        edited = files[0]
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

    tg_out = work / "tg_out"
    tg_out.mkdir()
    stages = [sys.executable, "-c", TORCHGEN_STAGES, str(native), str(tags), str(tg_out), str(autograd)]
    rows.append(("torchgen load + VariableType + Functions", median(lambda: _wall(stages)), ""))
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
    cold_s = rows[0][1]
    stages_s = next(s for n, s, _ in rows if n.startswith("torchgen load"))
    print(f"\ncold ratio vtgen / torchgen stages: {cold_s / stages_s:.2f}x (goal <= 0.30x)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
