"""Malformed inputs: each is reported as exactly ``file:line: error: message``, never as a traceback.

Every case runs the real command line (``vtgen-build inspect``) on three small files, two of
them valid, and compares the whole of stderr.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vtgen_build.base.errors import Location, VtgenError
from vtgen_build.inputs.load import load_text
from vtgen_build.model import build_model

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

TAGS = """\
- tag: core
  desc: A core ATen op.
- tag: pointwise
  desc: A pointwise op.
"""

GOOD_NATIVE = """\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU, CUDA: add
  tags: [core, pointwise]

- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  variants: function, method
  dispatch:
    CPU: max
"""

GOOD_DERIVATIVES = """\
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: handle_r_to_c(self.scalar_type(), grad)
  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha.conj()))
  result: self_t + maybe_multiply(other_t, alpha)

- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)
  values: auto_linear
  output_differentiability: [True, False]
"""

ADD = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
MAX = "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"


@dataclass(frozen=True)
class Case:
    """``text`` replaces one input file; the error must be ``that file:line: error: message``."""

    id: str
    file: str  # "native", "derivatives" or "tags"
    text: str
    line: int
    message: str


NATIVE_CASES = [
    Case(
        "bad-type",
        "native",
        "- func: add(Tensor self, Tnsor other) -> Tensor\n",
        1,
        "malformed schema: unknown type 'Tnsor'; did you mean 'Tensor'? (column 18)",
    ),
    Case(
        "unbalanced-parens",
        "native",
        "- func: add(Tensor self -> Tensor\n",
        1,
        "malformed schema: unbalanced parentheses in 'add(Tensor self -> Tensor' (column 4)",
    ),
    Case(
        "missing-arrow",
        "native",
        "- func: add(Tensor self) Tensor\n",
        1,
        "malformed schema: expected ' -> ' after the arguments in 'add(Tensor self) Tensor' (column 17)",
    ),
    Case(
        "bad-type-after-namespace",
        "native",
        "- func: aten::add(Tensor self, Tnsor other) -> Tensor\n",
        1,
        "malformed schema: unknown type 'Tnsor'; did you mean 'Tensor'? (column 24)",
    ),
    Case(
        "comma-without-space",
        "native",
        "- func: add(Tensor self,Tensor other) -> Tensor\n",
        1,
        "malformed schema: expected ', ' between arguments (column 16)",
    ),
    Case(
        "bad-return-in-tuple",
        "native",
        "- func: max(Tensor self) -> (Tensor values, Tensr indices)\n",
        1,
        "malformed schema: unknown type 'Tensr'; did you mean 'Tensor'? (column 37)",
    ),
    Case(
        "unknown-key",
        "native",
        "- func: add(Tensor self) -> Tensor\n  variant: method\n",
        2,
        "unknown key 'variant'; did you mean 'variants'?",
    ),
    Case(
        "unknown-dispatch-key",
        "native",
        "- func: add(Tensor self) -> Tensor\n  dispatch:\n    CPU, CUDB: add\n",
        3,
        "unknown dispatch key 'CUDB'; did you mean 'CUDA'?",
    ),
    Case(
        "unknown-tag",
        "native",
        "- func: add(Tensor self) -> Tensor\n  tags: [core, pointwis]\n",
        2,
        "unknown tag 'pointwis'; did you mean 'pointwise'?",
    ),
    Case(
        "duplicate-entry",
        "native",
        "- func: add(Tensor self) -> Tensor\n\n- func: add(Tensor self) -> Tensor\n",
        3,
        "duplicate entry for 'aten::add' (first at line 1)",
    ),
    Case(
        "duplicate-yaml-key",
        "native",
        "- func: add(Tensor self) -> Tensor\n  variants: function\n  variants: method\n",
        3,
        "duplicate key 'variants' (first at line 2)",
    ),
    Case(
        "invalid-yaml",
        "native",
        "- func: add(Tensor self) -> Tensor\n  variants: [function\n",
        3,
        "invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 2)",
    ),
    Case(
        "tab-indentation",
        "native",
        "- func: add(Tensor self) -> Tensor\n\tvariants: function\n",
        2,
        "invalid YAML: found a tab character that violates indentation (while scanning a plain scalar at line 1)",
    ),
    Case(
        "top-level-not-a-list",
        "native",
        "func: add(Tensor self) -> Tensor\n",
        1,
        "expected a list of entries at the top level",
    ),
    Case(
        "entry-not-a-mapping",
        "native",
        "- func: add(Tensor self) -> Tensor\n- just text\n",
        2,
        "expected each entry to be a mapping ('- key: value')",
    ),
    Case(
        "missing-func",
        "native",
        "- func: add(Tensor self) -> Tensor\n\n- variants: function\n  dispatch:\n    CPU: foo\n",
        3,
        "missing required key 'func'",
    ),
    Case(
        "func-not-a-string",
        "native",
        "- func: [add]\n",
        1,
        "'func' must be a string, found a list",
    ),
    Case(
        "bad-variants",
        "native",
        "- func: add(Tensor self) -> Tensor\n  variants: function, methd\n",
        2,
        "unknown variant 'methd'; did you mean 'method'?",
    ),
    Case(
        "bad-device-check",
        "native",
        "- func: add(Tensor self) -> Tensor\n  device_check: NoChek\n",
        2,
        "'device_check' must be one of ExactSame, NoCheck; did you mean 'NoCheck'?",
    ),
    Case(
        "non-bool-flag",
        "native",
        "- func: add(Tensor self) -> Tensor\n  device_guard: maybe\n",
        2,
        "'device_guard' must be True or False, found 'maybe'",
    ),
    Case(
        "precomputed-without-structured",
        "native",
        "- func: add(Tensor self) -> Tensor\n  precomputed:\n  - kernel_size -> int kH, int kW\n",
        2,
        "'precomputed' requires 'structured: True'",
    ),
    Case(
        "bad-structured-delegate",
        "native",
        "- func: add(Tensor self) -> Tensor\n  structured_delegate: add.out(x)\n",
        2,
        "bad operator name 'add.out(x)' (column 1)",
    ),
    Case(
        "bad-autogen-name",
        "native",
        "- func: add(Tensor self) -> Tensor\n  autogen: add.out, add..x\n",
        2,
        "bad operator name 'add..x' (column 1)",
    ),
    Case(
        "dispatch-with-manual-registration",
        "native",
        "- func: add(Tensor self) -> Tensor\n  manual_kernel_registration: True\n  dispatch:\n    CPU: add\n",
        3,
        "'dispatch' has no effect with manual_kernel_registration",
    ),
    Case(
        "two-composite-kernels",
        "native",
        "- func: add(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: a\n"
        "    CompositeExplicitAutograd: b\n",
        2,
        "at most one composite kernel may be given, found CompositeExplicitAutograd, CompositeImplicitAutograd",
    ),
    Case(
        "dispatch-not-a-mapping",
        "native",
        "- func: add(Tensor self) -> Tensor\n  dispatch: CPU\n",
        2,
        "'dispatch' must be a mapping",
    ),
    Case(
        "kernel-not-a-name",
        "native",
        "- func: add(Tensor self) -> Tensor\n  dispatch:\n    CPU: [add]\n",
        3,
        "kernel for 'CPU' must be a name",
    ),
    Case(
        "tags-not-strings",
        "native",
        "- func: add(Tensor self) -> Tensor\n  tags: {core: yes}\n",
        2,
        "'tags' must be a string or a list of strings",
    ),
    Case(
        "complex-yaml-key",
        "native",
        "- func: add(Tensor self) -> Tensor\n  ? [a]\n  : b\n",
        2,
        "expected a plain value here",
    ),
]

DERIVATIVE_CASES = [
    Case(
        "misspelled-op",
        "derivatives",
        f"- name: {ADD.replace('add', 'ad', 1)}\n  self: grad\n",
        1,
        f"no native function has the schema '{ADD.replace('add', 'ad', 1)}'; did you mean '{ADD}'?",
    ),
    Case(
        "formula-for-missing-argument",
        "derivatives",
        f"- name: {ADD}\n  self: grad\n  othr: grad\n",
        3,
        "'othr' is not an argument or output of 'add.Tensor'; did you mean 'other'?",
    ),
    Case(
        "misspelled-output-differentiability",
        "derivatives",
        f"- name: {MAX}\n  self: grad\n  output_diferentiability: [True, False]\n",
        3,
        "'output_diferentiability' is not an argument or output of 'max.dim'; did you mean 'output_differentiability'?",
    ),
    Case(
        "duplicate-entry",
        "derivatives",
        f"- name: {ADD}\n  self: grad\n\n- name: {ADD}\n  other: grad\n",
        4,
        f"duplicate entry for '{ADD}' (first at line 1)",
    ),
    Case(
        "output-differentiability-length",
        "derivatives",
        f"- name: {MAX}\n  self: grad\n  output_differentiability: [True]\n",
        3,
        "'output_differentiability' has 1 entry but 'max.dim' returns 2 values",
    ),
    Case(
        "output-differentiability-not-bool",
        "derivatives",
        f"- name: {MAX}\n  self: grad\n  output_differentiability: [True, 1]\n",
        3,
        "'output_differentiability' must be a list of True/False",
    ),
    Case(
        "output-differentiability-not-a-list",
        "derivatives",
        f"- name: {ADD}\n  self: grad\n  output_differentiability: True\n",
        3,
        "'output_differentiability' must be a list of True/False",
    ),
    Case(
        "unknown-autograd-dispatch-key",
        "derivatives",
        f"- name: {ADD}\n  dispatch:\n    Default:\n      self: grad\n    AutogradNestedTensr:\n      self: grad\n",
        5,
        "unknown autograd dispatch key 'AutogradNestedTensr'; did you mean 'AutogradNestedTensor'?",
    ),
    Case(
        "formula-outside-dispatch-block",
        "derivatives",
        f"- name: {ADD}\n  dispatch:\n    Default:\n      self: grad\n  other: grad\n",
        5,
        "'other' must go inside the 'dispatch:' block",
    ),
    Case(
        "dispatch-block-not-a-mapping",
        "derivatives",
        f"- name: {ADD}\n  dispatch: Default\n",
        2,
        "'dispatch' must map autograd keys to formulas",
    ),
    Case(
        "dispatch-key-not-a-mapping",
        "derivatives",
        f"- name: {ADD}\n  dispatch:\n    Default: grad\n",
        3,
        "'Default' must map names to formulas",
    ),
    Case(
        "non-string-formula",
        "derivatives",
        f"- name: {ADD}\n  self: [grad]\n",
        2,
        "the formula for 'self' must be a non-empty expression",
    ),
    Case(
        "empty-formula",
        "derivatives",
        f"- name: {ADD}\n  self:\n  other: grad\n",
        2,
        "the formula for 'self' must be a non-empty expression",
    ),
    Case(
        "two-formulas-for-one-input",
        "derivatives",
        f"- name: {ADD}\n  self, other: grad\n  self: grad\n",
        3,
        "more than one formula for 'self'",
    ),
    Case(
        "missing-name",
        "derivatives",
        f"- name: {ADD}\n  self: grad\n\n- self: grad\n",
        4,
        "missing required key 'name'",
    ),
    Case(
        "name-not-a-string",
        "derivatives",
        "- name: [add]\n",
        1,
        "'name' must be a schema string",
    ),
    Case(
        "malformed-name",
        "derivatives",
        "- name: add(Tensor self, Tensor other -> Tensor\n  self: grad\n",
        1,
        "malformed schema: unbalanced parentheses in 'add(Tensor self, Tensor other -> Tensor' (column 4)",
    ),
]

TAG_CASES = [
    Case("tag-missing", "tags", "- desc: no name\n", 1, "missing required key 'tag'"),
    Case(
        "tag-unknown-key",
        "tags",
        "- tag: core\n  descr: typo\n",
        2,
        "unknown key 'descr'; did you mean 'desc'?",
    ),
]

CASES = NATIVE_CASES + DERIVATIVE_CASES + TAG_CASES


def _write_inputs(tmp_yaml: YamlWriter, **override: str) -> dict[str, str]:
    texts = {"native": GOOD_NATIVE, "derivatives": GOOD_DERIVATIVES, "tags": TAGS} | override
    return {
        "native": tmp_yaml("native_functions.yaml", texts["native"]),
        "derivatives": tmp_yaml("derivatives.yaml", texts["derivatives"]),
        "tags": tmp_yaml("tags.yaml", texts["tags"]),
    }


def _inspect(run_cli: CliRunner, paths: dict[str, str]) -> tuple[int, str, str]:
    result = run_cli(
        "inspect",
        "--native-functions",
        paths["native"],
        "--derivatives",
        paths["derivatives"],
        "--tags",
        paths["tags"],
    )
    return result.code, result.out, result.err


def test_good_inputs_load(tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    code, out, err = _inspect(run_cli, _write_inputs(tmp_yaml))
    assert (code, err) == (0, "")
    assert "entries: 2" in out
    assert "derivative entries: 2" in out


@pytest.mark.parametrize("case", CASES, ids=[f"{c.file}-{c.id}" for c in CASES])
def test_malformed_input(case: Case, tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    paths = _write_inputs(tmp_yaml, **{case.file: case.text})
    code, out, err = _inspect(run_cli, paths)
    assert err == f"{paths[case.file]}:{case.line}: error: {case.message}\n"
    assert code == 1
    assert out == ""
    assert "Traceback" not in err


def test_missing_file_has_no_location(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: object) -> None:
    paths = _write_inputs(tmp_yaml)
    missing = paths["native"] + ".missing"
    code, _, err = _inspect(run_cli, paths | {"native": missing})
    assert (code, err) == (1, f"vtgen-build: error: no such file: {missing}\n")


def test_missing_inputs(run_cli: CliRunner) -> None:
    result = run_cli("inspect")
    assert (result.code, result.err) == (
        1,
        "vtgen-build: error: give --native-functions and --derivatives, or --pytorch-root\n",
    )


def test_bad_pytorch_root(run_cli: CliRunner, tmp_path: object) -> None:
    result = run_cli("inspect", "--pytorch-root", str(tmp_path))
    assert result.code == 1
    assert result.err == (
        f"vtgen-build: error: {tmp_path}: not a PyTorch checkout (aten/src/ATen/native/, tools/autograd/) "
        "nor an installed torchgen package (packaged/...)\n"
    )


def test_empty_files_are_empty_models(tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    code, out, err = _inspect(run_cli, _write_inputs(tmp_yaml, native="", derivatives="# nothing\n"))
    assert (code, err) == (0, "")
    assert "entries: 0" in out


def test_error_text_from_the_api() -> None:
    with pytest.raises(VtgenError) as info:
        load_text("- func: a\n  func: b\n", "nf.yaml")
    assert str(info.value) == "nf.yaml:2: error: duplicate key 'func' (first at line 1)"
    assert info.value.location == Location("nf.yaml", 2)
    assert str(VtgenError("no location")) == "error: no location"


# A fuzzer: whatever the text, loading gives a model or a located VtgenError, never another exception.
_PIECES = st.sampled_from(
    [
        "- ",
        "  ",
        "\n",
        ": ",
        "func: ",
        "name: ",
        "dispatch:",
        "variants: ",
        "self: ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "add(Tensor self) -> Tensor",
        "Tensor(a!)",
        "CPU",
        "True",
        "grad",
        "'",
        '"',
        "#",
        "*",
        "&a",
        "*a",
        "output_differentiability: ",
        "tags: ",
        "core",
        "?",
        "|",
        "-",
        "3",
        "\t",
    ]
)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(native=st.lists(_PIECES, max_size=30).map("".join), derivatives=st.lists(_PIECES, max_size=30).map("".join))
def test_no_traceback_for_any_text(native: str, derivatives: str) -> None:
    tags = load_text(TAGS, "tags.yaml")
    try:
        build_model(load_text(native, "nf.yaml"), load_text(derivatives, "d.yaml"), tags)
    except VtgenError as exc:
        assert exc.location is not None
        assert exc.location.file in ("nf.yaml", "d.yaml")
        assert exc.location.line >= 1


_SUGGESTED = [c for c in CASES if "did you mean" in c.message and not c.message.startswith("malformed schema")]


@pytest.mark.parametrize("case", _SUGGESTED, ids=[f"{c.file}-{c.id}" for c in _SUGGESTED])
def test_a_did_you_mean_carries_its_fix(case: Case, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """``--format json`` gives the suggestion as an edit at the word; made, it clears that error."""
    paths = _write_inputs(tmp_yaml, **{case.file: case.text})
    args = ["--native-functions", paths["native"], "--derivatives", paths["derivatives"], "--tags", paths["tags"]]
    args += ["--out", str(tmp_path / "out"), "--format", "json"]
    (d,) = json.loads(run_cli("generate", *args).out)["diagnostics"]
    fix = d["fix"]
    assert (fix["line"], fix["new"]) == (case.line, case.message.rsplit("'", 2)[-2])
    line = case.text.splitlines()[case.line - 1]
    assert line[fix["column"] - 1 :].startswith(fix["old"]) and fix["old"] != fix["new"]
    fixed = line[: fix["column"] - 1] + fix["new"] + line[fix["column"] - 1 + len(fix["old"]) :]
    paths = _write_inputs(tmp_yaml, **{case.file: case.text.replace(line, fixed)})
    assert case.message not in _inspect(run_cli, paths)[2]
