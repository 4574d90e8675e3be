"""The Python tier of ``check --gradcheck``: PyTorch's own formulas translated to Python and checked on the
installed torch, nothing compiled (real torch processes; no C++ compile)."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import Edit, EditedYaml, edited_checkout, vtgen
from vtgen_build.base import store
from vtgen_build.base.errors import Location
from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.python_tier import HELPERS, NotCarried, TierPlan, helper_names, plan_tier, request_of
from vtgen_build.gradcheck.python_tier_run import (
    NOT_VERIFIED,
    OpVerdict,
    TierOptions,
    TierReport,
    disagreements,
    judge,
    run_python_tier,
)
from vtgen_build.gradcheck.records import entries_of
from vtgen_build.inputs.files import Inputs
from vtgen_build.model.schema import op_selection
from vtgen_build.torchlib import TorchInstall

PLANTS = (
    Edit("sin", "a sign flip", "  self: grad * self.cos().conj()", "  self: -grad * self.cos().conj()"),
    Edit(
        "elu_backward",
        "a wrong input (grad_output where grad belongs)",
        "  grad_output: elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
        "  grad_output: elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result)",
    ),
    Edit(
        "mul.Tensor",
        "a wrong explicit forward formula with a right backward one",
        "  result: other_t * self_p + self_t * other_p",
        "  result: other_t * self_p - self_t * other_p",
    ),
    Edit(
        "tanh_backward",
        "a wrong double backward of a helper-op entry (tanh's backward op, by its output)",
        "  output: grad.conj() * (-2 * output.conj() * grad_output)",
        "  output: grad.conj() * (-3 * output.conj() * grad_output)",
    ),
    Edit(
        "split.Tensor",
        "a sign flip in a view op returning Tensor[] (its Function returns the list's views one by one)",
        "  self: split_backward(grads,",
        "  self: -split_backward(grads,",
    ),
    Edit(
        "transpose.int",
        "a wrong factor in a view op",
        "  self: grad.transpose(dim0, dim1)",
        "  self: 2 * grad.transpose(dim0, dim1)",
    ),
    Edit(
        "sigmoid_backward",
        "a wrong explicit forward formula of a helper-op entry (its OpInfo's forward-over-reverse check reaches it)",
        "  result: sigmoid_backward(grad_output_t, output_p) + output_t.conj()",
        "  result: sigmoid_backward(grad_output_t, output_p) - output_t.conj()",
    ),
    Edit(
        "glu_backward",
        "a sign flip in a newly carried helper-op entry (glu's backward op, by self: glu_double_backward)",
        "  self: glu_double_backward(grad, grad_output, self, dim)",
        "  self: -glu_double_backward(grad, grad_output, self, dim)",
    ),
    Edit(
        "tan",
        "an untranslatable formula (a C++ function with no Python spelling)",
        "  self: grad * (1 + result.pow(2)).conj()",
        "  self: grad * std::lerp(result, result, 1.0).conj()",
    ),
)


@pytest.fixture(scope="module")
def planted(real_yaml: RealYaml, tmp_path_factory: pytest.TempPathFactory) -> EditedYaml:
    return edited_checkout(real_yaml, tmp_path_factory.mktemp("planted"), PLANTS)


def _ops(*ops: str) -> list[str]:
    return [a for op in ops for a in ("--op", op)]


@pytest.fixture(scope="module")
def planted_run(planted: EditedYaml, tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    out = tmp_path_factory.mktemp("planted-out")
    args = ("--pytorch-root", str(planted.root), "--out", str(out), "--gradcheck", "--tier", "python")
    return vtgen("check", *args, *_ops(*(p.op for p in PLANTS)))


@pytest.mark.slow
@pytest.mark.parametrize("plant", PLANTS[:-1], ids=lambda p: p.op)
def test_a_wrong_formula_fails_at_its_line(
    plant: Edit, planted: EditedYaml, planted_run: subprocess.CompletedProcess[str]
) -> None:
    assert planted_run.returncode == 1, planted_run.stderr[-3000:]
    where = f"{planted.derivatives}:{planted.lines[plant.op]}: error: [python tier] gradcheck failed for {plant.op} "
    found = [line for line in planted_run.stderr.splitlines() if line.startswith(where)]
    assert found, f"{plant.why}: no failure at {where}\n{planted_run.stderr[-4000:]}"


@pytest.mark.slow
def test_no_failure_but_the_plants(planted: EditedYaml, planted_run: subprocess.CompletedProcess[str]) -> None:
    """Every error of the planted run is at a planted line (mul.Scalar, mul_.Scalar, sin_... are right)."""
    errors = [line for line in planted_run.stderr.splitlines() if ": error: [python tier]" in line]
    planted_at = {f"{planted.derivatives}:{planted.lines[p.op]}: error:" for p in PLANTS[:-1]}
    assert {e.split(" [python tier]")[0] for e in errors} == planted_at, "\n".join(errors)


@pytest.mark.slow
def test_an_untranslatable_entry_is_not_verified_by_the_python_tier(
    planted: EditedYaml, planted_run: subprocess.CompletedProcess[str]
) -> None:
    where = f"{planted.derivatives}:{planted.lines['tan']}: note: [python tier] tan: not verified by the Python tier: "
    found = [line for line in planted_run.stderr.splitlines() if line.startswith(where)]
    assert found and "std::lerp" in found[0] and "left to the compiled tier" in found[0], planted_run.stderr[-3000:]
    assert "gradcheck failed for tan " not in planted_run.stderr and " tan: passed" not in planted_run.stderr


@pytest.mark.slow
def test_the_adjoint_test_alone_catches_a_wrong_forward_formula(planted: EditedYaml, tmp_path: Path) -> None:
    """Finite differences off: only <J·u, v> == <u, Jᵀ·v> runs, and it fails at the forward formula's line."""
    inputs = Inputs(
        str(planted.root / "aten/src/ATen/native/native_functions.yaml"),
        str(planted.derivatives),
        str(planted.root / "aten/src/ATen/native/tags.yaml"),
    )
    options = TierOptions(op_selection(["mul.Tensor"], "aten"), pytorch_root=str(planted.root), kinds=("adjoint",))
    report = run_python_tier(inputs, tmp_path, "2.13", options)
    (verdict,) = [v for v in report.verdicts if v.op == "mul.Tensor"]
    assert verdict.status == "failed", report.render()
    assert verdict.location == Location(str(planted.derivatives), planted.lines["mul.Tensor"])
    assert "adjoint mismatch" in verdict.message


