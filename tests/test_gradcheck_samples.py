"""Schema-driven samples, torch-free: the hints files (located errors) and the planned samples.

The samples at run time (against a built op library and the real torch) are in
tests/test_gradcheck_library.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.gradcheck.hints import BUILTIN, Hints, load_hints
from vtgen_build.gradcheck.schema_run import library_ops, sample_source
from vtgen_build.gradcheck.schema_samples import ArgSample, OpSamples, plan_samples
from vtgen_build.gradcheck.verdict import REASONS
from vtgen_build.model import Inputs, load_model
from vtgen_build.model.schema import op_selection
from vtgen_build.plan.kernel import build_plan
from vtgen_build.plan.policy import load_policy

from .conftest import SAMPLE, RealYaml, YamlWriter

SAMPLE_INPUTS = Inputs(
    str(SAMPLE / "native_functions.yaml"), str(SAMPLE / "derivatives.yaml"), str(SAMPLE / "tags.yaml"), "vtsample"
)
SAMPLE_HINTS = str(SAMPLE / "sample_hints.yaml")


def _error(path: str) -> str:
    with pytest.raises(VtgenError) as info:
        load_hints([path])
    return str(info.value)


def test_unknown_keys_are_located_with_did_you_mean(tmp_yaml: YamlWriter) -> None:
    path = tmp_yaml("h.yaml", "- op: affine\n  args:\n    bias: {shape: [4], valuse: positive}\n")
    assert _error(path) == f"{path}:3: error: sample hints: tensor: unknown key 'valuse'; did you mean 'values'?"
    path = tmp_yaml("h2.yaml", "- op: affine\n  skp: no\n")
    assert _error(path) == f"{path}:2: error: sample hints: unknown key 'skp'; did you mean 'skip'?"


def test_bad_values_are_located(tmp_yaml: YamlWriter) -> None:
    path = tmp_yaml("h.yaml", "- op: a\n  args:\n    x: {values: postive}\n")
    assert "h.yaml:3: error: values: expected one of" in _error(path) and "did you mean 'positive'?" in _error(path)
    path = tmp_yaml("h.yaml", "- op: a\n  args:\n    x: {shape: [2, -1]}\n")
    assert _error(path).endswith("h.yaml:3: error: shape: expected a list of sizes (integers >= 0)")
    path = tmp_yaml("h.yaml", "- op: a\n  dtypes: [float32]\n")
    assert "h.yaml:2: error: dtypes: expected a list of float64, complex128" in _error(path)
    path = tmp_yaml("h.yaml", "- op: a\n- op: a\n")
    assert _error(path).endswith("h.yaml:2: error: sample hints: a second entry for 'a' (first at line 1)")
    path = tmp_yaml("h.yaml", "- args: {}\n")
    assert _error(path).endswith("h.yaml:1: error: sample hints: each entry needs 'op: <name>'")
    path = tmp_yaml("h.yaml", "- op: a\n  args:\n    x: {through: log_softmx}\n")
    assert "h.yaml:3: error: through: expected one of log_softmax" in _error(path) and "did you mean" in _error(path)
    path = tmp_yaml("h.yaml", "- op: a\n  outputs: [0, -1]\n")
    assert _error(path).endswith("h.yaml:2: error: outputs: expected a list of return indices (integers >= 0)")
    path = tmp_yaml("h.yaml", "- op: a\n  args:\n    x: {data: [2, 1.5]}\n")
    assert _error(path).endswith(
        "h.yaml:3: error: data: expected a list of integers (a 1-D long tensor of these values)"
    )
    path = tmp_yaml("h.yaml", "- op: a\n  args:\n    x: {data: [2, 1],\n        shape: [3]}\n")
    assert "h.yaml:4: error: shape: a tensor of given values (data) takes no other key" in _error(path)
    path = tmp_yaml("h.yaml", "- op: a\n  optional: presnt\n")
    assert "h.yaml:2: error: optional: expected one of both, present" in _error(path)


def test_a_hint_for_an_unknown_op_says_did_you_mean(tmp_yaml: YamlWriter) -> None:
    path = tmp_yaml("h.yaml", "- op: afine\n")
    with pytest.raises(
        VtgenError, match=r"h.yaml:1: error: sample hints: no op named 'afine'; did you mean 'affine'\?"
    ):
        sample_source(SAMPLE_INPUTS, [path], None)


def _plans(hints: Hints) -> dict[str, OpSamples]:
    kernels = build_plan(load_model(SAMPLE_INPUTS), load_policy()).kernels
    return {p.op: p for p in plan_samples(kernels, hints)}


def _arg(sample: tuple[ArgSample, ...], name: str) -> ArgSample | None:
    return next((a for a in sample if a.name == name), None)


def test_samples_follow_the_schema() -> None:
    plans = _plans(Hints())
    soft = plans["softsign"]
    assert (soft.inplace, soft.out, soft.node, soft.out_args) == (
        "softsign_",
        "softsign.out",
        "SoftsignBackward0",
        ("out",),
    )
    assert soft.samples == ((ArgSample("self", "tensor", (2, 3), grad=True),),)
    assert soft.dtypes == ("float64",)  # the op is not on the complex list: its kernel refuses complex
    affine = plans["affine"].samples
    assert [a.name for a in affine[0]] == ["input", "weight"]  # the optional bias absent, then present
    assert _arg(affine[1], "bias") == ArgSample("bias", "tensor", (2, 3), grad=True)
    assert _arg(plans["scale_add"].samples[1], "alpha") == ArgSample("alpha", "value", value=1.5)  # not its default
    tile = plans["tile_to"].samples[0]
    assert _arg(tile, "size") == ArgSample("size", "value", value=(2, 3))  # SymInt[] sizes: the input's shape
    quantize = plans["soft_quantize"].samples[0]
    assert _arg(quantize, "scale") == ArgSample(
        "scale", "tensor", (2, 3), grad=False
    )  # not_implemented: not differentiated
    assert plans["stack_mean"].samples[0][0] == ArgSample("tensors", "tensors", shapes=((2, 3), (2, 3)), grad=True)


def test_hints_fix_constrained_arguments() -> None:
    plans = _plans(load_hints([SAMPLE_HINTS]))
    affine = plans["affine"].samples[1]
    assert [a.shape for a in affine] == [(2, 3), (4, 3), (4,)]
    tile = plans["tile_to"].samples[0]
    assert (tile[0].shape, _arg(tile, "size")) == ((1, 3), ArgSample("size", "value", value=(2, 3)))
    assert _arg(plans["soft_quantize"].samples[0], "scale") == ArgSample(
        "scale", "tensor", (2, 3), values="positive", grad=False
    )
    assert [p.why_not for p in plans.values()] == [None] * len(plans)


def test_an_op_with_no_sample_is_not_verified_with_the_reason(tmp_yaml: YamlWriter) -> None:
    path = tmp_yaml("h.yaml", "- op: topk_abs\n  skip: its kernel is slow\n")
    source = sample_source(SAMPLE_INPUTS, [path], None)
    assert ("topk_abs", "no sample yet: its kernel is slow (sample hints)") in source.not_verified
    assert "topk_abs" not in [p.op for p in source.plans]


def test_op_names_with_and_without_the_namespace() -> None:
    known = ["softsign", "softsign_", "softsign.out", "affine"]

    def chosen(*names: str) -> list[str] | None:
        return library_ops(op_selection(names, SAMPLE_INPUTS.namespace), known)

    assert chosen("vtsample::softsign") == ["softsign", "softsign.out"]
    assert chosen("affine") == ["affine"]
    assert chosen() is None
    with pytest.raises(VtgenError, match=r"--op vtsample::softsine: .*did you mean 'vtsample::softsign'\?"):
        chosen("vtsample::softsine")
    with pytest.raises(VtgenError, match=r"--op afine: .*did you mean 'affine'\?"):
        chosen("afine")
    with pytest.raises(VtgenError, match="in namespace 'vtsample', not 'aten'"):
        chosen("aten::affine")


def test_a_skip_stating_a_reason_of_the_fixed_list_is_that_reason(tmp_yaml: YamlWriter) -> None:
    path = tmp_yaml(
        "h.yaml",
        """
        - op: topk_abs
          skip: "needs sparse / quantized / nested inputs: its input must be a sparse tensor"
        - op: affine
          skip: needs a sparse input, said in other words
        """,
    )
    why = dict(sample_source(SAMPLE_INPUTS, [path], None).not_verified)
    assert (
        why["topk_abs"] == "needs sparse / quantized / nested inputs: its input must be a sparse tensor (sample hints)"
    )
    assert why["affine"] == "no sample yet: needs a sparse input, said in other words (sample hints)"


def test_an_in_place_op_alone_with_a_formula_is_sampled_in_place(real_yaml: RealYaml) -> None:
    kernels = build_plan(load_model(real_yaml.inputs), load_policy()).kernels
    (eq,) = plan_samples(kernels, Hints(), ["eq_.Scalar"])  # eq.Scalar's output is not differentiable
    assert (eq.op, eq.inplace, eq.writes, eq.why_not) == ("eq_.Scalar", None, ("self",), None)
    (add,) = plan_samples(kernels, Hints(), ["add_.Tensor"])  # both have formulas: the functional one
    assert (add.op, add.inplace) == ("add.Tensor", "add_.Tensor")


def test_builtin_hints_name_real_ops(real_yaml: RealYaml) -> None:
    source = sample_source(real_yaml.inputs, [], None)  # loads the shipped file, checks each op exists
    assert Path(BUILTIN).is_file() and source.plans


def test_an_in_place_op_without_a_functional_variant_is_sampled_on_copies(tmp_yaml: YamlWriter) -> None:
    native = tmp_yaml(
        "native_functions.yaml",
        """
        - func: mix_(Tensor(a!) self, Tensor other, float alpha) -> Tensor(a!)
          dispatch:
            CompositeExplicitAutograd: mix_
        """,
    )
    derivatives = tmp_yaml(
        "derivatives.yaml",
        """
        - name: mix_(Tensor(a!) self, Tensor other, float alpha) -> Tensor(a!)
          self: grad * alpha
          other: grad * (1 - alpha)
        """,
    )
    kernels = build_plan(load_model(Inputs(native, derivatives, None, "mylib")), load_policy()).kernels
    (mix,) = plan_samples(kernels, Hints())
    assert (mix.op, mix.inplace, mix.writes, mix.why_not) == ("mix_", None, ("self",), None)
    assert [a.name for a in mix.samples[0]] == ["self", "other", "alpha"]


# ops whose every schema sample the op itself rejected before their hints (4-D/5-D inputs, fitting
# windows and sizes, shapes that multiply): now their samples run, and PyTorch's own kernels pass
# the checks on them (a hint that made a false failure would fail here)
HINTED = (
    "_upsample_lanczos2d_aa",
    "_upsample_lanczos2d_aa_backward",
    "avg_pool3d",
    "fractional_max_pool2d",
    "reflection_pad3d_backward",
    "adaptive_max_pool2d_backward",
    "addbmm",
    "linalg_householder_product",
    "_sparse_addmm",
    "_unsafe_index.Tensor",  # lists of optional index tensors: long indices
    "_unsafe_index_put",
    "_index_put_impl",
    "grid_sampler_3d_backward",
    "eq_.Scalar",  # in-place ops whose functional variant's output is not differentiable: sampled in place
    "lt_.Tensor",
    # norms whose statistics come from their forward (running statistics of the input's channel count,
    # present in every sample; native_group_norm: the output PyTorch's own backward does not drop)
    "_batch_norm_no_update",
    "_native_batch_norm_legit_functional",
    "native_group_norm",
    "_ctc_loss",  # on log_softmax of the tensor gradcheck moves (hint `through`)
    "bernoulli.Tensor",  # probabilities (random: every evaluation seeded alike)
    "_native_batch_norm_legit_no_training",
    "_slow_conv2d_backward.output_mask",
    "_batch_norm_with_update_functional",
    "_native_batch_norm_legit.no_stats",
    "_ctc_loss.Tensor",  # lengths of given values (hint `data`)
    "_pack_padded_sequence",
    "norm.ScalarOpt_dtype",  # the dtype its ScalarType argument names: the sample's own
)
# their forward AD fails with PyTorch's own kernels too (a 0-dim result given a [1, 1] tangent), as
# `norm.Scalar`'s: a run judges it by the reference rerun (`not run`), the backward formula counts
THEIR_FORWARD_FAILS = ("norm.ScalarOpt_dtype",)


@pytest.mark.torch
def test_shipped_hints_make_samples_torchs_own_kernels_pass(real_yaml: RealYaml) -> None:
    import io
    import json
    import warnings

    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child import schema_child as child

    source = sample_source(real_yaml.inputs, [], list(HINTED))
    assert sorted(p.op for p in source.plans) == sorted(HINTED) and not source.not_verified
    for plan in source.plans:
        with warnings.catch_warnings():  # as in the child: torch's own deprecation notes are no failure
            warnings.simplefilter("ignore")
            at = child.Progress(io.StringIO())  # where the child is: written for its parent, unread here
            sent = OpSamples.from_json(json.loads(json.dumps(plan.to_json())))  # as the child reads it
            record = child.run_op(torch, sent, None, at)  # torch's own kernels
        backward = [c for c in record.checks if c.kind == "backward" and c.variant == "function"]
        passed = [c for c in backward if c.status == "passed"]  # a dtype the op rejects (complex lt_) is not run
        rejected = [c for c in backward if c.why.startswith("the op rejects the sample")]
        assert passed and len(passed) + len(rejected) == len(backward), (plan.op, backward)
        failed = [c for c in record.checks if c.status == "failed"]
        if plan.op in THEIR_FORWARD_FAILS:
            assert failed and {c.kind for c in failed} == {"forward"}, (plan.op, failed)
            continue
        assert not failed, (plan.op, record.checks)


@pytest.mark.torch
def test_shipped_skips_stating_a_reason_are_true_of_torchs_own_kernels() -> None:
    """Each ``skip`` of the shipped hints that states a reason of the fixed list (no dense CPU sample can check
    the op) is checked here: on dense CPU arguments valid otherwise, PyTorch's op returns a sparse, nested or
    mkldnn tensor, or rejects them saying which layout or backend it needs."""
    import warnings

    torch = pytest.importorskip("torch")
    aten, x = torch.ops.aten, torch.randn(2, 3, dtype=torch.float64)
    image, weight = torch.randn(1, 1, 3, 3, dtype=torch.float64), torch.randn(1, 1, 2, 2, dtype=torch.float64)
    sizes, strides, offsets = torch.tensor([[3], [3]]), torch.tensor([[1], [1]]), torch.tensor([0, 3])
    conv = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    returns = {  # op → a call whose result is not a dense strided tensor
        "_to_sparse": lambda: aten._to_sparse(x),
        "sparse_compressed_tensor": lambda: aten.sparse_compressed_tensor.comp_plain_value_size(
            torch.tensor([0, 1, 2]), torch.tensor([0, 1]), torch.ones(2), [2, 2], layout=torch.sparse_csr
        ),
        "_nested_tensor_from_mask": lambda: aten._nested_tensor_from_mask(
            torch.randn(2, 3, 4, dtype=torch.float64), torch.ones(2, 3, dtype=torch.bool)
        ),
        "_nested_from_padded": lambda: aten._nested_from_padded(
            torch.randn(2, 3, 4, dtype=torch.float64), torch.tensor([[3, 4], [2, 4]])
        ),
        "_nested_view_from_buffer": lambda: aten._nested_view_from_buffer(x.flatten(), sizes, strides, offsets),
        "_nested_view_from_buffer_copy": lambda: aten._nested_view_from_buffer_copy(
            x.flatten(), sizes, strides, offsets
        ),
        "to_mkldnn": lambda: aten.to_mkldnn(x.float()),
    }
    rejects = {  # op → (a call on dense CPU tensors, what its error says it needs)
        "values": (lambda: aten.values(x), "expected sparse tensor layout"),
        "values_copy": (lambda: aten.values_copy(x), "expected sparse tensor layout"),
        "_sparse_sum.dim": (lambda: aten._sparse_sum.dim(x, [0]), "SparseCPU: registered"),
        "_pin_memory": (lambda: aten._pin_memory(x), "Cannot access accelerator device"),
        "convolution_overrideable": (
            lambda: aten.convolution_overrideable(image, weight, None, *conv),
            "backend other than CPU/CUDA/MKLDNN",
        ),
        "convolution_backward_overrideable": (
            lambda: aten.convolution_backward_overrideable(weight, image, weight, *conv, [True, True, True]),
            "backend other than CPU/CUDA/MKLDNN",
        ),
    }
    skips = {e.op for e in load_hints([BUILTIN]).entries if e.skip and e.skip.startswith(REASONS[:4])}
    assert skips == set(returns) | set(rejects)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op, call in returns.items():
            result = call()
            assert result.is_nested or result.layout != torch.strided, op
        for call, says in rejects.values():
            with pytest.raises(RuntimeError, match=re.escape(says)):
                call()


def test_a_list_of_index_tensors_takes_its_hints_values_bound_and_dtype(real_yaml: RealYaml) -> None:
    (index,) = sample_source(real_yaml.inputs, [], ["_unsafe_index.Tensor"]).plans
    indices = _arg(index.samples[0], "indices")
    assert indices is not None
    assert (indices.kind, indices.shapes, indices.values, indices.high, indices.grad) == (
        "tensors",
        ((2,),),
        "index",
        3,
        False,
    )


def test_hints_keep_outputs_make_optional_arguments_present_and_pass_a_tensor_through(real_yaml: RealYaml) -> None:
    plans = {p.op: p for p in sample_source(real_yaml.inputs, [], ["native_group_norm", "_batch_norm_no_update",
                                                                     "_ctc_loss"]).plans}  # fmt: skip
    assert plans["native_group_norm"].outputs == (0,) and plans["native_group_norm"].forward_outputs == (0,)
    (only,) = plans["_batch_norm_no_update"].samples  # no sample without the running statistics (a crash)
    assert _arg(only, "running_mean") == ArgSample("running_mean", "tensor", (3,), grad=False)
    log_probs = _arg(plans["_ctc_loss"].samples[0], "log_probs")
    assert log_probs is not None and log_probs.through == "log_softmax" and log_probs.grad


def test_a_tensor_of_given_values(real_yaml: RealYaml) -> None:
    """``data``: a long tensor holding exactly the hint's integers (lengths an op checks), never differentiated."""
    (plan,) = sample_source(real_yaml.inputs, [], ["_pack_padded_sequence"]).plans
    lengths = _arg(plan.samples[0], "lengths")
    assert lengths == ArgSample("lengths", "tensor", (2,), grad=False, dtype="long", data=(3, 2))
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child import schema_child as child

    sent = [ArgSample.from_json(json.loads(json.dumps(a.to_json()))) for a in plan.samples[0]]
    made = child.make(torch, sent, torch.float64, 0)
    assert made["lengths"].tolist() == [3, 2] and made["lengths"].dtype == torch.long
