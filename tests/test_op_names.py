"""Ops are selected through the model's names (``OperatorName``), never by cutting their text (issue 37, item 2).

A dunder op keeps its underscores (``__and__``, not ``__and_``) and ``__iand__`` is its in-place
variant, in every room that selects ops: ``check --op``, gradcheck's selection, the OpInfo
variants handed to the child and a library's ``--op``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.check import CheckOptions
from vtgen_build.check.run import select_ops
from vtgen_build.emit.output_index import read_index
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.gradcheck.run import GradcheckOptions, _selected, op_variants
from vtgen_build.gradcheck.schema_run import library_ops
from vtgen_build.gradcheck.units import read_registrations
from vtgen_build.inputs.files import Inputs
from vtgen_build.model.schema import op_name, op_selection, resolve_ops
from vtgen_build.plan.request import BuildRequest

from .conftest import SAMPLE, CliRunner

NATIVE = """\
- func: __and__.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: and_kernel

- func: __iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
  variants: method
  dispatch:
    CPU: iand_kernel

- func: and_not(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: and_not_kernel
"""
DERIVATIVES = """\
- name: __and__.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad
  other: grad

- name: and_not(Tensor self, Tensor other) -> Tensor
  self: grad
  other: -grad
"""


def _inputs(tmp_path: Path) -> Inputs:
    (tmp_path / "native_functions.yaml").write_text(NATIVE)
    (tmp_path / "derivatives.yaml").write_text(DERIVATIVES)
    return Inputs(str(tmp_path / "native_functions.yaml"), str(tmp_path / "derivatives.yaml"),
                  str(SAMPLE / "tags.yaml"), "vtdunder")  # fmt: skip


def test_the_model_reads_a_dunder_name_whole() -> None:
    assert op_name("__and__.Tensor").name == "__and__"
    assert op_name("vtdunder::__iand__.Tensor").family == "__and__"
    assert op_name("__iand__.Tensor").inplace and not op_name("__and__.Tensor").inplace
    assert op_name("add_.Tensor").family == "add" and op_name("add.out").family == "add"
    assert op_variants(["__and__.Tensor", "__iand__.Tensor", "and_not"]) == {
        "__and__.Tensor": ["__and__", "function"],
        "__iand__.Tensor": ["__and__", "inplace"],
        "and_not": ["and_not", "function"],
    }


def test_op_selects_a_dunder_op_and_its_in_place_variant(tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate(_inputs(tmp_path), GenerateOptions(str(out), 1, BuildRequest("vtdunder")))
    index, regs = read_index(out), read_registrations(out)
    assert select_ops(index, op_selection(["__and__"], "vtdunder")) == ["__and__.Tensor"]
    assert select_ops(index, op_selection(["__iand__.Tensor"], "vtdunder")) == ["__iand__.Tensor"]
    with pytest.raises(VtgenError, match="--op __and_: no such op"):
        select_ops(index, op_selection(["__and_"], "vtdunder"))  # the name the old string cutting made
    for name in ("__and__", "vtdunder::__and__"):
        options = GradcheckOptions(CheckOptions(ops=op_selection([name], "vtdunder")))
        chosen = _selected(index, regs, options, {}, {})
        assert sorted({r.op for r in chosen}) == ["__and__.Tensor", "__iand__.Tensor"]
    selected = op_selection(["vtdunder::__and__"], "vtdunder")
    assert library_ops(selected, [r.op for r in regs]) == ["__and__.Tensor"]


def test_check_op_compiles_the_dunder_op(tmp_path: Path, run_cli: CliRunner) -> None:
    inputs = _inputs(tmp_path)
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives]
    args += ["--tags", inputs.tags, "--namespace", "vtdunder", "--out", str(tmp_path / "check")]
    result = run_cli("check", *args, "--op", "vtdunder::__and__")  # qualified as --library takes it
    assert result.code == 0, result.err
    assert "1 ops" in result.out and result.out.rstrip().endswith("OK, 0 errors"), result.out


DOT_AND_UNDERSCORE = """\
- func: foo.bar(Tensor self) -> Tensor
- func: foo_bar(Tensor self) -> Tensor
- func: foo_bar_2(Tensor self) -> Tensor
- func: vw.bar(Tensor(a) self) -> Tensor(a)
- func: vw_bar(Tensor(a) self) -> Tensor(a)
"""


def test_ops_differing_by_dot_and_underscore_get_kernels_of_their_own(run_cli: CliRunner, tmp_path: Path) -> None:
    """``foo.bar`` and ``foo_bar`` both spell ``foo_bar`` in C++: two same-named kernels (here of one
    signature) would not compile; the later one takes the first free ``_2``, ``_3``... (``foo_bar_2``
    is an op's own name, so ``foo_bar`` becomes ``foo_bar_3``)."""
    (tmp_path / "nf.yaml").write_text(DOT_AND_UNDERSCORE)
    entries = "".join(
        f"- name: {line.removeprefix('- func: ')}\n  self: grad * {n}\n"
        for n, line in enumerate(DOT_AND_UNDERSCORE.splitlines(), start=2)
    )
    (tmp_path / "d.yaml").write_text(entries)
    args = ["--native-functions", str(tmp_path / "nf.yaml"), "--derivatives", str(tmp_path / "d.yaml")]
    result = run_cli("generate", *args, "--namespace", "vtdot", "--out", str(tmp_path / "out"), "--shards", "1")
    assert result.code == 0, result.err
    autograd = (tmp_path / "out" / "VariableType_0.cpp").read_text()
    for op, kernel in [("foo.bar", "foo_bar"), ("foo_bar", "foo_bar_3"), ("foo_bar_2", "foo_bar_2")]:
        assert f'm.impl("{op}", TORCH_FN(VariableType::{kernel}));' in autograd
        assert f"at::Tensor {kernel}(c10::DispatchKeySet ks, const at::Tensor & self) {{" in autograd
    assert 'm.impl("vw.bar", TORCH_FN(VariableType::vw_bar));' in autograd
    assert 'm.impl("vw_bar", TORCH_FN(VariableType::vw_bar_2));' in autograd
    views = (tmp_path / "out" / "ADInplaceOrViewType_0.cpp").read_text()
    assert 'm.impl("vw.bar", TORCH_FN(ADInplaceOrView::vw_bar));' in views
    assert 'm.impl("vw_bar", TORCH_FN(ADInplaceOrView::vw_bar_2));' in views


def test_a_tensor_and_its_name_with_underscore_are_refused_at_the_op_line(run_cli: CliRunner, tmp_path: Path) -> None:
    """The kernel unpacks a tensor ``x`` into a local ``x_``: an argument ``x_`` beside it made the
    generated kernel not compile (found by the C++-vs-Python autograd tier test)."""
    (tmp_path / "nf.yaml").write_text(
        "- func: ok(Tensor a, Tensor b) -> Tensor\n- func: f(Tensor x, Tensor x_) -> Tensor\n"
    )
    (tmp_path / "d.yaml").write_text("- name: f(Tensor x, Tensor x_) -> Tensor\n  x: grad * x_\n  x_: grad * x\n")
    args = ["--native-functions", str(tmp_path / "nf.yaml"), "--derivatives", str(tmp_path / "d.yaml")]
    result = run_cli("generate", *args, "--namespace", "vtunpack", "--out", str(tmp_path / "out"))
    assert result.code != 0
    assert "nf.yaml:2: error: arguments 'x' and 'x_'" in result.err, result.err


def test_resolve_ops_is_one_rule() -> None:
    known = ["__and__.Tensor", "__iand__.Tensor", "and_not"]
    for name in ("__and__", "ns::__and__", "__and__.Tensor", "ns::__and__.Tensor"):
        assert resolve_ops(op_selection([name], "ns"), known, "missing") == ["__and__.Tensor"], name
    both = op_selection(["and_not", "ns::and_not", "__iand__"], "ns")
    assert resolve_ops(both, known, "x") == ["and_not", "__iand__.Tensor"]
    with pytest.raises(VtgenError, match=r"^error: --op other::and_not: the ops are in namespace 'ns', not 'other'$"):
        op_selection(["ns::and_not", "other::and_not"], "ns")
    with pytest.raises(VtgenError, match=r"^error: --op ns::__and_: missing; did you mean 'ns::__and__'\?$"):
        resolve_ops(op_selection(["ns::__and_"], "ns"), known, "missing")


@pytest.mark.parametrize(
    ("extra", "missing"),
    [
        ([], "no such op has an Autograd kernel"),
        pytest.param(["--gradcheck"], "no such op has an Autograd kernel", marks=pytest.mark.slow),  # finds torch
        (["--gradcheck", "--library", "lib.so"], "the library has no differentiable op of that name"),
        (
            ["--gradcheck", "--library", "lib.so", "--tier", "python"],
            "the library has no differentiable op of that name",
        ),
    ],
    ids=["check", "gradcheck", "library", "library-python-tier"],
)
def test_every_op_option_resolves_names_by_one_rule(
    tmp_path: Path, run_cli: CliRunner, extra: list[str], missing: str
) -> None:
    """``check --op``, ``check --gradcheck --op`` and ``--library --op`` (either tier): ``ns::op`` or ``op`` by
    the one rule (``resolve_ops``), refused alike; each says only what it looked for (``check --op ns::op`` was
    refused as no such op, while the other two took it; the Python tier dropped a name it did not know)."""
    inputs = _inputs(tmp_path)
    (tmp_path / "lib.so").write_bytes(b"")  # never loaded: the names are checked first
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives, "--tags"]
    args += [str(inputs.tags), "--namespace", "vtdunder", "--out", str(tmp_path / "out")]
    extra = [str(tmp_path / e) if e == "lib.so" else e for e in extra]
    result = run_cli("check", *args, *extra, "--op", "vtdunder::and_nut", "--op", "and_not")
    assert result.code == 1
    assert f"error: --op vtdunder::and_nut: {missing}; did you mean 'vtdunder::and_not'?" in result.err, result.err
    result = run_cli("check", *args, *extra, "--op", "other::and_not")
    assert result.code == 1
    assert "error: --op other::and_not: the ops are in namespace 'vtdunder', not 'other'" in result.err, result.err


@pytest.mark.parametrize(
    "extra",
    [[], ["--gradcheck", "--library", "lib.so"], ["--gradcheck", "--library", "lib.so", "--tier", "python"]],
    ids=["check", "library", "library-python-tier"],
)
def test_every_op_option_refuses_another_namespace_first(tmp_path: Path, run_cli: CliRunner, extra: list[str]) -> None:
    """The front end reads the ``--op`` names once (``op_selection``), before anything runs: a name in
    another namespace is refused by every command alike, first of the names' problems (the Python tier
    cut off only its own namespace's prefix, and took ``other::and_not`` for ``and_not``)."""
    inputs = _inputs(tmp_path)
    (tmp_path / "lib.so").write_bytes(b"")  # never loaded: the names are read first
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives, "--tags"]
    args += [str(inputs.tags), "--namespace", "vtdunder", "--out", str(tmp_path / "out")]
    extra = [str(tmp_path / e) if e == "lib.so" else e for e in extra]
    result = run_cli("check", *args, *extra, "--op", "vtdunder::and_nut", "--op", "other::and_not")
    assert result.code == 1
    assert "error: --op other::and_not: the ops are in namespace 'vtdunder', not 'other'" in result.err, result.err
    assert not (tmp_path / "out").exists()  # refused before generating


def test_the_python_tier_selects_families_by_the_one_rule(tmp_path: Path) -> None:
    """The Python tier (PyTorch's yaml) resolves ``--op`` names by ``resolve_ops`` among the ops whose family has
    a derivatives.yaml entry, then checks their families: an in-place variant or a family's own name selects it;
    a name it does not know is refused with a did-you-mean (it was dropped: the run checked nothing, passing)."""
    from vtgen_build.gradcheck.python_tier import selected_families
    from vtgen_build.inputs.load import load_entries, read_text

    inputs = _inputs(tmp_path)
    entries, native = load_entries(inputs.derivatives), read_text(inputs.native_functions)
    for name in ("__iand__.Tensor", "__and__", "vtdunder::__iand__"):
        assert selected_families(op_selection([name], "vtdunder"), entries, native) == {"__and__"}, name
    with pytest.raises(VtgenError) as refused:
        selected_families(op_selection(["vtdunder::and_nut"], "vtdunder"), entries, native)
    assert refused.value.message == (
        "--op vtdunder::and_nut: no such op has a derivatives.yaml entry; did you mean 'vtdunder::and_not'?"
    )