@pytest.mark.slow
def test_forward_over_reverse_alone_catches_a_helper_ops_wrong_forward_formula(
    planted: EditedYaml, tmp_path: Path
) -> None:
    """sigmoid_backward's checks without its own forward-AD and adjoint checks: its backward formulas pass
    (schema samples: backward, double backward; sigmoid's OpInfo: double backward), and the forward-over-reverse
    check of sigmoid's OpInfo, which differentiates sigmoid's backward with sigmoid_backward's forward formula,
    fails at that formula's line."""
    inputs = Inputs(
        str(planted.root / "aten/src/ATen/native/native_functions.yaml"),
        str(planted.derivatives),
        str(planted.root / "aten/src/ATen/native/tags.yaml"),
    )
    selected = op_selection(["sigmoid_backward"], "aten")
    options = TierOptions(selected, pytorch_root=str(planted.root), kinds=("backward", "gradgrad"))
    report = run_python_tier(inputs, tmp_path, "2.13", options)
    (verdict,) = [v for v in report.verdicts if v.op == "sigmoid_backward"]
    assert verdict.status == "failed", report.render()
    assert verdict.location == Location(str(planted.derivatives), planted.lines["sigmoid_backward"]), verdict
    assert "forward-over-reverse check" in verdict.message, verdict


@pytest.fixture(scope="module")
def unedited(real_yaml: RealYaml, tmp_path_factory: pytest.TempPathFactory) -> TierReport:
    """The installed torch's own yaml: the revert of every plant, and the helpers against torch's own."""
    ops = ("sin", "elu_backward", "mul.Tensor", "tanh_backward", "celu", "deg2rad", "rad2deg", "log1p", "sinc", "silu",
           "mish", "clamp", "atan2", "copysign.Tensor", "mse_loss", "pow.Tensor_Scalar", "add.Tensor", "clone",
           "gelu", "mm", "addmm", "max", "kthvalue", "masked_fill", "avg_pool2d", "slice_scatter")  # fmt: skip
    options = TierOptions(op_selection(ops, "aten"), kinds=("backward", "gradgrad", "forward", "adjoint", "agree"))
    return run_python_tier(real_yaml.inputs, tmp_path_factory.mktemp("unedited"), "2.13", options)


@pytest.mark.slow
def test_the_revert_passes(unedited: TierReport) -> None:
    assert not unedited.of("failed"), unedited.render()
    passed = {v.op for v in unedited.of("passed")}
    assert {"sin", "sin_", "elu_backward", "mul.Tensor", "tanh_backward", "celu", "celu_"} <= passed, unedited.render()
    # C++ calls and Scalars: alpha.conj() (add), at::clone(t, memory_format) (in-place forward AD, clone),
    # gelu_backward(grad, self, approximate) with a keyword-only argument by position (gelu)
    assert {"add.Tensor", "add_.Tensor", "clone", "gelu", "mul.Scalar"} <= passed
    # at::zeros(size, options) in their formulas binds zeros(size, *, dtype, ...), never zeros.out
    assert {"avg_pool2d", "slice_scatter"} <= passed, unedited.render()
    # reach by OpInfo: elu_backward's formulas run by the double backward of nn.functional.elu (its OpInfo)
    (elu_backward,) = [v for v in unedited.verdicts if v.op == "elu_backward"]
    assert "fwd_over_rev" in elu_backward.message, elu_backward
    # an OpInfo's own forward-over-reverse check, where it says supports_fwgrad_bwgrad (sin's does)
    (sin,) = [v for v in unedited.verdicts if v.op == "sin"]
    assert "fwd_over_rev" in sin.message, sin


@pytest.mark.slow
def test_the_python_helpers_equal_the_installed_torchs(unedited: TierReport) -> None:
    """Each helper of formula_helpers.py runs (through an entry calling it) with the same values as the
    installed torch's compiled helper: the ``agree`` check passed for every entry here."""
    for v in unedited.of("passed"):
        if "_" not in v.op.rstrip("_") or v.op in ("elu_backward", "mse_loss"):
            assert "agree" in v.message or v.op.endswith("_"), v
    proven = {"elu_backward", "deg2rad", "rad2deg", "log1p", "sinc", "silu", "mish", "clamp", "atan2", "mse_loss",
              "pow.Tensor_Scalar", "mm", "addmm", "max", "kthvalue", "masked_fill.Tensor"}  # fmt: skip
    assert proven <= {v.op for v in unedited.of("passed") if "agree" in v.message}, unedited.render()


# an op no OpInfo is named after and no schema sample of the Python tier reaches: a ModuleInfo's calls do
MODULE_REACHED = Edit(
    "multilabel_margin_loss_forward",
    "a sign flip in an op only a ModuleInfo's captured arguments check",
    "  self: multilabel_margin_loss_backward(grad, self, target, reduction, is_target)",
    "  self: -multilabel_margin_loss_backward(grad, self, target, reduction, is_target)",
)


def _no_second_probe(*args: object) -> int:
    raise AssertionError("the Python tier's run asked a process which torch it has: its child said so")


def _forge_reach_map(out: Path, torch: TorchInstall, rows: store.JSON) -> None:
    """A small reach map cached in ``out`` as the compiled tier caches one (``reach.reach_map``: its key over the
    installed torch, its record over the torch libraries and the child files), holding only ``rows``."""
    from vtgen_build.compile.artifacts import ArtifactCache
    from vtgen_build.gradcheck.analyses import child_files, remember, torch_key
    from vtgen_build.gradcheck.reach import KIND
    from vtgen_build.plan.target import supported_release
    from vtgen_build.torchlib.build import CACHE, Session

    cache = ArtifactCache.open(out / ".vtgen-gradcheck" / CACHE)
    key = torch_key(KIND, torch, supported_release(torch.version, "the installed torch"), "")
    remember(Session(cache, cache.digests()), key, KIND, {"key": key, "entries": rows},
             [*torch.libraries, *child_files()])  # fmt: skip


