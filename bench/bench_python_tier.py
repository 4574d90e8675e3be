"""Edit -> Python-tier verdict, one-shot: ``check --gradcheck --tier python`` after a wrong edit and its revert.

    python bench/bench_python_tier.py [--rounds N] [--ops sin,celu,elu_backward] [--worker]

A checkout-shaped copy of the installed torch's yaml (native_functions.yaml, tags.yaml, derivatives.yaml)
is laid out in a temporary directory; for each op a wrong formula is written, then the command runs in a
new process (nothing warm: its own torch import), then the formula is reverted and the command runs again.
Each row prints the seconds from the edit to the verdict, whether the verdict was right (exit 1 and an
error at the edited line; exit 0 after the revert), and a bare ``python -c 'import torch'`` of the same
round, so a loaded machine's figures can be judged.  Nothing is compiled.  ``--worker``: a warm worker
(``vtgen-build worker start``) is up for the check directory, so the child is forked with torch imported.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EDITS = {
    "sin": ("  self: grad * self.cos().conj()", "  self: grad * -self.cos().conj()"),
    "celu": (
        "  self: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), /* is_result */ false, self)",
        "  self: elu_backward(grad, alpha, 1, 2.0/alpha.toFloat(), /* is_result */ false, self)",
    ),
    "elu_backward": (
        "  grad_output: elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
        "  grad_output: -elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
    ),
}


def _layout(root: Path) -> Path:
    spec = importlib.util.find_spec("torchgen")
    assert spec is not None and spec.submodule_search_locations
    packaged = Path(next(iter(spec.submodule_search_locations))) / "packaged"
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(packaged / "ATen/native/native_functions.yaml", native)
    shutil.copy(packaged / "ATen/native/tags.yaml", native)
    derivatives = root / "tools/autograd/derivatives.yaml"
    derivatives.parent.mkdir(parents=True)
    shutil.copy(packaged / "autograd/derivatives.yaml", derivatives)
    return derivatives


def _edit(path: Path, old: str, new: str) -> int:
    lines = path.read_text(encoding="utf-8").split("\n")
    at = lines.index(old)
    lines[at] = new
    path.write_text("\n".join(lines), encoding="utf-8")
    return at + 1


def _verdict(root: Path, out: Path, op: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    argv = [sys.executable, "-m", "vtgen_build", "check", "--pytorch-root", str(root), "--out", str(out),
            "--gradcheck", "--tier", "python", "--op", op]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": "."})
    return time.perf_counter() - began, done


def _import_torch() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--ops", default=",".join(EDITS))
    parser.add_argument("--worker", action="store_true", help="a warm worker up for the check directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pytorch"
        derivatives = _layout(root)
        out = Path(tmp) / "out"
        if args.worker:
            subprocess.run([sys.executable, "-m", "vtgen_build", "worker", "start", "--out", str(out)], check=True)
        print(f"load average {os.getloadavg()[0]:.1f}")
        print("| op | edit | seconds | right verdict | import torch (same round) |")
        print("|---|---|---|---|---|")
        for _ in range(args.rounds):
            for op in args.ops.split(","):
                old, new = EDITS[op]
                line = _edit(derivatives, old, new)
                seconds, done = _verdict(root, out, op)
                right = done.returncode == 1 and f"{derivatives}:{line}: error: [python tier]" in done.stderr
                print(f"| {op} | wrong | {seconds:.2f} | {right} | {_import_torch():.2f} |", flush=True)
                _edit(derivatives, new, old)
                seconds, done = _verdict(root, out, op)
                print(f"| {op} | revert | {seconds:.2f} | {done.returncode == 0} | {_import_torch():.2f} |", flush=True)
                if done.returncode != 0:
                    print(done.stdout[-1500:], done.stderr[-1500:], file=sys.stderr)
        print(f"load average {os.getloadavg()[0]:.1f}")
        if args.worker:
            subprocess.run([sys.executable, "-m", "vtgen_build", "worker", "stop", "--out", str(out)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
