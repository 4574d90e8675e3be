"""``vtgen-build check``: real compiler runs on the sample project and on (copies of) PyTorch's yaml."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from vtgen_build.check.run import STATE

from .conftest import SAMPLE, CliResult, CliRunner, RealYaml, installed_torch_include, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")


def _sample_args(tmp: Path, out: Path, derivatives: Path | None = None) -> list[str]:
    include = ["-I", str(SAMPLE / "include")]
    return ["check", *sample_inputs(SAMPLE, derivatives), *include, "--shards", "2", "--out", str(out)]


def _edited(src: Path, dst: Path, old: str, new: str) -> int:
    """Copy ``src`` to ``dst`` with ``old`` replaced once by ``new``; the 1-based line of the edit."""
    text = src.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    dst.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def _located(result: CliResult, path: Path, line: int) -> bool:
    """An ``error:`` reported at ``path:line`` (relative or absolute spelling)."""
    pattern = rf"(^|/){re.escape(path.name)}:{line}:(\d+:)? (fatal )?error:"
    return re.search(pattern, result.err, re.M) is not None


# -- the sample project ------------------------------------------------------------------------
# Forward-mode code calls helpers that PyTorch declares in FunctionsManual.h; the sample's
# helpers.h does not declare them (yet), so its forward formulas do not compile.


def _backward_only(tmp_path: Path) -> Path:
    """The sample's derivatives.yaml without its forward formulas (``result:`` / ``values:``)."""
    text = (SAMPLE / "derivatives.yaml").read_text(encoding="utf-8")
    path = tmp_path / "derivatives.yaml"
    path.write_text(re.sub(r"^  (result|values): .*\n", "", text, flags=re.M), encoding="utf-8")
    return path