@pytest.mark.slow
def test_an_op_run_uses_the_reach_map_when_cached(
    real_yaml: RealYaml, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--op`` of an op only a ModuleInfo reaches: with no reach map cached, no check entered it (not verified,
    and the report says the map is not cached; never computed: minutes); with the compiled tier's map cached
    (a forged one naming module:nn.MultiLabelMarginLoss), its captured arguments fail the flip at its line.
    The map's key is the torch the run's child imported and said: no process of the run asks again."""
    from vtgen_build.torchlib import locate

    torch = locate.locate_torch()  # the test's own question, before the runs
    monkeypatch.setattr(locate, "_ask", _no_second_probe)
    planted = edited_checkout(real_yaml, tmp_path / "src", (MODULE_REACHED,))
    native = planted.root / "aten/src/ATen/native"
    inputs = Inputs(str(native / "native_functions.yaml"), str(planted.derivatives), str(native / "tags.yaml"))
    options = TierOptions(op_selection([MODULE_REACHED.op], "aten"), pytorch_root=str(planted.root),
                          use_worker=False, kinds=("backward",))  # fmt: skip
    out = tmp_path / "out"
    cold = run_python_tier(inputs, out, "2.13", options)
    (verdict,) = [v for v in cold.verdicts if v.op == MODULE_REACHED.op]
    assert verdict.status == NOT_VERIFIED and "no check entered its kernel" in verdict.message, cold.render()
    assert "no reach map of torch" in cold.render() and "is cached" in cold.render(), cold.render()
    assert not (out / ".vtgen-gradcheck" / "cache").exists()  # nothing computed, nothing cached
    reach: store.JSON = [["module:nn.MultiLabelMarginLoss", [MODULE_REACHED.op], ["multilabel_margin_loss_backward"]]]
    _forge_reach_map(out, torch, reach)
    warm = run_python_tier(inputs, out, "2.13", options)
    (verdict,) = [v for v in warm.verdicts if v.op == MODULE_REACHED.op]
    assert verdict.status == "failed", warm.render()
    assert verdict.location == Location(str(planted.derivatives), planted.lines[MODULE_REACHED.op]), warm.render()
    assert "module:nn.MultiLabelMarginLoss" in verdict.message, verdict  # where its checks came from
    assert "by the cached reach map" in warm.render(), warm.render()


_SIN_FLIP = Edit("sin", "a sign flip", "  self: grad * self.cos().conj()", "  self: -grad * self.cos().conj()")


@pytest.mark.slow
def test_a_failed_family_runs_no_captured_checks(real_yaml: RealYaml, tmp_path: Path) -> None:
    """A wrong sin with the reach map cached: sin's own check fails and its family's checks end there, the
    captured ones of ``sin_`` too (they would say it again, seconds later: the first verdict of an edit is the
    one waited for); ``all_checks`` runs every check of the family: ``sin_``'s own fails at the same line."""
    from vtgen_build.torchlib import locate

    planted = edited_checkout(real_yaml, tmp_path / "src", (_SIN_FLIP,))
    native = planted.root / "aten/src/ATen/native"
    inputs = Inputs(str(native / "native_functions.yaml"), str(planted.derivatives), str(native / "tags.yaml"))
    out = tmp_path / "out"
    _forge_reach_map(out, locate.locate_torch(), [["sin", ["sin"], []], ["sin (inplace)", ["sin_"], []]])
    options = TierOptions(op_selection(["sin"], "aten"), pytorch_root=str(planted.root), use_worker=False,
                          kinds=("backward",))  # fmt: skip
    first = {v.op: v for v in run_python_tier(inputs, out, "2.13", options).verdicts}
    assert first["sin"].status == "failed" and first["sin_"].status == NOT_VERIFIED, first
    assert "not reached" in first["sin_"].message, first["sin_"]
    rows = (out / ".vtgen-gradcheck" / "python-tier" / "results.jsonl").read_text(encoding="utf-8")
    assert "arguments from" not in rows, rows[-2000:]  # no captured check ran
    every = {v.op: v for v in run_python_tier(inputs, out, "2.13", replace(options, all_checks=True)).verdicts}
    assert every["sin_"].status == "failed", every["sin_"]
    assert every["sin_"].location == Location(str(planted.derivatives), planted.lines["sin"]), every["sin_"]


def test_the_reach_map_a_run_reads_is_one_typed_choice_made_at_the_command_line() -> None:
    """``TierOptions.reach`` was a string ("compute", "cached" or "") compared against constants: a misspelt one
    ran as "cached".  It is a ``Reach``, chosen in one place: none for an op library, computed for --coverage of
    the whole yaml, a cached one for --op runs."""
    from vtgen_build.cli.commands import _tier_reach
    from vtgen_build.gradcheck.python_tier_run import Reach

    assert _tier_reach(library=True, coverage=True, op=False) is Reach.NONE
    assert _tier_reach(library=False, coverage=True, op=False) is Reach.COMPUTE
    assert _tier_reach(library=False, coverage=True, op=True) is Reach.CACHED
    assert _tier_reach(library=False, coverage=False, op=True) is Reach.CACHED
    assert TierOptions(()).reach is Reach.CACHED


def test_the_helpers_module_names_what_it_defines() -> None:
    names = helper_names()
    assert {"elu_double_backward", "sinc_backward", "clamp_backward"} <= names
    # its __all__ names them: PyTorch's own spelling of a few begins with an underscore, its private ones are not
    assert {"_euclidean_dist_backward", "_convolution_jvp", "_trilinear_backward"} <= names
    assert not {"_mm", "_vjp_of", "_reflect", "_mean_of"} & names
    from vtgen_build import gradcheck_child

    assert (gradcheck_child.HERE / f"{HELPERS}.py").is_file()  # the module the translated texts import


def test_plan_translates_only_the_selected_families(real_yaml: RealYaml) -> None:
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["sin", "sum"], "aten"), [], False)
    assert {"sin", "sin_"} <= plan.carried and "sin.out" in plan.outs
    assert all(op.split(".")[0].rstrip("_") in ("sin", "sum") for op in plan.carried | {n.op for n in plan.not_carried})
    assert not any(op.startswith("cos") for op in plan.carried)


