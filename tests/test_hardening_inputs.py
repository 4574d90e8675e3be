"""Hostile inputs and options (issue 15, defects 3, 4 and 8): each is a located error, quickly, never C++.

Names that become identifiers, namespaces or ``#include`` spellings are checked where they are
read; the YAML reader is bounded (size, depth, alias expansion); non-UTF-8 input names its line.
Every case runs the real command line and compares the error it prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from vtgen_build.inputs.load import MAX_INPUT_BYTES

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

NATIVE = """\
- func: sin(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CPU: sin
"""
DERIVATIVES = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos()
"""


def _files(tmp_yaml: YamlWriter, native: str = NATIVE, derivatives: str = DERIVATIVES) -> list[str]:
    return ["--native-functions", tmp_yaml("native_functions.yaml", native), "--derivatives",
            tmp_yaml("derivatives.yaml", derivatives)]  # fmt: skip


NAME_CASES = [
    (
        "namespace-injection",
        "- func: 'x\"; system; //::sin(Tensor self) -> Tensor'\n",
        1,
        "the namespace of 'func': 'x\"; system; //' is not a C++ identifier",
    ),
    (
        "return-name-injection",
        '- func: "sin(Tensor self) -> Tensor a\\n#include\\"evil.h\\"\\nb"\n',
        1,
        "malformed schema: a control character (U+000A) is not allowed in a schema (column 29)",
    ),
    (
        "keyword-argument",
        "- func: sin(Tensor class) -> Tensor\n",
        1,
        "malformed schema: bad argument name 'class' (a C++ keyword) (column 12)",
    ),
    (
        "keyword-op",
        "# a comment\n- func: class(Tensor self) -> Tensor\n",
        2,
        "malformed schema: bad operator name 'class' (a C++ keyword)",
    ),
    (
        "keyword-namespace",
        "- func: delete::sin(Tensor self) -> Tensor\n",
        1,
        "the namespace of 'func': 'delete' is a C++ keyword",
    ),
]


@pytest.mark.parametrize(("text", "line", "message"), [c[1:] for c in NAME_CASES], ids=[c[0] for c in NAME_CASES])
def test_names_reaching_cpp_are_checked_where_read(
    run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path, text: str, line: int, message: str
) -> None:
    args = _files(tmp_yaml, native=text + NATIVE)
    result = run_cli("generate", *args, "--out", str(tmp_path / "out"))
    assert result.code == 1, result
    assert result.err.startswith(f"{tmp_path / 'native_functions.yaml'}:{line}: error: {message}"), result.err
    assert "Traceback" not in result.err
    assert not list((tmp_path / "out").glob("*.cpp"))


OPTION_CASES = [
    (["--namespace", '"; system("id"); //'], '--namespace: \'"; system("id"); //\' is not a C++ identifier'),
    (["--namespace", "class"], "--namespace: 'class' is a C++ keyword"),
    (["--manual-header", 'h.h"\n#include <evil.h>'], "--manual-header: 'h.h\"\\n#include <evil.h>' is not a header"),
    (["--manual-header", "h.h>"], "--manual-header: 'h.h>' is not a header name"),
    (["--using-namespace", "a; system(1)"], "--using-namespace: 'a; system(1)' is not a C++ qualified name"),
    (["--using-namespace", "a::class"], "--using-namespace: 'a::class' is not a C++ qualified name"),
    (["--shards", "0"], "--shards must be between 1 and 1024, got 0"),
    (["--shards", "100000"], "--shards must be between 1 and 1024, got 100000"),
]


@pytest.mark.parametrize(("extra", "message"), OPTION_CASES, ids=[" ".join(c[0]) for c in OPTION_CASES])
def test_options_reaching_cpp_are_checked(
    run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path, extra: list[str], message: str
) -> None:
    result = run_cli("generate", *_files(tmp_yaml), "--out", str(tmp_path / "out"), *extra)
    assert result.code == 1, result
    assert result.err.startswith(f"vtgen-build: error: {message}"), result.err
    assert not list((tmp_path / "out").glob("*.cpp"))


def test_qualified_names_and_include_paths_that_are_fine_still_work(
    run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path
) -> None:
    extra = ["--namespace", "my_ops", "--manual-header", "my-ops/helpers_v2.h", "--using-namespace", "::a::b_2"]
    result = run_cli("generate", *_files(tmp_yaml), "--out", str(tmp_path / "out"), *extra)
    assert result.code == 0, result
    assert '#include "my-ops/helpers_v2.h"' in (tmp_path / "out" / "Functions.h").read_text() + "".join(
        p.read_text() for p in (tmp_path / "out").glob("*.cpp")
    )


def test_empty_out_is_an_error_not_the_working_directory(
    run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli("generate", *_files(tmp_yaml), "--out", "")
    assert (result.code, result.err) == (1, "vtgen-build: error: --out: the output directory must not be empty\n")
    assert not list(tmp_path.glob("*.cpp")) and not (tmp_path / ".vtgen-manifest.json").exists()


def _error(run_cli: CliRunner, *args: str) -> str:
    """The error output of ``inspect`` on bad input (how fast it comes: bench/bench_hostile.py)."""
    result = run_cli("inspect", *args)
    assert result.code == 1, result
    assert "Traceback" not in result.err
    return result.err


def test_alias_bomb_is_a_located_error(run_cli: CliRunner, tmp_yaml: YamlWriter) -> None:
    bomb = "- func: sin(Tensor self) -> Tensor\n  tags: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 12):  # 10**12 values once expanded: 377 bytes in the probe
        bomb += f"- a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n"
    err = _error(run_cli, *_files(tmp_yaml, native=bomb))
    assert ":9: error: expands to more than 2,000,000 values (nested aliases?)" in err, err


def test_recursive_alias_is_a_located_error(run_cli: CliRunner, tmp_yaml: YamlWriter) -> None:
    err = _error(run_cli, *_files(tmp_yaml, native=NATIVE + "- a: &r [1, *r]\n"))
    assert "native_functions.yaml:5: error: nested deeper than 100 levels" in err, err


def test_deep_nesting_is_a_located_error(run_cli: CliRunner, tmp_yaml: YamlWriter) -> None:
    deep = NATIVE + "- func: cos(Tensor self) -> Tensor\n  tags: " + "[" * 600 + "]" * 600 + "\n"
    err = _error(run_cli, *_files(tmp_yaml, native=deep))
    assert "native_functions.yaml:6: error: nested deeper than 100 levels" in err, err


def test_dev_zero_and_huge_inputs_are_refused_by_size(run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    for source in ("/dev/zero", str(huge)):
        args = ["--native-functions", source, "--derivatives", tmp_yaml("derivatives.yaml", DERIVATIVES)]
        err = _error(run_cli, *args)
        assert err == f"vtgen-build: error: {source}: larger than 16 MiB: not an input file\n"


def test_non_utf8_input_names_the_line_of_the_first_bad_byte(
    run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path
) -> None:
    native = tmp_path / "native_functions.yaml"
    native.write_bytes(NATIVE.encode() + b"- func: cos(Tensor self) -> Tensor\n  python_module: caf\xe9\n")
    args = ["--native-functions", str(native), "--derivatives", tmp_yaml("derivatives.yaml", DERIVATIVES)]
    err = _error(run_cli, *args)
    assert err == f"{native}:6: error: not UTF-8 text: byte 0xe9 (invalid continuation byte)\n", err


def test_inspect_runs_the_validation_generate_runs(run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    """A derivatives.yaml entry naming no native function is only found when planning."""
    bad = DERIVATIVES + "- name: cos(Tensor self) -> Tensor\n  self: grad * -self.sin()\n"
    args = _files(tmp_yaml, derivatives=bad)
    generated = run_cli("generate", *args, "--out", str(tmp_path / "out"))
    inspected = run_cli("inspect", *args)
    assert generated.code == 1, generated
    assert (inspected.code, inspected.err) == (1, generated.err)
    assert "derivatives.yaml:3: error: " in inspected.err
