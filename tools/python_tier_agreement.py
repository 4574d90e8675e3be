"""How many of the entries the compiled tier covers the Python tier verifies (issue 45's agreement figure).

    python tools/python_tier_agreement.py PYTHON_TIER_COVERAGE.json [--yaml-dir DIR] [--release X.Y]

The compiled-covered set: the entries the compiled coverage counts (``gradcheck.coverage.figure``: an entry
with a differentiable backward formula and a CPU kernel a dense sample can reach), less the 24 its last whole
run left uncovered (``UNCOVERED`` below, from docs/gradcheck-coverage.md, "The whole yaml in one run and in four
balanced parts": 481 of 505).  Which entries have no CPU kernel is decided as that run decided it, in the
installed torch: ``gradcheck_child.child.uncheckable`` of each op, and the sample hints' ``skip`` naming such a
reason.  Against a Python-tier JSON (``check --gradcheck --coverage J --tier python``) it prints
"Python tier verifies N of M compiled-covered entries (P%)" and the entries it leaves, by reason.  The yaml is
planned for the release the JSON names (its run's), or ``--release``; a JSON of an earlier version names none:
then the installed torch's release (said on stderr).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.hints import BUILTIN, load_hints
from vtgen_build.gradcheck.python_tier import autograd_kernels, entry_ops, plan_tier
from vtgen_build.gradcheck.schema_samples import plan_samples
from vtgen_build.gradcheck.verdict import REASONS
from vtgen_build.inputs.files import Inputs
from vtgen_build.model.schema import op_selection
from vtgen_build.plan.target import supported_release

# docs/gradcheck-coverage.md, the whole run of 481 of 505: its 24 entries "no sample yet", by an op of each.
# The docs' "fake-quantize x4" are the four float32-only ones; the fifth, fake_quantize_per_tensor_affine_cachemask,
# takes float64 samples (the Python tier passes it in float64) and is not among them.
UNCOVERED = (
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
    "_fake_quantize_learnable_per_tensor_affine", "fake_quantize_per_channel_affine_cachemask",
    "_fake_quantize_learnable_per_channel_affine", "_grid_sampler_2d_cpu_fallback",
    "_grid_sampler_2d_cpu_fallback_backward", "_grouped_mm", "_nnpack_spatial_convolution",
    "_fused_moving_avg_obs_fq_helper", "special_zeta", "native_layer_norm_backward", "normal.Tensor_float",
    "normal.float_Tensor", "normal.Tensor_Tensor", "slice_inverse", "as_strided_scatter", "lift",
    "_weight_norm_interface", "_standard_gamma", "rrelu_with_noise_functional", "mkldnn_rnn_layer",
    "mkldnn_convolution", "_scaled_dot_product_fused_attention_overrideable",
    "_test_autograd_multiple_dispatch.fullcoverage",
)  # fmt: skip
# Counted out at run time, not from the schema: their schema samples' results are sparse or nested
# (``schema_child``: "needs sparse / quantized / nested inputs: a sparse or nested result").
SPARSE_RESULT = (
    "_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc", "_nested_tensor_from_tensor_list",
)  # fmt: skip
COMPILED_COVERED, COMPILED_ELIGIBLE, DOCS_UNCOVERED = 481, 505, 24
_NO_CPU = REASONS[:2]


@dataclass(frozen=True)
class PythonEntry:
    line: int
    tier: str
    reason: str  # why the Python tier did not verify it ("" when it did)


def _default_yaml_dir() -> Path:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        raise SystemExit("no torchgen installed: give --yaml-dir")
    return Path(spec.origin).parent / "packaged"


def _release(given: str | None, data: Mapping[str, object]) -> str:
    """``--release``, else the JSON's, else the installed torch's (by its metadata: nothing imported)."""
    if given:
        return supported_release(given, "--release")
    named = data.get("release")
    if isinstance(named, str) and named:
        return supported_release(named, "the coverage JSON's release")
    import importlib.metadata

    version = importlib.metadata.version("torch")
    print(f"note: the JSON names no release: planning for the installed torch's ({version})", file=sys.stderr)
    return supported_release(version, "the installed torch")


def _no_cpu_ops(inputs: Inputs, release: str, ops: list[str]) -> set[str]:
    """The ops the compiled run counts out: no CPU kernel a dense sample reaches, or a hint skip saying so."""
    from vtgen_build.gradcheck_child.child import uncheckable

    chosen = autograd_kernels(inputs, None, release, op_selection(entry_ops(inputs), "aten"))
    found = {k.op for k in chosen if uncheckable(f"aten::{k.op}")} | set(SPARSE_RESULT)
    for s in plan_samples(chosen, load_hints([str(BUILTIN)])):
        if s.why_not and s.why_not.startswith(_NO_CPU):
            found |= {op for op in (s.op, s.inplace) if op}
    return found


def eligible_entries(places: Mapping[str, FormulaPlaces], no_cpu: set[str]) -> dict[int, tuple[str, ...]]:
    """derivatives.yaml line -> its ops, for the entries the compiled coverage counts (``coverage.figure``)."""
    by_entry: dict[int, list[str]] = {}
    for op, place in sorted(places.items()):
        if place.entry is not None and not place.out:
            by_entry.setdefault(place.entry.line, []).append(op)
    found: dict[int, tuple[str, ...]] = {}
    for line, ops in by_entry.items():
        place = places[ops[0]]
        backward = any(n in place.differentiable for names, _ in place.backward for n in names)
        if backward and not all(op in no_cpu for op in ops):
            found[line] = tuple(ops)
    return found


def _reason(row: Mapping[str, object]) -> str:
    kernels = row["kernels"]
    assert isinstance(kernels, list)
    first = kernels[0]
    reason = str(first.get("reason") or first["tier"])
    if reason == "its formulas cannot be translated":
        message = str(first["message"])
        kind = "missing helper" if "known helper" in message else "_foreach_" if "_foreach_" in message else "other"
        reason += f" ({kind})"
    return reason


def python_entries(rows: Iterable[Mapping[str, object]]) -> dict[int, PythonEntry]:
    found: dict[int, PythonEntry] = {}
    for row in rows:
        if row["entry"]:
            line = int(str(row["entry"]).rsplit(":", 1)[1])
            tier = str(row["tier"])
            found[line] = PythonEntry(line, tier, "" if tier == "python" else _reason(row))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("coverage", help="a Python-tier coverage JSON (--coverage J --tier python)")
    parser.add_argument("--yaml-dir", type=Path, default=None, help="torchgen/packaged (default: the installed)")
    parser.add_argument("--release", default=None, help="the release to plan the yaml for (default: the JSON's)")
    args = parser.parse_args(argv)
    root = args.yaml_dir or _default_yaml_dir()
    inputs = Inputs(str(root / "ATen/native/native_functions.yaml"), str(root / "autograd/derivatives.yaml"),
                    str(root / "ATen/native/tags.yaml"))  # fmt: skip
    data = json.loads(Path(args.coverage).read_text(encoding="utf-8"))
    ops = sorted({str(k["op"]) for row in data["entries"] for k in row["kernels"]})
    release = _release(args.release, data)
    places = plan_tier(inputs, None, release, op_selection(entry_ops(inputs), "aten"), [], False).places
    eligible = eligible_entries(places, _no_cpu_ops(inputs, release, ops))
    uncovered = {line for line, mine in eligible.items() if set(mine) & set(UNCOVERED)}
    print(f"compiled rule: {len(eligible)} eligible entries (the docs: {COMPILED_ELIGIBLE}); "
          f"{len(uncovered)} of them named uncovered (the docs: {DOCS_UNCOVERED})")  # fmt: skip
    covered = {line: mine for line, mine in eligible.items() if line not in uncovered}
    python = python_entries(data["entries"])
    verified = [line for line in covered if line in python and python[line].tier == "python"]
    share = 100.0 * len(verified) / len(covered) if covered else 0.0
    print(f"Python tier verifies {len(verified)} of {len(covered)} compiled-covered entries ({share:.1f}%)")
    missed = sorted(set(covered) - set(verified))
    by_reason: dict[str, list[int]] = {}
    for line in missed:
        by_reason.setdefault(python[line].reason if line in python else "not in the Python-tier JSON", []).append(line)
    for reason, n in Counter({r: len(v) for r, v in by_reason.items()}).most_common():
        print(f"{n:4d} {reason}")
        for line in by_reason[reason]:
            print(f"       derivatives.yaml:{line} {' '.join(covered[line])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