def test_helper_op_entries_have_samples(real_yaml: RealYaml) -> None:
    """Entries whose helpers the Python tier now has, sampled by hints (their functional ops had none): the
    reduction of scatter_reduce / index_reduce, _trilinear's and convolution's dimension lists, a complex
    spectrum for _fft_c2r.  PyTorch's own CPU kernel of native_batch_norm crashes the process (SIGSEGV) in eval
    mode without running statistics (its sample with the optional arguments absent): its hint trains."""
    ops = ["native_batch_norm", "_trilinear", "scatter_reduce.two", "index_reduce", "convolution",
           "convolution_backward", "_fft_c2r"]  # fmt: skip
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(ops, "aten"), [], False)
    sampled = {s.op: s for s in plan.samples if s.samples and s.why_not is None}
    assert set(ops) <= set(sampled) and set(ops) <= plan.carried, sorted(sampled)
    for sample in sampled["native_batch_norm"].samples:
        assert [a.value for a in sample if a.name == "training"] == [True], sample
    assert sampled["_fft_c2r"].dtypes == ("complex128",)  # its float64 samples: no check entered its kernel


def test_views_and_tensor_list_returns_are_carried_but_not_foreach_ops(real_yaml: RealYaml) -> None:
    """A view entry (squeeze, t, split) and a ``-> Tensor[]`` one (split, unsafe_split, unbind) get a module; a
    ``_foreach_`` op (formulas per list element) is not carried, and says why."""
    ops = ["squeeze", "t", "split.Tensor", "unsafe_split.Tensor", "unbind.int", "_foreach_div.List"]
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(ops, "aten"), [], False)
    assert {"squeeze", "squeeze_", "t", "split.Tensor", "unsafe_split.Tensor", "unbind.int"} <= plan.carried
    (split,) = [text for op, text in plan.modules if op == "split.Tensor"]
    assert "return tuple(torch.ops.aten.split.Tensor(" in split and "return list(_split_Tensor_apply(" in split
    (squeeze_,) = [text for op, text in plan.modules if op == "squeeze_"]  # sizes saved from before the op
    assert "_s_self_sym_sizes = _before_self.shape" in squeeze_ and "_before_self = self.clone()" in squeeze_
    why = {n.op: n.why for n in plan.not_carried}
    assert "_foreach_div.List" not in plan.carried and "per list element" in why["_foreach_div.List"], why


def test_a_checkout_with_its_own_functions_manual_leaves_helper_entries_unverified(real_yaml: RealYaml) -> None:
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["sinc", "sin"], "aten"), [], own_manual=True)
    assert "sin" in plan.carried  # its formula calls no helper
    (sinc,) = [n for n in plan.not_carried if n.op == "sinc"]
    assert "FunctionsManual.cpp" in sinc.why


def test_an_op_dense_cpu_tensors_never_take_autograd_at_is_not_carried(real_yaml: RealYaml) -> None:
    """Found on the whole 2.13 yaml: matmul's and linear's entries are their nested tensors' (a dense CPU tensor
    takes their CompositeImplicitAutograd kernels); installed for AutogradCPU they replaced the decomposition
    for every op calling them, and their formulas' backward ops have no CPU kernel (every formula calling
    matmul raised: linalg_inv_ex, linalg_pinv)."""
    ops = ["matmul", "linear", "max_pool2d", "cudnn_convolution", "linalg_inv_ex", "mm"]
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(ops, "aten"), [], False)
    why = {n.op: n.why for n in plan.not_carried}
    assert {"linalg_inv_ex", "mm"} <= plan.carried, why  # a CPU kernel (mm) or a structured delegate
    assert why["matmul"].startswith("needs sparse / quantized / nested inputs"), why
    assert why["max_pool2d"].startswith("needs a backend this machine lacks (no CPU kernel)"), why
    assert why["cudnn_convolution"].startswith("needs a backend this machine lacks (no CPU kernel)"), why
    assert not {"matmul", "linear", "max_pool2d", "cudnn_convolution"} & plan.carried


def test_an_op_without_a_schema_sample_is_installed_for_the_other_checks(real_yaml: RealYaml) -> None:
    """lu_unpack has no schema sample (int32 pivots), but its OpInfo checks it: its kernel is installed, and
    the sample's reason is said only when no check entered it."""
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["lu_unpack"], "aten"), [], False)
    assert "lu_unpack" in plan.carried and "lu_unpack" not in {s.op for s in plan.samples}
    (unsampled,) = plan.unsampled
    assert unsampled.op == "lu_unpack" and unsampled.why.startswith("no schema sample: no sample yet")
    plan = TierPlan((("f", ""),), (), frozenset(), (), {"f": _place()}, unsampled=(NotCarried("f", "no schema "
                    "sample: no sample yet: why", None),))  # fmt: skip
    (v,) = judge(plan, entries_of([]))
    assert (
        v.status == NOT_VERIFIED and "f: not verified by the Python tier: no schema sample: no sample yet" in v.message
    )
    (w,) = judge(plan, entries_of([_row("passed", "backward")]))
    assert w.status == "passed"


def test_a_captured_check_waits_for_no_check_that_only_entered_the_op_inside_another() -> None:
    """Found on the whole 2.13 yaml: linalg.svd's OpInfo check enters ``_linalg_svd`` inside (no verdict on it:
    not called directly), which left it out of the captured checks that would have judged it."""
    from vtgen_build.gradcheck_child.protocol import CaptureTarget
    from vtgen_build.gradcheck_child.python_tier_reach import pending
    from vtgen_build.gradcheck_child.rows import Check, Entry

    targets = tuple(CaptureTarget(op, op, (), (), False) for op in ("_linalg_svd", "linalg_svd", "sin"))
    check = Check("backward", "function", "passed", ours_ran=True, hit=("linalg_svd", "_linalg_svd"))
    rows = [Entry("linalg.svd", (check,), (("function", ("linalg_svd",)), ("inplace", ())), aten="linalg_svd")]
    assert [t.op for t in pending(targets, rows)] == ["_linalg_svd", "sin"]


def test_a_fixed_size_list_default_is_spelled_as_the_list(real_yaml: RealYaml) -> None:
    """Found on the whole 2.13 yaml: torch hands a Python kernel no argument left at its default, and the
    kernel passed ``stride=1`` on to slow_conv_transpose2d's own call, which takes a list there."""
    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["slow_conv_transpose2d"], "aten"), [], False)
    (text,) = [t for op, t in plan.modules if op == "slow_conv_transpose2d"]
    assert "bias=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), dilation=(1, 1))" in text


