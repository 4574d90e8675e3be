"""Wall time of ``vtgen-build check --gradcheck --op sin``: cold, warm, after a formula edit.

All in the same run, against the time one VariableType shard takes to compile
against the wheel's real headers (``-fsyntax-only``, the way ``check
--torch-include`` compiles it), the unit a one-op edit would otherwise cost:

* cold: a fresh directory and cache (generate, build sin's kernels and Nodes into a
  library, load it in a child Python, run the sin OpInfo checks);
* warm: the same command again, nothing changed (nothing compiles);
* edit: sin's backward formula rewritten (still right) in a copy of derivatives.yaml,
  then ``--changed``: one small unit recompiles and sin is checked again;
* celu, elu_backward: the same for ops no OpInfo is named after, whose checks come from the
  samples that reach them (``nn.functional.celu``; the backward pass of ``nn.functional.elu``),
  as a ratio to the sin edit (goal: at most 1.5x).

    python bench/bench_gradcheck.py [--pytorch-root DIR] [--json] [--no-shard]

``--verdicts`` measures instead the loop of issue 45 for both tiers (``bench/tier_verdicts.py``): for
sin, celu and elu_backward a wrong edit then its revert, each step's verdict from the Python tier (warm,
through ``--watch``, one-shot) and from the compiled tier (warm and one-shot, after one cold run), with a
bare ``python -c 'import torch'`` of the same step; a table of both tiers side by side and the load average.
``--python-only``: the Python tier's columns alone (nothing compiled).

    python bench/bench_gradcheck.py --verdicts [--python-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from common import default_root, timed  # bench/common.py (the script's own directory)
from tier_verdicts import Edit, measure, render

# ops whose checks come from other entries' samples: a formula rewritten, still right
_REACHED = (
    (
        "celu",
        "  self: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), /* is_result */ false, self)",
        "  self: elu_backward(grad, alpha, 1, 1.0 / alpha.toFloat(), /* is_result */ false, self)",
    ),
    (
        "elu_backward",
        "  grad_output: elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
        "  grad_output: elu_backward(grad, alpha, scale, input_scale, is_result,  self_or_result)",
    ),
)


def _copy_inputs(root: Path, tmp: Path) -> Path:
    """A PyTorch-checkout-shaped copy of the yaml whose derivatives.yaml the edit step changes."""
    packaged = root / "packaged"
    (tmp / "aten/src/ATen/native").mkdir(parents=True)
    (tmp / "tools/autograd").mkdir(parents=True)
    (tmp / "torch/csrc/autograd").mkdir(parents=True)
    for name in ("native_functions.yaml", "tags.yaml"):
        shutil.copy(packaged / "ATen/native" / name, tmp / "aten/src/ATen/native" / name)
    shutil.copy(packaged / "autograd/derivatives.yaml", tmp / "tools/autograd/derivatives.yaml")
    manual = root.parent / "torch/include/torch/csrc/autograd/FunctionsManual.h"
    (tmp / "torch/csrc/autograd/FunctionsManual.h").symlink_to(manual)
    return tmp / "tools/autograd/derivatives.yaml"


# the right line, a wrong one for the one-shot runs, another for the warm runs
_WRONG = (
    Edit("sin", "  self: grad * self.cos().conj()", "  self: grad * self.sin().conj()",
         "  self: grad * -self.cos().conj()"),
    Edit("celu", "  self: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), /* is_result */ false, self)",
         "  self: elu_backward(grad, alpha, 1, 2.0/alpha.toFloat(), /* is_result */ false, self)",
         "  self: elu_backward(grad, alpha, 1, 3.0/alpha.toFloat(), /* is_result */ false, self)"),
    Edit("elu_backward",
         "  grad_output: elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
         "  grad_output: 2 * elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
         "  grad_output: 3 * elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)"),
)  # fmt: skip


def _shard_seconds(out: Path, root: Path) -> float:
    """One real-header -fsyntax-only compile of VariableType_0.cpp with the include flags check uses."""
    from vtgen_build.compile import Headers, find_compiler, include_flags

    include = root.parent / "torch/include"
    flags = include_flags(out, Headers(torch_include=str(include)))
    cmd = [find_compiler(), "-std=c++17", "-fsyntax-only", "-w", *flags, str(out / "VariableType_0.cpp")]
    seconds, done = timed(cmd)
    if done.returncode != 0:
        raise SystemExit(f"the reference compile failed:\n{done.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytorch-root", default=None, help="an installed torchgen package (default: this one)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-shard", dest="shard", action="store_false", help="skip the reference shard compile")
    parser.add_argument("--verdicts", action="store_true", help="edit → verdict, both tiers (see above)")
    parser.add_argument("--python-only", action="store_true", help="with --verdicts: the Python tier alone")
    args = parser.parse_args(argv)
    root = Path(args.pytorch_root or default_root())
    with tempfile.TemporaryDirectory(prefix="vtgen-bench-gradcheck-") as tmp_dir:
        tmp = Path(tmp_dir)
        derivatives = _copy_inputs(root, tmp / "src")
        out = tmp / "out"
        base = [sys.executable, "-m", "vtgen_build", "check", "--pytorch-root", str(tmp / "src"), "--out", str(out)]
        if args.verdicts:
            load = os.getloadavg()[0]
            table = measure(base, derivatives, out, _WRONG, compiled=not args.python_only)
            if args.json:
                rows = {f"{op} {step}": row for (op, step), row in table.rows.items()}
                print(json.dumps({"seconds": rows, "notes": table.notes}, indent=2, sort_keys=True))
            else:
                print(render(table, _WRONG, (load, os.getloadavg()[0])))
            return 0
        results: dict[str, float] = {}
        for step, extra in (("cold", ["--op", "sin"]), ("warm", ["--op", "sin"])):
            results[step], done = timed([*base, "--gradcheck", *extra])
            if done.returncode != 0:
                raise SystemExit(f"{step}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        text = derivatives.read_text(encoding="utf-8")
        derivatives.write_text(text.replace("  self: grad * self.cos().conj()", "  self: self.cos().conj() * grad", 1))
        results["edit"], done = timed([*base, "--gradcheck", "--changed"])
        if done.returncode != 0:
            raise SystemExit(f"edit: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        compiled = re.search(r"\((\d+) units, (\d+) compiled now", done.stdout)
        units = f"{compiled.group(2)} of {compiled.group(1)} units compiled" if compiled else "?"
        for step, old, new in _REACHED:
            derivatives.write_text(derivatives.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
            results[step], done = timed([*base, "--gradcheck", "--changed"])
            if done.returncode != 0 or "\nOK: " not in done.stdout:
                raise SystemExit(f"{step}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        results["shard"] = _shard_seconds(out, root) if args.shard else float("nan")
        results_note = {"edit_units": units}
    ratios = {step: results[step] / results["shard"] for step in ("cold", "warm", "edit")}
    ratios.update({f"{step}_to_sin_edit": results[step] / results["edit"] for step, _, _ in _REACHED})
    if args.json:
        print(json.dumps({"seconds": results, "ratio_to_shard": ratios, **results_note}, indent=2, sort_keys=True))
        return 0
    if args.shard:
        print(f"one VariableType shard, real headers (-fsyntax-only): {results['shard']:.1f}s")
    for step in ("cold", "warm", "edit"):
        shard = f"  ({ratios[step]:.2f}x the shard)" if args.shard else ""
        print(f"check --gradcheck {step:>4}: {results[step]:6.1f}s{shard}")
    print(f"(after the edit, --changed: {results_note['edit_units']})")
    for step, _, _ in _REACHED:
        ratio = ratios[f"{step}_to_sin_edit"]
        print(f"check --gradcheck --changed after an edit of {step}: {results[step]:6.1f}s  ({ratio:.2f}x sin's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
