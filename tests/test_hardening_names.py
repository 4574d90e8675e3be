"""Names and text that reach generated code (issue 35, items 6-8): each is a located error, never C++.

A ``dispatch:`` kernel name is declared in ``NativeKernels.h`` and registered by ``Register<Key>.cpp``;
a ``precomputed:`` field becomes a struct member and an impl parameter; a schema is pasted whole
into a C++ string literal and a Python docstring.  Every case runs the real command line (with
``--register-backends all``, so the registrations are generated) and compares the error it prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

STRUCTURED = """\
- func: f.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  precomputed:
  - {fields}
  dispatch:
    CPU: f_out
"""


def _generate(run_cli: CliRunner, native: str, tmp_yaml: YamlWriter, out: Path) -> tuple[int, str]:
    result = run_cli(
        "generate", "--native-functions", native, "--derivatives", tmp_yaml("d.yaml", ""), "--namespace", "lib",
        "--out", str(out), "--register-backends", "all", "--python-api", str(out / "api"),
    )  # fmt: skip
    return result.code, result.err.strip()


NOT_AN_IDENTIFIER = "is not a C++ identifier (letters, digits and '_', not starting with a digit)"
PLAINLY = "a kernel is declared in the op's own namespace, so name it plainly"
KERNEL_CASES = [
    (
        "preprocessor-line",
        '"f_cpu\\n#include </dev/null>\\nstatic int hijack = (puts(\\"pwned\\"), 0);"',
        "'f_cpu\\n#include </dev/null>\\nstatic int hijack = (puts(\"pwned\"), 0);' is not a C++ identifier "
        "(letters, digits and '_', not starting with a digit)",
    ),
    ("blank", '"f cpu"', f"'f cpu' {NOT_AN_IDENTIFIER}; did you mean 'f_cpu'?"),
    ("keyword", "delete", "'delete' is a C++ keyword; did you mean 'delete_'?"),
    ("qualified", "other::f_cpu", f"'other::f_cpu' is qualified; {PLAINLY}; did you mean 'f_cpu'?"),
    ("hides-std", "std", "'std' is a namespace or type the generated declarations use; did you mean 'std_'?"),
    ("digit", "1f", "'1f' is not a C++ identifier (letters, digits and '_', not starting with a digit)"),
]


@pytest.mark.parametrize(("kernel", "message"), [c[1:] for c in KERNEL_CASES], ids=[c[0] for c in KERNEL_CASES])
def test_dispatch_kernel_names_are_identifiers(
    kernel: str, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", f"- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: {kernel}\n")
    code, err = _generate(run_cli, native, tmp_yaml, tmp_path / "out")
    assert (code, err) == (1, f"{native}:3: error: the CPU kernel name: {message}")
    assert not (tmp_path / "out" / "NativeKernels.h").exists()


def test_aten_keeps_its_kernel_named_std(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """PyTorch's own ``std`` kernel lives in ``at::native``: only an op library's would hide ``std::``."""
    native = tmp_yaml("nf.yaml", "- func: std(Tensor self) -> Tensor\n  dispatch:\n    CPU, CUDA: std\n")
    result = run_cli("generate", "--native-functions", native, "--derivatives", tmp_yaml("d.yaml", ""),
                     "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.code == 0, result.err


def test_tags_are_identifiers(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """Without a tags.yaml an op library's tag is not looked up; it still reaches RegisterSchema.cpp."""
    native = tmp_yaml("nf.yaml", '- func: f(Tensor self) -> Tensor\n  tags: ["x\\n#error hijack"]\n')
    code, err = _generate(run_cli, native, tmp_yaml, tmp_path / "out")
    assert (code, err) == (1, f"{native}:2: error: tag: 'x\\n#error hijack' is not a C++ identifier "
                              "(letters, digits and '_', not starting with a digit)")  # fmt: skip


PRECOMPUTED_CASES = [
    ("keyword", "int class", "'class' is a C++ keyword"),
    ("argument", "int self", "'self' is also an argument of 'f.out'"),
    ("out-argument", "dim -> int out", "'out' is also an argument of 'f.out'"),
    ("twice", "int a, float a", "'a' is named twice"),
    ("hides-a-type", "int int64_t", "'int64_t' is a namespace or type the generated declarations use"),
    ("not-a-name", "int a-b", "'a-b' is not a C++ identifier"),
]


@pytest.mark.parametrize(
    ("fields", "message"), [c[1:] for c in PRECOMPUTED_CASES], ids=[c[0] for c in PRECOMPUTED_CASES]
)
def test_precomputed_field_names(
    fields: str, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", STRUCTURED.format(fields=fields))
    code, err = _generate(run_cli, native, tmp_yaml, tmp_path / "out")
    assert code == 1 and err.startswith(f"{native}:3: error: precomputed field: {message}"), err


def test_a_field_may_take_the_name_of_the_argument_it_replaces(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", STRUCTURED.format(fields="dim -> int dim, bool keep"))
    code, err = _generate(run_cli, native, tmp_yaml, tmp_path / "out")
    assert code == 0, err
    header = (tmp_path / "out" / "NativeKernels.h").read_text()
    assert "void f_out(const at::Tensor & self, int64_t dim, bool keep, const at::Tensor & out);" in header


CONTROL_CASES = [
    ("nul", "\\0", 17, "U+0000"),
    ("carriage-return", "\\r", 17, "U+000D"),
    ("escape", "\\e", 17, "U+001B"),
    ("tab", "\\t", 17, "U+0009"),
    ("right-to-left-override", "\\u202E", 17, "U+202E"),
    ("line-separator", "\\u2028", 17, "U+2028"),
]


@pytest.mark.parametrize(
    ("escape", "column", "code"), [c[1:] for c in CONTROL_CASES], ids=[c[0] for c in CONTROL_CASES]
)
def test_control_characters_in_a_schema(
    escape: str, column: int, code: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    schema = f'"f(Tensor self) -{escape}> Tensor"'  # column 17: the character after '-'
    native = tmp_yaml("nf.yaml", f"- func: g(Tensor self) -> Tensor\n- func: {schema}\n")
    got = _generate(run_cli, native, tmp_yaml, tmp_path / "out")
    want = f"{native}:2: error: malformed schema: a control character ({code}) is not allowed in a schema"
    assert got == (1, f"{want} (column {column})")
    derivatives = tmp_yaml("d2.yaml", f"- name: {schema}\n  self: grad\n")
    fine = tmp_yaml("nf2.yaml", "- func: f(Tensor self) -> Tensor\n")
    result = run_cli("generate", "--native-functions", fine, "--derivatives", derivatives, "--namespace", "lib",
                     "--out", str(tmp_path / "out2"))  # fmt: skip
    assert result.code == 1, result.err
    assert result.err.startswith(f"{derivatives}:1: error: malformed schema: a control character ({code})")