def _place() -> FormulaPlaces:
    y = "derivatives.yaml"
    return FormulaPlaces(("self", "other"), False, (), ((("self",), Location(y, 10)), (("other",), Location(y, 11))),
                         (Location(y, 12),), Location(y, 9))  # fmt: skip


def _plan() -> TierPlan:
    return TierPlan((("f", ""),), (), frozenset(), (), {"f": _place()})


def _row(status: str, kind: str, message: str = "", why: str = "") -> dict[str, object]:
    check = {"kind": kind, "variant": "function", "dtype": "float64", "status": status, "message": message,
             "why": why, "sample": 0, "positions": [0, 1], "ours_ran": True, "hit": ["f"]}  # fmt: skip
    return {"entry": "f (schema samples)", "aten": "f", "direct": {"function": ["f"]}, "checks": [check]}


def test_an_entry_named_after_no_op_that_hung_or_raised_is_said() -> None:
    """``judge`` keys an entry's error by the entry's name: an op's own entry gives its op no verdict and says
    why, but an OpInfo's or the captured checks' (``via ...``) named no op and their errors (a hang in a
    formula) were dropped unsaid, the ops they checked left "not verified: no check entered its kernel"."""
    from vtgen_build.gradcheck.python_tier_run import _unjudged

    hung = {"entry": "via nn.functional.g (python tier)", "error": "timed out after 1s in argument set 0 of the "
            "captured backward check of f (the per-entry limit)", "fatal": True}  # fmt: skip
    raised = {"entry": "f (python tier)", "error": "RuntimeError: boom"}
    (v,) = judge(_plan(), entries_of([hung, raised]))
    assert v.status == NOT_VERIFIED and "the check itself: RuntimeError: boom" in v.message, v
    (error,) = _unjudged(_plan(), entries_of([hung, raised]), fatal=True)
    assert "checks of via nn.functional.g gave no verdict: timed out after 1s in argument set 0" in error, error
    assert error.startswith("vtgen-build: error: ") and TierReport([], errors=[error]).status == 1  # a hang fails
    other = {"entry": "nn.functional.h (python tier)", "error": "RuntimeError: no sample"}
    (note,) = _unjudged(_plan(), entries_of([hung, other]), fatal=False)
    assert note.startswith("vtgen-build: note: ") and "nn.functional.h gave no verdict" in note, note


def test_a_mismatch_fails_at_the_formula_of_its_input() -> None:
    text = "Jacobian mismatch for output 0 with respect to input 1,"
    (v,) = judge(_plan(), entries_of([_row("failed", "backward", text)]))
    assert v.status == "failed" and v.location == Location("derivatives.yaml", 11)
    assert str(v).startswith("derivatives.yaml:11: error: [python tier] gradcheck failed for f (float64 sample 0)")
    forward = "Jacobian computed with forward mode mismatch for output 0 with respect to input 0,"
    (f,) = judge(_plan(), entries_of([_row("failed", "forward", forward)]))
    assert f.status == "failed" and f.location == Location("derivatives.yaml", 12)
    (a,) = judge(_plan(), entries_of([_row("failed", "adjoint", "adjoint mismatch: ...")]))
    assert a.status == "failed" and a.location == Location("derivatives.yaml", 12)


def test_a_captured_failure_whose_reference_rerun_raises_stands_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed captured check is rerun with torch's own kernels; when that rerun raises, the failure stands (it
    may be the formula's) and the report says the rerun raised, and why (the row's ``reference_error``)."""
    from vtgen_build.gradcheck_child import python_tier_reach
    from vtgen_build.gradcheck_child.protocol import CaptureTarget, TierRequest
    from vtgen_build.gradcheck_child.rows import Entry

    def raising(*args: object) -> list[Entry]:
        raise RuntimeError("the module's calls need a CUDA device")

    monkeypatch.setattr(python_tier_reach.sample_sources, "all_entries", lambda names: [object()])
    monkeypatch.setattr(python_tier_reach.child, "_target_records", raising)
    row = {**_row("failed", "backward", "Jacobian mismatch for output 0 with respect to input 1,"),
           "entry": "f (arguments from module:nn.F)", "source": "module:nn.F"}  # fmt: skip
    target = CaptureTarget("f", "f", ("module:nn.F",), ("self",), False)
    request = TierRequest(True, False, (), ("float64",), 2, (), (), (), ("backward",), 60, False, targets=(target,))
    (rerun,) = python_tier_reach.reference([Entry.from_json(row)], request)
    assert rerun.reference_error == "RuntimeError: the module's calls need a CUDA device", rerun
    (v,) = judge(_plan(), entries_of([rerun.to_json()]))
    assert v.status == "failed" and v.location == Location("derivatives.yaml", 11), v
    assert "through module:nn.F" in v.message, v
    assert "its rerun with torch's own kernels raised: RuntimeError: the module's calls need a CUDA device" in str(v)


def test_a_double_backward_check_runs_only_the_samples_whose_backward_builds_a_graph_through_the_op() -> None:
    """Found on the whole 2.13 yaml: cumprod's backward calls ``scatter_`` only when it builds no graph (a sample
    with zeros), so its double backward never runs scatter_'s formulas, yet the check ran eight full-Jacobian
    double backwards through the Python tier's kernels (past the 300 s limit) and called scatter_.value
    checked.  Only samples whose backward, building its graph, calls our kernel are run; here the second."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.child import _double_backward_reaches

    calls: list[str] = []

    class Helper(torch.autograd.Function):  # stands for scatter_ inside a backward
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            calls.append("op")
            return x.clone()

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g

    class Op(torch.autograd.Function):  # stands for cumprod: its backward calls the op with or without a graph
        @staticmethod
        def forward(ctx: Any, x: Any, graph: bool) -> Any:
            ctx.graph = graph
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            if torch.is_grad_enabled() == ctx.graph:
                return Helper.apply(g) * 2, None
            return g * 2, None

    class Call:
        def __init__(self, graph: bool) -> None:
            self.inputs = (torch.ones(3, dtype=torch.float64, requires_grad=True),)
            self.fn = lambda x: Op.apply(x, graph)

    class Entry:
        def calls(self, dtype: Any, limit: int) -> list[Call]:
            return [Call(False), Call(True), Call(True)][:limit]

    class Counted:
        def snapshot(self) -> list[int]:
            return [len(calls)]

        def entered(self, before: list[int]) -> set[str]:
            return {"op"} if len(calls) > before[0] else set()

    assert _double_backward_reaches(Entry(), torch.float64, "op", Counted(), 1) == frozenset({1})  # type: ignore[arg-type]
    assert _double_backward_reaches(Entry(), torch.float64, "op", Counted(), 2) == frozenset({1, 2})  # type: ignore[arg-type]
    assert _double_backward_reaches(Entry(), torch.float64, "other", Counted(), 2) == frozenset()  # type: ignore[arg-type]

    class Raising:  # a sample whose graph-building backward raises is run by the check (it fails there)
        inputs = (torch.ones(3, dtype=torch.float64, requires_grad=True),)

        @staticmethod
        def fn(x: Any) -> Any:
            raise RuntimeError("a formula that raises")

    class WithRaising:
        def calls(self, dtype: Any, limit: int) -> list[Any]:
            return [Call(False), Raising()][:limit]

    assert _double_backward_reaches(WithRaising(), torch.float64, "op", Counted(), 2) == frozenset({1})  # type: ignore[arg-type]


