"""A forward formula derived from a backward one (``auto_element_wise``): a compiler error in it is
reported on the yaml line holding the text, at a column inside that line, in the derived lambda."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import CliRunner, copy_sample, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
STUBS = Path(__file__).resolve().parents[1] / "vtgen_build" / "stubs" / "include"


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_an_error_in_a_derived_forward_formula_points_into_the_backward_formulas_line(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = copy_sample(tmp_path / "sample")
    derivatives = root / "derivatives.yaml"
    lines = derivatives.read_text(encoding="utf-8").split("\n")
    at = lines.index("  self: softsign_backward(grad, self)")
    assert lines[at + 1] == "  result: auto_element_wise"  # the forward formula is derived from line at + 1
    lines[at] = "  self: grad.no_such_method()"
    derivatives.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    args = ["generate", *sample_inputs(root), "--shards", "1", "--stub-decls", "--line-directives", "--out", str(out)]
    assert run_cli(*args).code == 0
    kernels = out / "VariableType_0.cpp"
    flags = ["-std=c++17", "-fsyntax-only", f"-I{out}", f"-I{STUBS}", f"-I{root / 'include'}"]
    done = subprocess.run([CXX, *flags, str(kernels)], capture_output=True, text=True, check=False)
    assert done.returncode != 0
    found = re.findall(rf"^{re.escape(str(derivatives))}:(\d+):(\d+): error: (.*)$", done.stderr, re.M)
    assert found, done.stderr
    assert {(int(line), int(column)) for line, column, _ in found} == {(at + 1, lines[at].index("no_such") + 1)}
    assert all("no_such_method" in message for _, _, message in found), found
    assert "In lambda function" in done.stderr  # the derived formula's context
    assert "/* derived from the backward formula */" in kernels.read_text(encoding="utf-8")
