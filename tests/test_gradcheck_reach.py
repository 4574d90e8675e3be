"""``check --gradcheck`` finds the checks of ops no OpInfo is named after, by what the samples reach.

Twenty realistic wrong-but-compiling edits to formulas of ops with no OpInfo entry of their
own name (nn.functional ops, linalg ops, the double-backward ``*_backward`` entries, a loss's
target formula, forward formulas) go into ONE copy of the real yaml (the one the formulas and
norm-samples tests edit too: ``edited_real_yaml``, tests/conftest.py; its one plain ``check``
passes them all: tests/test_gradcheck_formulas.py).  Session fixtures run one ``check
--gradcheck --op ...`` of all of them in one library (each fails at its edited line), ``--op`` of
an op nothing here can check (exit 3, ``not verified`` with the reason), ``--coverage`` of a few,
then, in the same directory, one more edit and ``--changed`` (it catches the new edit).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import WORK, Edit, EditedYaml, SharedEdits, edit_formula, edited_checkout, vtgen
from vtgen_build.base.errors import Location

pytestmark = [pytest.mark.slow, pytest.mark.torch]


EDITS = (
    Edit(
        "celu",
        "nn.functional op: the flag of the in-place entry's formula pasted",
        "  self: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), /* is_result */ false, self)",
        "  self: elu_backward(grad, alpha, 1, 1.0/alpha.toFloat(), /* is_result */ true, self)",
    ),
    Edit(
        "elu_backward",
        "double backward of elu: a flag inverted",
        "  self_or_result: elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result,"
        " self_or_result)",
        "  self_or_result: elu_double_backward(grad, grad_output, alpha, scale, input_scale, !is_result,"
        " self_or_result)",
    ),
    Edit(
        "linalg_matrix_exp",
        "linalg op: the adjoint flag of the forward formula pasted into the backward one",
        "  self: linalg_matrix_exp_differential(self, grad, /*adjoint*/ true)",
        "  self: linalg_matrix_exp_differential(self, grad, /*adjoint*/ false)",
    ),
    Edit(
        "mse_loss",
        "a loss's target formula: the self line pasted (sign lost)",
        "  target: mse_loss_backward(grad, target, self, reduction)",
        "  target: mse_loss_backward(grad, self, target, reduction)",
    ),
    Edit(
        "huber_loss",
        "a loss's target formula: the self line pasted (sign lost)",
        "  target: huber_loss_backward(grad, target, self, reduction, delta)",
        "  target: huber_loss_backward(grad, self, target, reduction, delta)",
    ),
    Edit(
        "smooth_l1_loss",
        "a loss's forward formula: the target term's operands swapped",
        "  result: apply_loss_reduction(smooth_l1_loss_backward(self_t.conj(), self_p, target_p, at::Reduction::None,"
        " beta).conj() + smooth_l1_loss_backward(target_t.conj(), target_p, self_p, at::Reduction::None, beta).conj(),"
        " reduction)",
        "  result: apply_loss_reduction(smooth_l1_loss_backward(self_t.conj(), self_p, target_p, at::Reduction::None,"
        " beta).conj() + smooth_l1_loss_backward(target_t.conj(), self_p, target_p, at::Reduction::None, beta).conj(),"
        " reduction)",
    ),
    Edit(
        "soft_margin_loss",
        "a loss's forward formula: reduced twice",
        "  result: apply_loss_reduction(soft_margin_loss_backward(self_t.conj(), self_p, target,"
        " at::Reduction::None).conj(), reduction)",
        "  result: apply_loss_reduction(soft_margin_loss_backward(self_t.conj(), self_p, target,"
        " reduction).conj(), reduction)",
    ),
    Edit(
        "reflection_pad1d_backward",
        "double backward of a padding: the neighbouring mode's op",
        "  grad_output: reflection_pad1d_symint(grad, padding)",
        "  grad_output: replication_pad1d_symint(grad, padding)",
    ),
    Edit(
        "log_sigmoid_backward",
        "double backward: a factor dropped",
        "  self: log_sigmoid_double_backward(grad * grad_output, self)",
        "  self: log_sigmoid_double_backward(grad, self)",
    ),
    Edit(
        "log_sigmoid_forward",
        "forward formula: primal and tangent swapped",
        "  output: log_sigmoid_backward(self_t.conj(), self_p, buffer).conj()",
        "  output: log_sigmoid_backward(self_p.conj(), self_t, buffer).conj()",
    ),
    Edit(
        "softplus_backward",
        "forward formula of a double-backward entry: a factor dropped",
        '         + softplus_double_backward(self_t * grad_output_p, self_p, beta, threshold)"',
        '         + softplus_double_backward(self_t, self_p, beta, threshold)"',
        starts=1,
    ),
    Edit(
        "hardswish_backward",
        "double backward: hardswish's other constant",
        "  self: at::where(at::logical_and(-3.0 < self, self < 3.0), grad * grad_output / 3.0,"
        " at::zeros({}, self.options()))",
        "  self: at::where(at::logical_and(-3.0 < self, self < 3.0), grad * grad_output / 6.0,"
        " at::zeros({}, self.options()))",
    ),
    Edit(
        "hardtanh_backward",
        "forward formula of a double-backward entry: the wrong tangent",
        "  result: at::where((self_p > min_val).logical_and(self_p < max_val), grad_output_t,"
        " at::zeros({}, result.options()).expand_as(result))",
        "  result: at::where((self_p > min_val).logical_and(self_p < max_val), self_t,"
        " at::zeros({}, result.options()).expand_as(result))",
    ),
    Edit(
        "_log_softmax_backward_data",
        "double backward of log_softmax: exp() dropped",
        "  grad_output: grad.to(output.dtype()) - (grad.to(output.dtype()) * output.exp()).sum(dim, true)",
        "  grad_output: grad.to(output.dtype()) - (grad.to(output.dtype()) * output).sum(dim, true)",
    ),
    Edit(
        "_linalg_solve_ex",
        "linalg op: the left flag inverted",
        "  A, B: linalg_solve_backward(grad, result, A, LU, pivots, left, grad_input_mask[1])",
        "  A, B: linalg_solve_backward(grad, result, A, LU, pivots, !left, grad_input_mask[1])",
    ),
    Edit(
        "_linalg_eigh",
        "linalg op: the two outputs' gradients swapped",
        "  A: linalg_eig_backward(grads[0], grads[1], eigenvalues, eigenvectors, /*is_hermitian=*/true)",
        "  A: linalg_eig_backward(grads[1], grads[0], eigenvalues, eigenvectors, /*is_hermitian=*/true)",
    ),
    Edit(
        "_linalg_det",
        "linalg op's forward formula: primal where the tangent belongs",
        "  result: linalg_det_jvp(A_t, result, LU, pivots, A_p.is_contiguous() && !A_p.is_complex())",
        "  result: linalg_det_jvp(A_p, result, LU, pivots, A_p.is_contiguous() && !A_p.is_complex())",
    ),
    Edit(
        "_linalg_slogdet",
        "linalg op: the two outputs' gradients swapped",
        "  A: slogdet_backward(grad_sign, grad_logabsdet, A, sign, LU, pivots)",
        "  A: slogdet_backward(grad_logabsdet, grad_sign, A, sign, LU, pivots)",
    ),
    Edit(
        "_upsample_lanczos2d_aa",
        "upsampling op only its hinted schema samples reach: the neighbouring entry's backward",
        "  self: _upsample_lanczos2d_aa_backward_symint(grad, output_size, self.sym_sizes(), align_corners, scales_h,"
        " scales_w)",
        "  self: _upsample_bicubic2d_aa_backward_symint(grad, output_size, self.sym_sizes(), align_corners, scales_h,"
        " scales_w)",
    ),
    Edit(
        "_upsample_lanczos2d_aa_backward",
        "double backward of that upsampling (hinted schema samples): the neighbouring mode's op",
        "  grad_output: _upsample_lanczos2d_aa_symint(grad, output_size, align_corners, scales_h, scales_w)",
        "  grad_output: _upsample_bicubic2d_aa_symint(grad, output_size, align_corners, scales_h, scales_w)",
    ),
)

# Edited only after the first gradcheck run (which it passed): ``--changed`` must catch it.
LATER = Edit(
    "reflection_pad2d_backward",
    "double backward of a padding: the neighbouring mode's op",
    "  grad_output: reflection_pad2d_symint(grad, padding)",
    "  grad_output: replication_pad2d_symint(grad, padding)",
)
UNCHECKABLE = "cudnn_batch_norm"  # CUDA only: no gradcheck here can verify it


@pytest.fixture(scope="session")
def reach_yaml(edited_real_yaml: SharedEdits) -> EditedYaml:
    return edited_real_yaml.yaml


@dataclass(frozen=True)
class Runs:
    first: subprocess.CompletedProcess[str]  # --op every edited op, LATER's op and UNCHECKABLE
    changed: subprocess.CompletedProcess[str]  # after `coverage`, LATER edited, then --changed
    changed_line: int
    uncheckable: subprocess.CompletedProcess[str]  # --op UNCHECKABLE alone
    coverage: subprocess.CompletedProcess[str]  # --coverage of an edited op, UNCHECKABLE and LATER's (no new compile)
    coverage_json: Path


@pytest.fixture(scope="session")
def runs(edited_real_yaml: SharedEdits) -> Runs:
    reach_yaml, out = edited_real_yaml.yaml, edited_real_yaml.out
    # one shard: the edited ops' kernels and Nodes compile as one unit against the real headers
    base = ("check", "--pytorch-root", str(reach_yaml.root), "--out", str(out), "--shards", "1", "--gradcheck")
    base = (*base, "--all-checks")  # each edit's failure, not only the first confirmed one
    ops = [a for op in [*(e.op for e in EDITS), LATER.op, UNCHECKABLE] for a in ("--op", op)]
    first = vtgen(*base, "--max-samples", "2", *ops)
    alone = vtgen(*base, "--op", UNCHECKABLE)
    # --changed checks again every op that failed in this --out (here and in the other edit tests' runs):
    # its record (state.json) is forgotten, so that it follows the coverage run alone (one op failed in
    # it, LATER's passed), not the twenty failures above
    (out / WORK / "state.json").unlink(missing_ok=True)
    report = out / "coverage.json"
    covered_ops = [a for op in (EDITS[0].op, UNCHECKABLE, LATER.op) for a in ("--op", op)]
    covered = vtgen(*base, "--max-samples", "2", "--coverage", str(report), *covered_ops)
    text, line = edit_formula(reach_yaml.derivatives.read_text(encoding="utf-8"), LATER)
    reach_yaml.derivatives.write_text(text, encoding="utf-8")
    changed = vtgen(*base, "--max-samples", "2", "--changed")
    return Runs(first, changed, line, alone, covered, report)


@pytest.mark.parametrize("edit", EDITS, ids=[e.op for e in EDITS])
def test_gradcheck_op_fails_at_the_edited_line(edit: Edit, reach_yaml: EditedYaml, runs: Runs) -> None:
    assert runs.first.returncode == 1, runs.first.stdout[-3000:] + runs.first.stderr[-3000:]
    where = f"{reach_yaml.derivatives}:{reach_yaml.lines[edit.op]}: error: gradcheck failed for {edit.op} "
    found = [line for line in runs.first.stderr.splitlines() if line.startswith(where)]
    assert found, f"{edit.why}: no failure at {where}\n{runs.first.stderr[-6000:]}"


def test_the_unedited_op_passes_and_the_cuda_one_is_not_verified(runs: Runs) -> None:
    assert f"gradcheck failed for {LATER.op} " not in runs.first.stderr
    assert f"not verified: {UNCHECKABLE}: needs a backend this machine lacks" in runs.first.stderr


def test_changed_catches_a_lateredit_formula(reach_yaml: EditedYaml, runs: Runs) -> None:
    where = f"{reach_yaml.derivatives}:{runs.changed_line}: error: gradcheck failed for {LATER.op} "
    assert runs.changed.returncode == 1, runs.changed.stdout[-3000:] + runs.changed.stderr[-3000:]
    assert any(line.startswith(where) for line in runs.changed.stderr.splitlines()), runs.changed.stderr[-6000:]


def test_an_op_nothing_can_check_is_not_verified(runs: Runs) -> None:
    done = runs.uncheckable
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"  not verified: {UNCHECKABLE}: needs a backend this machine lacks" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith("NOT VERIFIED: 1 selected ops")
    assert "OK" not in done.stderr.rstrip().splitlines()[-1]


def test_coverage_never_counts_a_wrong_formula_and_names_why_an_entry_is_not_covered(
    reach_yaml: EditedYaml, runs: Runs
) -> None:
    done = runs.coverage
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # the edited formula fails
    assert "formula coverage: " in done.stderr and "not covered:" in done.stderr
    data = json.loads(runs.coverage_json.read_text(encoding="utf-8"))
    rows = {tuple(e["ops"]): e for e in data["entries"]}
    edited = next(e for ops, e in rows.items() if EDITS[0].op in ops)
    assert not edited["covered"] and edited["reason"] == "a check of it failed"  # a wrong formula is never covered
    assert edited["entry"].startswith(f"{reach_yaml.derivatives}:")
    assert next(e for ops, e in rows.items() if UNCHECKABLE in ops)["reason"].startswith("needs a backend")
    assert data["covered"] <= data["eligible"] and len(rows) >= 2


# an op no OpInfo is named after and no schema sample of the Python tier reaches alone: the reach map names
# module:nn.MultiLabelMarginLoss for it, whose captured arguments check it
MODULE_REACHED = Edit(
    "multilabel_margin_loss_forward",
    "a sign flip in an op the Python tier checks on a ModuleInfo's captured arguments",
    "  self: multilabel_margin_loss_backward(grad, self, target, reduction, is_target)",
    "  self: -multilabel_margin_loss_backward(grad, self, target, reduction, is_target)",
)


def test_the_python_tier_reaches_an_op_as_the_compiled_tier_does(
    real_yaml: RealYaml, edited_real_yaml: SharedEdits, runs: Runs, tmp_path: Path
) -> None:
    """The Python tier asks the compiled tier's reach map (cached in the shared --out by ``runs``: no new
    computation) and checks the op on the arguments the ModuleInfo's calls gave it: the flip fails at its line."""
    from vtgen_build.gradcheck.python_tier_run import Reach, TierOptions, run_python_tier
    from vtgen_build.inputs.files import Inputs
    from vtgen_build.model.schema import op_selection

    planted = edited_checkout(real_yaml, tmp_path / "src", (MODULE_REACHED,))
    native = planted.root / "aten/src/ATen/native"
    inputs = Inputs(str(native / "native_functions.yaml"), str(planted.derivatives), str(native / "tags.yaml"))
    selected = op_selection([MODULE_REACHED.op], "aten")
    options = TierOptions(selected, pytorch_root=str(planted.root), use_worker=False, reach=Reach.COMPUTE)
    report = run_python_tier(inputs, edited_real_yaml.out, "2.13", options)
    (verdict,) = [v for v in report.verdicts if v.op == MODULE_REACHED.op]
    assert verdict.status == "failed", report.render()
    assert verdict.location == Location(str(planted.derivatives), planted.lines[MODULE_REACHED.op]), report.render()