class _Uncounted:
    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return set()


def _timed_out(run: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """``run`` as the child runs an entry, with a one-second limit: its rows, and the places it said."""
    import io
    import json

    from vtgen_build.gradcheck_child.child_loop import Progress, run_entries

    out = io.StringIO()
    at = Progress(out)
    run_entries(out, [("via planted", lambda: run(at))], 1, at)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return [x for x in lines if "entry" in x], [x["at"] for x in lines if "at" in x]


def test_a_hang_in_the_double_backward_probe_is_reported_at_its_sample() -> None:
    """The probe choosing a double backward's samples runs formulas (a backward building its graph): a hang
    there said no place, and its ``except Exception`` took the alarm's ``Timeout`` for a sample that raised,
    went on with no time limit left (the next sample ran its two seconds) and the entry ended with no error."""
    torch = pytest.importorskip("torch")
    import time

    from vtgen_build.gradcheck_child.child import _double_backward_reaches

    class Hanging:
        name = "planted"
        inputs = (torch.ones(2, dtype=torch.float64, requires_grad=True),)

        @staticmethod
        def fn(x: Any) -> Any:
            time.sleep(2)
            return x * 2

    class Entry:
        name = "planted"

        def calls(self, dtype: Any, limit: int) -> list[Any]:
            return [Hanging(), Hanging()]

    def probe(at: Any) -> list[Any]:
        _double_backward_reaches(Entry(), torch.float64, "op", _Uncounted(), 2, at)  # type: ignore[arg-type]
        return []  # ran to its end: no row of a timeout

    rows, said = _timed_out(probe)
    where = "sample 0 (float64) of the probe of planted's double backward for op"
    assert said == [where]
    assert len(rows) == 1 and rows[0]["error"] == f"timed out after 1s in {where} (the per-entry limit)", rows


def test_a_hang_in_a_captured_check_is_reported_at_its_argument_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A captured check's gradcheck hanging: its ``except Exception`` made the alarm's ``Timeout`` a failed check
    (message ``Timeout``: a wrong formula, said of a hang) and said no place."""
    torch = pytest.importorskip("torch")
    import time

    from vtgen_build.gradcheck_child import capture, sample_sources

    class Sin:
        name = "sin"

        def calls(self, dtype: Any, limit: int) -> list[Any]:
            return [sample_sources.Call(torch.sin, (torch.randn(3, dtype=dtype, requires_grad=True),))]

    sets = capture.capture(Sin(), torch.float64, {"sin"}, 1)["sin"]
    monkeypatch.setattr(capture, "_gradcheck", lambda *args: time.sleep(2))

    def check(at: Any) -> list[Any]:
        capture.captured_checks(sets, {"self"}, ["backward"], _Uncounted(), at=at)
        return []  # ran to its end: no row of a timeout

    rows, said = _timed_out(check)
    where = "argument set 0 of the captured backward check of sin"
    assert said == [where]
    assert len(rows) == 1 and rows[0]["error"] == f"timed out after 1s in {where} (the per-entry limit)", rows


def _of(op: str, status: str, kind: str, message: str = "", others: tuple[str, ...] = ()) -> dict[str, object]:
    row = _row(status, kind, message)
    check = {**row["checks"][0], "hit": [op], "others": list(others)}  # type: ignore[index]
    return {**row, "entry": f"{op} (python tier)", "aten": op, "direct": {"function": [op]}, "checks": [check]}


def test_a_failure_that_ran_another_failed_kernel_of_ours_is_no_verdict() -> None:
    """Found on the planted yaml (2.13 and 2.14.1): ``mul.Scalar``'s complex forward-AD check runs
    ``mul.Tensor`` (gradcheck multiplies by 1j), so the wrong ``mul.Tensor`` forward formula failed it too,
    at ``mul.Scalar``'s line: a false failure of a right formula."""
    plan = TierPlan((("f", ""), ("g", "")), (), frozenset(), (), {"f": _place(), "g": _place()})
    wrong = "Jacobian computed with forward mode mismatch for output 0 with respect to input 0,"
    f, g = _of("f", "failed", "forward", wrong, ("g",)), _of("g", "failed", "forward", wrong)
    blamed, guilty = judge(plan, entries_of([f, g]))
    assert guilty.status == "failed" and blamed.status == NOT_VERIFIED, (blamed, guilty)
    assert "also ran our kernel of g, which failed on its own" in blamed.message
    alone, right = judge(plan, entries_of([f, _of("g", "passed", "forward")]))  # g right: f's failure is f's
    assert alone.status == "failed" and right.status == "passed"
    both = judge(plan, entries_of([f, _of("g", "failed", "forward", wrong, ("f",))]))  # each ran the other's
    assert [v.status for v in both] == ["failed", "failed"]  # no clean culprit: neither failure is hidden


def test_vmap_refusing_an_in_place_tangent_write_is_no_verdict() -> None:
    """Found on the whole 2.13 yaml (index_copy_, index_fill_): torch's own kernels pass that batched check."""
    text = "While computing batched gradients, got: vmap: aten::index_copy_(self, *extra_args) is not possible ..."
    (v,) = judge(_plan(), entries_of([_row("failed", "forward", f"batched grad {text}")]))
    assert v.status == NOT_VERIFIED


def test_forward_ad_of_an_entry_with_no_forward_formula_is_no_verdict() -> None:
    """Found on the whole 2.13 yaml (nll_loss_backward, _softmax_backward_data): torch runs forward AD through a
    decomposition of such an op, the translated Function refuses it; its backward formulas are judged apart."""
    text = "forward-mode AD of 'f' is not implemented by the Python autograd (its entry has no forward formula; x:3)"
    (v,) = judge(_plan(), entries_of([_row("failed", "fwd_over_rev", text), _row("passed", "backward")]))
    assert v.status == "passed", v
    several = "forward-mode AD of 'f' is not implemented by the Python autograd (an op writing several tensors; x:3)"
    (w,) = judge(_plan(), entries_of([_row("failed", "forward", several), _row("passed", "backward")]))
    assert w.status == NOT_VERIFIED and "raised" in w.message  # a forward formula it could not run: no pass


def test_an_op_whose_family_failed_first_is_not_reached() -> None:
    plan = TierPlan((("f", ""), ("f_", "")), (), frozenset(), (), {"f": _place()})
    failed, stopped = judge(
        plan, entries_of([_row("failed", "backward", "Jacobian mismatch for output 0 with respect to input 0,")])
    )
    assert failed.status == "failed" and stopped.status == NOT_VERIFIED and "not reached" in stopped.message


def test_a_raise_under_vmap_is_no_verdict() -> None:
    """Found on the whole 2.13 yaml: sum's batched forward AD on a 0-dim sample raised inside our Function."""
    text = "While computing batched gradients, got: Could not allocate memory to change Tensor SizesAndStrides!"
    (v,) = judge(_plan(), entries_of([_row("failed", "forward", text)]))
    assert v.status == NOT_VERIFIED and "raised" in v.message


def test_a_raising_translation_is_never_a_verdict() -> None:
    (v,) = judge(_plan(), entries_of([_row("failed", "backward", "'float' object has no attribute 'conj'")]))
    assert v.status == NOT_VERIFIED and "raised" in v.message
    (w,) = judge(_plan(), entries_of([_row("passed", "agree")]))
    assert w.status == NOT_VERIFIED  # agreeing with torch's values checks the translation, not the formula


def test_tiers_that_disagree_are_an_error_naming_both() -> None:
    report = TierReport([OpVerdict("f", "passed", Location("d.yaml", 3), "f: passed")])
    (clash,) = disagreements(report, passed=[], failed=["f"])
    said = "d.yaml:3: error: the tiers disagree on f: the Python tier passed, the compiled tier failed"
    assert clash.startswith(said)
    assert disagreements(report, passed=["f"], failed=[]) == []
    assert TierReport([OpVerdict("g", NOT_VERIFIED, None, "")]).status == 3


def test_tier_options_are_checked(real_yaml: RealYaml, tmp_path: Path) -> None:
    root = str(real_yaml.torchgen_dir)
    alone = vtgen("check", "--pytorch-root", root, "--out", str(tmp_path), "--tier", "python")
    assert alone.returncode != 0 and "--tier applies to --gradcheck only" in alone.stderr
    unselected = vtgen("check", "--pytorch-root", root, "--out", str(tmp_path), "--gradcheck", "--tier", "python")
    assert unselected.returncode != 0 and "--tier python: the Python tier checks PyTorch's yaml" in unselected.stderr
    assert "Traceback" not in alone.stderr + unselected.stderr


def test_the_exit_status_is_the_compiled_tiers_unless_the_tiers_disagree() -> None:
    from vtgen_build.cli.commands import _both_tiers
    from vtgen_build.gradcheck.report import Report

    python = TierReport([OpVerdict("sin", "passed", Location("d.yaml", 3), "sin: passed")])
    agreeing = Report(0.0, passed_ops=["sin"])
    assert _both_tiers(python, agreeing) == agreeing.status == 0
    assert _both_tiers(python, Report(0.0, failed_ops=["sin"])) == 1
    assert _both_tiers(None, agreeing) == 0


def test_formulas_calls_bind_as_cpp_binds_them() -> None:
    """at::sum(t, dtype) passes a dtype where torch.sum's second parameter is dim; at::clone(t, format) passes
    a keyword-only argument by position; at::special_i0 is no torch function; alpha.conj() on a Scalar."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.cpp_calls import CppTorch, scalar

    cpp, t = CppTorch(torch), torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    assert cpp.sum(t, torch.float32).dtype == torch.float32 and cpp.sum(t, None).shape == ()
    assert torch.equal(cpp.clone(t, torch.contiguous_format), t)
    assert torch.equal(cpp.special_i0(t), torch.special.i0(t))
    g = cpp.ops.aten.gelu_backward(torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64), "tanh")
    assert torch.allclose(g, torch.full((3,), 0.5, dtype=torch.float64))
    assert torch.equal(cpp.sum_to(torch.ones(4, 2, 3), [2, 1]), torch.full((2, 1), 12.0))  # at::sum_to: no operator
    assert cpp.sum_to(t, t.shape) is t
    assert scalar(2.0).conj() == 2.0 and scalar(1 + 2j).conj() == 1 - 2j and scalar(True) is True
    assert (
        cpp.ops.aten.addmm.default(torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1), beta=scalar(1.0)).item()
        == 1.0
    )


def test_a_none_argument_binds_the_overload_the_call_fills() -> None:
    """Found on the whole 2.13 yaml: sum's forward formula at::sum(self_t, dtype) with no dtype bound
    sum.dim_IntList(self_t, dim=None) (the first overload taking it), which raises under gradcheck's batched
    forward-AD check on a 0-dim sample; C++ calls sum(self, *, dtype), which runs there."""
    torch = pytest.importorskip("torch")
    import warnings

    from torch._vmap_internals import vmap  # the vmap gradcheck's batched checks use

    from vtgen_build.gradcheck_child.cpp_calls import CppTorch

    cpp, t = CppTorch(torch), torch.arange(3.0, dtype=torch.float64)
    with warnings.catch_warnings():  # it is deprecated for torch.vmap, but gradcheck's is this one
        warnings.simplefilter("ignore", FutureWarning)
        assert torch.equal(vmap(lambda x: cpp.sum(x, None))(t), t)
    assert cpp.sum(t.reshape(3, 1), [1], True).shape == (3, 1)  # a dim list still binds the dim overload


def test_an_overload_with_a_parameter_the_call_leaves_out_takes_no_call() -> None:
    """Found on the whole 2.13 yaml (57 entries raised, the pooling and padding ops, the scatters, the in-place
    comparisons): ``at::zeros(size, options)``, spelt with three arguments, is nearer ``zeros.out(size, *, out)``
    by count than ``zeros(size, *, dtype, layout, device, pin_memory)``, and the out overload refused it with an
    error no other overload was tried after. C++ never considers an overload whose parameter without a default the
    call leaves out."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.cpp_calls import CppTorch

    cpp = CppTorch(torch)
    made = cpp.zeros([2, 3], dtype=torch.float64, device="cpu")
    assert made.shape == (2, 3) and made.dtype == torch.float64 and not made.any()
    out = torch.ones(2)
    assert cpp.zeros([2], out=out) is out and not out.any()  # the out overload when the call gives out


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward AD's first use
def test_the_adjoint_test_keeps_its_u_from_a_forward_formula_writing_its_tangent() -> None:
    """``at::_index_put_impl_(self_t, ...)`` writes the input's tangent: the inner product still uses the u
    drawn (2x here: the jvp doubles its tangent in place), so a right pair of formulas is no mismatch."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.python_tier import adjoint_gap

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(x: object) -> object:
            return x * 2  # type: ignore[operator]

        @staticmethod
        def setup_context(ctx: object, inputs: object, output: object) -> None:
            pass

        @staticmethod
        def backward(ctx: object, g: object) -> object:
            return g * 2  # type: ignore[operator]

        @staticmethod
        def jvp(ctx: object, t: object) -> object:
            return t.mul_(2).clone()  # type: ignore[attr-defined]

    class Call:
        x = torch.randn(3, dtype=torch.float64, requires_grad=True)

        def inputs(self) -> tuple[object, ...]:
            return (self.x,)

        def __call__(self, x: object) -> object:
            return Twice.apply(x)

    left, right, scale = adjoint_gap(torch, Call())
    assert abs(left - right) <= 1e-9 * scale, (left, right)


def test_the_prelude_spells_cpp_members_and_a_view_tangent() -> None:
    """``t.slice(...)`` is aten's slice of a tensor, ``ArrayRef::slice`` of a size list; ``t.index(indices)``
    aten's index; a view op's tangent that is its input's own becomes a view of it (torch's custom Function
    wants one), any other stays as it is."""
    torch = pytest.importorskip("torch")
    from vtgen_build.translate import prelude

    scope: dict[str, object] = {"torch": torch}
    exec(prelude("_cpp_slice(x) _cpp_index(x) _view_tangent(x)"), scope)
    cpp_slice, cpp_index, view_tangent = (scope[n] for n in ("_cpp_slice", "_cpp_index", "_view_tangent"))
    t = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(cpp_slice(t, 1, 1, 3, 1), t[:, 1:3])  # type: ignore[operator]
    assert cpp_slice((4, 5, 6, 7), 1) == (5, 6, 7) and cpp_slice((4, 5, 6, 7), 1, 2) == (5, 6)  # type: ignore[operator]
    assert torch.equal(cpp_index(t, [None, torch.tensor([2, 0])]), t[:, [2, 0]])  # type: ignore[operator]
    u, w = torch.ones(2), torch.zeros(2)
    viewed = view_tangent(u, (None, u))  # type: ignore[operator]
    assert viewed is not u and viewed._base is u and view_tangent(w, (None, u)) is w  # type: ignore[operator]


def test_a_view_kernel_is_installed_only_around_its_own_checks(real_yaml: RealYaml) -> None:
    """torch refuses an in-place write to a custom Function's view output, which other ops' formulas make
    (cumprod's ``select(...).zero_()``): a view op's kernel (``t``) is ours inside its own checks only."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child import python_tier as child

    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["t"], "aten"), [], False)
    request = request_of(plan, ["backward"], 60, False, True, False, 2)
    assert "t" in plan.views and request.scoped == ("t", "t_")
    modules = list(request.modules)
    counters = child.PyCounters()
    scoped = child.Scoped(torch, modules, counters, "vtgen_build.gradcheck_child")
    x = torch.ones(2, 3, requires_grad=True) * 1  # not a leaf: a view of it may be written in place

    def transposed() -> object:
        return x.t()

    inside = scoped.around(["t"], transposed)()
    outside = transposed()
    assert counters.hits["t"] == 1 and inside.grad_fn.name() == "TBackward0"  # type: ignore[attr-defined]
    outside.select(0, 0).mul_(2)  # torch's own view kernel: an in-place write to its view is allowed
    assert counters.hits["t"] == 1


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward AD's first use
def test_a_view_inside_the_ops_kernel_of_an_input_with_a_tangent_is_no_forward_ad_view(real_yaml: RealYaml) -> None:
    """Found on the whole 2.13 yaml: vdot's OpInfo forward-AD check (complex, a conjugate view input) raised
    torch's internal assert on forward-AD views: the Function's forward ran the op above ADInplaceOrView, so
    the view its CPU kernel takes of the input was made a forward-AD view.  A C++ kernel runs it below
    (a view or in-place op's own ADInplaceOrView kernel still runs: ``t`` stays above)."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child import python_tier as child

    plan = plan_tier(real_yaml.inputs, None, "2.13", op_selection(["vdot", "t"], "aten"), [], False)
    modules = {m.op: m for m in request_of(plan, ["forward"], 60, False, True, False, 2).modules}
    assert "_below_autograd(inplace_or_view=True)" in modules["t"].text
    libs, failed = child.install(torch, [modules["vdot"]], child.PyCounters(), "vtgen_build.gradcheck_child")
    fwad = torch.autograd.forward_ad
    try:
        assert not failed
        a, b = torch.randn(4, dtype=torch.complex128), torch.randn(4, dtype=torch.complex128).conj()
        u = torch.randn(4, dtype=torch.complex128)
        with fwad.dual_level():
            tangent = fwad.unpack_dual(torch.vdot(fwad.make_dual(a, u), b)).tangent
    finally:
        for lib in libs:
            lib._destroy()
    assert torch.allclose(tangent, torch.vdot(u, b))