def test_sample_project_checks_clean(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli(*_sample_args(tmp_path, tmp_path / "check"))
    assert result.code == 0, result.err[-3000:]
    assert "OK, 0 errors" in result.out
    # every emitted unit, one plain line each (not a terminal): 2 shards each of VariableType,
    # Functions and ADInplaceOrViewType, RegisterSchema.cpp, the CPU, CUDA, Meta and
    # CompositeExplicitAutograd registrations, RegisterFunctionalize.cpp and AOTIShims.cpp
    assert len(re.findall(r"^\[\d+/13\] \S+: ok", result.out, re.M)) == 13


def test_broken_formula_is_reported_at_its_yaml_line(run_cli: CliRunner, tmp_path: Path) -> None:
    derivatives = tmp_path / "broken.yaml"
    line = _edited(
        _backward_only(tmp_path),
        derivatives,
        "stack_mean_backward(grad, dim, tensors.size())",
        "stack_mean_backward(grad, dim, tensors.sizee())",
    )
    result = run_cli(*_sample_args(tmp_path, tmp_path / "check", derivatives))
    assert result.code == 1
    assert _located(result, derivatives, line), result.err[-3000:]
    assert "sizee" in result.err
    assert re.search(r"^failing ops: stack_mean$", result.err, re.M), result.err[-1000:]
    # the check build carries #line directives; a normal generate never writes absolute paths
    units = "".join(p.read_text() for p in (tmp_path / "check").glob("Functions_*.cpp"))
    assert f'#line {line} "{derivatives}"' in units


def test_broken_forward_formula_is_reported_at_its_yaml_line(run_cli: CliRunner, tmp_path: Path) -> None:
    derivatives = tmp_path / "broken.yaml"
    old = "  result: self_t + maybe_multiply(other_t, alpha)"
    line = _edited(SAMPLE / "derivatives.yaml", derivatives, old, old.replace("self_t +", "self_t.sym_sizess() +"))
    result = run_cli(*_sample_args(tmp_path, tmp_path / "check", derivatives))
    assert result.code == 1
    assert f"{derivatives}:{line}:" in result.err, result.err[-3000:]
    assert "sym_sizess" in result.err


def test_op_compiles_one_small_unit(run_cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "check"
    args = _sample_args(tmp_path, out)
    assert run_cli(*args, "--op", "stack_mean").code == 0  # generates, then checks the op alone
    result = run_cli(*args, "--op", "stack_mean", "--op", "soft_quantize")
    assert result.code == 0, result.err[-3000:]
    assert re.search(r"^\[1/1\] ops\.cpp: ok", result.out, re.M), result.out
    assert "2 ops" in result.out
    unit = (out / ".vtgen-check" / "ops.cpp").read_text()
    assert "StackMeanBackward0::apply" in unit and "SoftQuantizeBackward0::apply" in unit
    assert "TopkAbsBackward0::apply" not in unit


def test_unknown_op_is_an_error_with_a_suggestion(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli(*_sample_args(tmp_path, tmp_path / "check"), "--op", "stack_maen")
    assert result.code == 1
    assert "stack_mean" in result.err


def test_changed_checks_only_the_edited_op(run_cli: CliRunner, tmp_path: Path) -> None:
    original = _backward_only(tmp_path)
    derivatives = tmp_path / "edited.yaml"
    shutil.copy(original, derivatives)
    out = tmp_path / "check"
    args = _sample_args(tmp_path, out, derivatives)
    first = run_cli(*args, "--changed")  # no state yet: everything
    assert first.code == 0, first.err[-3000:]
    assert (out / STATE).is_file()
    assert "no op changed" in run_cli(*args, "--changed").out
    _edited(
        original,
        derivatives,
        "soft_quantize_backward(grad, self, scale, bits)",
        "soft_quantize_backward(grad * 2, self, scale, bits)",
    )
    again = run_cli(*args, "--changed")
    assert again.code == 0, again.err[-3000:]
    assert "[1/1] ops.cpp: ok" in again.out and "1 ops" in again.out
    assert "no op changed" in run_cli(*args, "--changed").out


# -- mistakes in a copy of PyTorch's derivatives.yaml ------------------------------------------
@dataclass(frozen=True)
class Mistake:
    what: str
    entry: str  # the `- name:` line the edit is in
    old: str
    new: str
    op: str  # what --op selects


COMPILE_MISTAKES = [
    Mistake("misspelt method", "sin(Tensor self)", "self.cos().conj()", "self.coss().conj()", "sin"),
    Mistake("unknown variable", "cos(Tensor self)", "-self.sin().conj()", "-selff.sin().conj()", "cos"),
    Mistake(
        "too few arguments to a helper",
        "sum.dim_IntList(",
        "sum_backward(grad, self.sym_sizes(), dim, keepdim)",
        "sum_backward(grad, self.sym_sizes(), dim)",
        "sum.dim_IntList",
    ),
    Mistake(
        "wrong argument type to a method", "tan(Tensor self)", "result.pow(2)", "result.pow(self.sym_sizes())", "tan"
    ),
    Mistake("formula of the wrong type", "sinh(Tensor self)", "grad * self.cosh().conj()", "self.cosh().dim()", "sinh"),
    Mistake(
        "Tensor where sizes are expected (at:: op)",
        "expand(Tensor(a) self",
        "at::sum_to(grad, self.sym_sizes())",
        "at::sum_to(grad, self)",
        "expand",
    ),
    Mistake(
        "at:: function that does not exist", "floor(Tensor self)", "zeros_like(grad)", "at::zeros_likee(grad)", "floor"
    ),
    Mistake("too many arguments to a method", "neg(Tensor self)", "grad.neg()", "grad.neg(1)", "neg"),
    Mistake(
        "Tensor where a Scalar is expected",
        "mm(Tensor self",
        "self.sym_strides(), self.layout(), 1)",
        "self.sym_strides(), self.layout(), grad)",
        "mm",
    ),
    Mistake(
        "a saved output that does not exist", "exp(Tensor self)", "grad * result.conj()", "grad * result1.conj()", "exp"
    ),
    Mistake(
        "misspelt variable in a helper call",
        "sigmoid(Tensor self)",
        "sigmoid_backward(grad, result)",
        "sigmoid_backward(grad, results)",
        "sigmoid",
    ),
    Mistake("too few arguments to a method", "t(Tensor(a) self)", "self: grad.t()", "self: grad.transpose(0)", "t"),
    Mistake(
        "arguments swapped",
        "relu(Tensor self)",
        "threshold_backward(grad, result, 0)",
        "threshold_backward(grad, 0, result)",
        "relu",
    ),
    Mistake(
        "method named without a call",
        "cumsum(Tensor self",
        "grad.to(self.scalar_type())",
        "grad.to(self.scalar_type)",
        "cumsum",
    ),
    Mistake(
        "too few arguments to a binary helper",
        "mul.Tensor(",
        "mul_tensor_backward(grad, other, self.scalar_type())",
        "mul_tensor_backward(grad, other)",
        "mul.Tensor",
    ),
]

GENERATE_MISTAKES = [
    Mistake("typo in a schema type", "sin(Tensor self)", "- name: sin(Tensor self)", "- name: sin(Tensr self)", ""),
    Mistake(
        "sizes() where the formula must stay symbolic",
        "abs(Tensor self)",
        "self: grad * self.sgn()",
        "self: grad.expand(self.sizes())",
        "",
    ),
    Mistake(
        "gradient for an input that does not exist",
        "sqrt(Tensor self)",
        "  self: grad / (2 * result.conj())",
        "  selff: grad / (2 * result.conj())",
        "",
    ),
    Mistake(
        "schema matching no operator",
        "tanh(Tensor self)",
        "- name: tanh(Tensor self)",
        "- name: tanh(Tensor self, int dim)",
        "",
    ),
]


def _apply(text: str, mistakes: list[Mistake]) -> tuple[str, dict[str, int]]:
    """``text`` with every mistake made, and the 1-based line of each edit."""
    lines = text.split("\n")
    where: dict[str, int] = {}
    for m in mistakes:
        start = next(i for i, line in enumerate(lines) if line.startswith(f"- name: {m.entry}"))
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("- name:")), len(lines))
        hits = [i for i in range(start, end) if m.old in lines[i]]
        assert len(hits) == 1, m
        lines[hits[0]] = lines[hits[0]].replace(m.old, m.new)
        where[m.what] = hits[0] + 1
    return "\n".join(lines), where


def _real_args(real_yaml: RealYaml, derivatives: Path, out: Path) -> list[str]:
    return [
        "check",
        "--pytorch-root",
        str(real_yaml.torchgen_dir),
        "--derivatives",
        str(derivatives),
        "--out",
        str(out),
    ]


def test_mistakes_in_real_formulas_are_located(run_cli: CliRunner, real_yaml: RealYaml, tmp_path: Path) -> None:
    """Fifteen realistic mistakes, one per op, in one check of those ops: each at its yaml line."""
    derivatives = tmp_path / "derivatives.yaml"
    text, where = _apply(real_yaml.derivatives.read_text(encoding="utf-8"), COMPILE_MISTAKES)
    derivatives.write_text(text, encoding="utf-8")
    ops = [a for m in COMPILE_MISTAKES for a in ("--op", m.op)]
    result = run_cli(*_real_args(real_yaml, derivatives, tmp_path / "check"), *ops)
    assert result.code == 1
    missed = [m.what for m in COMPILE_MISTAKES if not _located(result, derivatives, where[m.what])]
    assert not missed, f"not reported at their yaml line: {missed}\n{result.err[-4000:]}"
    failing = re.search(r"^failing ops: (.*)$", result.err, re.M)
    assert failing is not None
    named = set(failing.group(1).split(", "))
    assert {"sin", "cos", "sum.dim_IntList", "tan", "sinh", "exp", "mul.Tensor"} <= named


@pytest.mark.parametrize("mistake", GENERATE_MISTAKES, ids=lambda m: m.what)
def test_mistakes_caught_before_compiling(
    run_cli: CliRunner, real_yaml: RealYaml, tmp_path: Path, mistake: Mistake
) -> None:
    derivatives = tmp_path / "derivatives.yaml"
    text, where = _apply(real_yaml.derivatives.read_text(encoding="utf-8"), [mistake])
    derivatives.write_text(text, encoding="utf-8")
    result = run_cli(*_real_args(real_yaml, derivatives, tmp_path / "check"))
    assert result.code == 1
    assert re.search(rf"derivatives\.yaml:{where[mistake.what]}: error:", result.err), result.err[-2000:]


# -- the whole real output ---------------------------------------------------------------------
@pytest.mark.slow
def test_whole_real_output_compiles_against_the_stubs(run_cli: CliRunner, real_yaml: RealYaml, tmp_path: Path) -> None:
    """Every VariableType and Functions shard of PyTorch 2.13's yaml, with its real FunctionsManual.h."""
    result = run_cli("check", "--pytorch-root", str(real_yaml.torchgen_dir), "--out", str(tmp_path / "check"))
    assert result.code == 0, result.err[-6000:]
    # 10 shards each of VariableType, Functions and ADInplaceOrViewType and RegisterSchema.cpp; no
    # RegisterFunctionalize.cpp or AOTIShims.cpp: there is nothing in them for aten's operators
    # (PyTorch functionalizes its own out= ops and generates its own C shims)
    assert "31 translation units" in result.out and "OK, 0 errors" in result.out
    assert not (tmp_path / "check" / "RegisterFunctionalize.cpp").exists()


@pytest.mark.slow
@pytest.mark.torch
def test_torch_include_checks_against_the_real_headers(run_cli: CliRunner, real_yaml: RealYaml, tmp_path: Path) -> None:
    """Kernels and Nodes from several shards in one unit, against the wheel's own headers (~30 s)."""
    ops = [
        "sin",
        "mul.Tensor",
        "add_.Tensor",
        "cat",
        "sum.dim_IntList",
        "index.Tensor",
        "max.dim",
        "addmm",
        "_linalg_eigh",
        "convolution",
        "as_strided_",
    ]
    args = [
        "check",
        "--pytorch-root",
        str(real_yaml.torchgen_dir),
        "--out",
        str(tmp_path / "check"),
        "--torch-include",
        str(installed_torch_include()),
    ]
    result = run_cli(*args, *(a for op in ops for a in ("--op", op)))
    assert result.code == 0, result.err[-6000:]
    unit = (tmp_path / "check" / ".vtgen-check" / "ops.cpp").read_text()
    assert len(set(re.findall(r'^#line \d+ ".*/(\w+_\d+)\.cpp"$', unit, re.M))) >= 4  # from several shards


@pytest.mark.slow  # compiles the sample twice (~20 s each on a busy two-core machine)
def test_changed_checks_again_when_a_stub_header_changes(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--changed`` once answered "no op changed" after the headers were upgraded in place (its state
    key held the compiler and flags, not the headers): an edit now checks again (a touch too: the next
    test).  A copy of the stub headers stands in for the shipped ones (a pip upgrade rewrites them)."""
    from vtgen_build.compile import includes

    headers = Path(shutil.copytree(includes.STUB_INCLUDE, tmp_path / "include"))
    monkeypatch.setattr(includes, "STUB_INCLUDE", headers)
    args = [*_sample_args(tmp_path, tmp_path / "check"), "--changed"]
    first = run_cli(*args)
    assert first.code == 0, first.err[-3000:]
    assert "no op changed" in run_cli(*args).out
    header = headers / "ATen" / "ATen.h"  # upgraded: the next release breaks every unit
    header.write_text(header.read_text() + "\n#error the upgraded header breaks the build\n")
    broken = run_cli(*args)
    assert broken.code == 1 and "the upgraded header breaks the build" in broken.err, broken.out


def test_the_changed_state_key_covers_the_torch_include_headers(tmp_path: Path) -> None:
    """The same for ``--torch-include``: a touched or edited header there (an in-place torch upgrade) is a
    new key, so every op is checked again (compiling the sample against a real torch takes minutes: the
    key is what this shows)."""
    from vtgen_build.check.run import CheckOptions, _settings, _settings_digest

    include = tmp_path / "torch-include"
    (include / "ATen" / "core").mkdir(parents=True)
    (include / "ATen" / "core" / "Tensor.h").write_text("#pragma once\n")
    out = tmp_path / "out"
    (out / "vtgen_decls").mkdir(parents=True)
    (out / "vtgen_decls" / "Functions.inc").write_text("// aten\n")
    options = CheckOptions(torch_include=str(include))

    def key() -> str:
        return _settings_digest(out, _settings(out, options, "2.13"), (), options)

    first = key()
    assert key() == first
    header = include / "ATen" / "core" / "Tensor.h"
    os.utime(header, ns=(header.stat().st_atime_ns, header.stat().st_mtime_ns + 10**9))
    touched = key()
    assert touched != first
    (include / "ATen" / "new.h").write_text("")
    assert key() != touched
    grown = key()
    before = header.stat()
    header.write_text("#pragma ONCE\n")  # other content, the same size and (set back) the same mtime
    os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (header.stat().st_size, header.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert key() != grown
