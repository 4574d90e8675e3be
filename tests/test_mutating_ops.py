"""Mutating ops that return nothing (``op_(Tensor(a!) self) -> ()``): planned like in-place ops.

Plans, ``inspect --op``, the errors for ambiguous formulas, golden kernels, and a compile of the
output against the stub headers.  The runtime side (gradcheck through ``x.clone()``, the leaf and
"modified by an inplace operation" errors, opcheck, a wrong formula failing gradcheck) runs on
the shared real-torch build: ``tests/packages/op_library`` (cube_, mix_) via tests/test_op_library.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.emit.inplace_or_view import inplace_or_view_definition
from vtgen_build.emit.kernel import kernel_definition
from vtgen_build.inputs.files import Inputs
from vtgen_build.model import load_model
from vtgen_build.plan.inplace_or_view import plan_inplace_or_view
from vtgen_build.plan.kernel import KernelPlan, Plan, build_plan
from vtgen_build.plan.policy import load_policy

from .conftest import CliRunner, YamlWriter

GOLDEN = Path(__file__).parent / "golden"

NATIVE = """
- func: softsign(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: softsign

- func: softsign_(Tensor(a!) self) -> ()
  dispatch:
    CompositeExplicitAutograd: softsign_

- func: mix_(Tensor(a!) self, Tensor(b!) other, float alpha) -> ()
  dispatch:
    CompositeExplicitAutograd: mix_

- func: scale_all_(Tensor(a!)[] tensors, float factor) -> ()
  dispatch:
    CompositeExplicitAutograd: scale_all_

- func: shrink_(Tensor(a!) self, float lambd) -> ()
  dispatch:
    CompositeExplicitAutograd: shrink_
"""

DERIVATIVES = """
- name: softsign(Tensor self) -> Tensor
  self: grad / (1 + self.abs()).pow(2)
  result: auto_element_wise

- name: mix_(Tensor(a!) self, Tensor(b!) other, float alpha) -> ()
  self: grads[0] + grads[1] * other
  other: grads[0] * alpha + grads[1] * self

- name: scale_all_(Tensor(a!)[] tensors, float factor) -> ()
  tensors: scale_all_backward(grads, factor)

- name: shrink_(Tensor(a!) self, float lambd) -> ()
  self: grad * (result != 0)
  result: self_t * (result != 0)
"""


def _inputs(tmp_yaml: YamlWriter, native: str = NATIVE, derivatives: str = DERIVATIVES) -> Inputs:
    return Inputs(tmp_yaml("native_functions.yaml", native), tmp_yaml("derivatives.yaml", derivatives), None, "myops")


def _plan(inputs: Inputs) -> Plan:
    return build_plan(load_model(inputs), load_policy())


def _kernel(plan: Plan, op: str) -> KernelPlan:
    (k,) = plan.by_op(op)
    return k


def test_written_tensors_are_the_outputs(tmp_yaml: YamlWriter) -> None:
    plan = _plan(_inputs(tmp_yaml))
    mix = _kernel(plan, "mix_")
    assert mix.requires_derivative and mix.node == "MixBackward0" and mix.modifies_arguments
    assert [v.name for v in mix.differentiable_outputs] == ["self", "other"] == list(mix.mutated)
    assert mix.guard == "at::AutoDispatchBelowAutograd"  # ADInplaceOrView already ran
    borrowed = _kernel(plan, "softsign_")  # no entry of its own: the functional sibling's formulas
    assert borrowed.node == "SoftsignBackward0" and borrowed.info is not None
    assert str(borrowed.info.func.name) == "softsign" and borrowed.info.forward  # JVP carried over
    assert [v.name for v in _kernel(plan, "scale_all_").differentiable_outputs] == ["tensors"]
    shrink = _kernel(plan, "shrink_").info  # its own forward formula: `result` is self after the op,
    # written out of place; the kernel copies it into self's tangent when self already has one
    written = "self_t * (self_p != 0)"
    assert (
        shrink is not None
        and shrink.forward[0].formula == f"self_t_raw.defined() ? self_t_raw.copy_({written}) : {written}"
    )
    bumps = {p.op: p.bumped for p in plan_inplace_or_view(plan, load_policy())}
    assert bumps == {"softsign_": ("self",), "mix_": ("self", "other"), "scale_all_": ("tensors",)} | {
        "shrink_": ("self",)
    }


def test_without_a_formula_backward_raises(tmp_yaml: YamlWriter) -> None:
    """PyTorch's boxed fallback would rebase no written tensor: our kernel rebases a NotImplemented Node."""
    native = NATIVE + "\n- func: fill_(Tensor(a!) self, float value) -> ()\n  dispatch:\n    CPU: fill_\n"
    fill = _kernel(_plan(_inputs(tmp_yaml, native)), "fill_")
    assert (fill.kind, fill.node, fill.mutated) == ("kernel", "NotImplemented", ("self",))
    assert 'grad_fn = c10::make_intrusive<NotImplemented>("fill_");' in kernel_definition(fill)
    assert "rebase_history(flatten_tensor_args( self ), grad_fn);" in kernel_definition(fill)


def test_aten_keeps_pytorchs_treatment(tmp_yaml: YamlWriter) -> None:
    """aten's own `-> ()` ops are not differentiable unless they are in-place foreach ops."""
    native = "- func: fill_both_(Tensor(a!) self, Tensor(b!) other) -> ()\n  dispatch:\n    CPU: fill_both_\n"
    plan = _plan(Inputs(tmp_yaml("n.yaml", native), tmp_yaml("d.yaml", "[]\n")))
    assert not _kernel(plan, "fill_both_").requires_derivative
    assert plan_inplace_or_view(plan, load_policy()) == ()


def test_inspect_says_the_op_mutates(tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    inputs = _inputs(tmp_yaml)
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives, "--namespace", "myops"]
    done = run_cli("inspect", *args, "--op", "mix_")
    assert done.code == 0, done.err
    assert "requires derivative: yes" in done.out
    assert "mutates: self, other (returns nothing; as an in-place op: history rebased on each" in done.out


@pytest.mark.parametrize(
    ("native", "derivatives", "line", "message"),
    [
        (NATIVE, DERIVATIVES.replace("grads[1] * self", "grads[1] * result"), 7, "'result' is ambiguous"),
        (
            NATIVE + "\n- func: mix(Tensor self, Tensor other, float alpha) -> (Tensor, Tensor)\n",
            DERIVATIVES.replace("mix_(Tensor(a!) self, Tensor(b!) other", "mix(Tensor self, Tensor other").replace(
                "float alpha) -> ()", "float alpha) -> (Tensor, Tensor)"
            ),
            9,
            "'mix_' returns nothing and writes 2 tensors: it needs a derivatives.yaml entry of its own",
        ),
        (
            NATIVE,
            DERIVATIVES.replace("scale_all_backward(grads, factor)", "grads[0] * tensors[0]"),
            10,
            "the formula reads 'tensors', a tensor list 'scale_all_' overwrites",
        ),
        (
            NATIVE,
            DERIVATIVES.replace(" * self\n", " * self\n  result: self_t\n"),
            8,
            "'result' is not an argument or output of 'mix_'",
        ),
        (
            NATIVE + "\n- func: scale_into(Tensor x, Tensor(a!) y) -> ()\n",
            DERIVATIVES + "\n- name: scale_into(Tensor x, Tensor(a!) y) -> ()\n  x: grad\n  result: x_t\n",
            18,
            "a forward formula of a `-> ()` op is supported for an op named '<name>_' that writes only 'self'",
        ),
    ],
    ids=["result-of-several", "borrowed-by-several", "old-list-value", "forward-of-several", "forward-not-self"],
)
def test_ambiguous_formulas_are_errors_at_their_line(
    tmp_yaml: YamlWriter, native: str, derivatives: str, line: int, message: str
) -> None:
    inputs = _inputs(tmp_yaml, native, derivatives)
    with pytest.raises(VtgenError) as raised:
        _plan(inputs)
    error = raised.value
    assert message in error.message
    assert error.location is not None and error.location.line == line, (error.location, error.message)


@pytest.mark.parametrize("op", ["softsign_", "mix_", "scale_all_", "shrink_"])
def test_golden(tmp_yaml: YamlWriter, op: str, update_golden: bool) -> None:
    plan = _plan(_inputs(tmp_yaml))
    (iov,) = [p for p in plan_inplace_or_view(plan, load_policy()) if p.op == op]
    text = f"{kernel_definition(_kernel(plan, op))}\n\n{inplace_or_view_definition(iov)}\n"
    path = GOLDEN / f"mutating_{op.rstrip('_')}.txt"
    if update_golden:
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run pytest with --update-golden"
    assert text == path.read_text(), f"{path.name} differs: review, then rerun with --update-golden"


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None, reason="no C++ compiler")
def test_output_compiles_against_the_stubs(tmp_yaml: YamlWriter, tmp_path: Path, run_cli: CliRunner) -> None:
    helper = tmp_path / "include" / "myops" / "helpers.h"
    helper.parent.mkdir(parents=True)
    helper.write_text(
        "#pragma once\n#include <ATen/ATen.h>\n"
        "inline std::vector<at::Tensor> scale_all_backward(const std::vector<at::Tensor>& g, double f) {\n"
        "  std::vector<at::Tensor> r;\n  for (const auto& t : g) r.push_back(t * f);\n  return r;\n}\n"
    )
    inputs = _inputs(tmp_yaml)
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives, "--namespace", "myops"]
    args += ["--manual-header", "myops/helpers.h", "-I", str(tmp_path / "include"), "--shards", "1", "--no-cache"]
    done = run_cli("check", *args, "--out", str(tmp_path / "out"))
    assert done.code == 0, done.out + done.err
    assert "OK, 0 errors" in done.out


def test_inplace_tag_only_for_ops_writing_their_first_argument(tmp_yaml: YamlWriter) -> None:
    """torch.compile functionalizes an `inplace`-tagged op as writing its first argument only."""
    tags = tmp_yaml("tags.yaml", "- tag: inplace\n  desc: Writes its first argument.\n")
    inputs = Inputs(tmp_yaml("n.yaml", NATIVE), tmp_yaml("d.yaml", DERIVATIVES), tags, "myops")
    tagged = {str(f.name) for f in load_model(inputs).native_functions if "inplace" in f.tags}
    assert tagged == {"softsign_", "scale_all_", "shrink_"}  # not mix_, which writes other too
