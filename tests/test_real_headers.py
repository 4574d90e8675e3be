"""Generated shards compile against PyTorch 2.13's real headers (g++ -fsyntax-only)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vtgen_build.cli import commands as cli

from .conftest import installed_torch_include

pytestmark = [pytest.mark.slow, pytest.mark.torch]


@pytest.mark.parametrize("unit", ["VariableType_3.cpp", "Functions_7.cpp"])
def test_shard_compiles_against_real_headers(real_yaml, tmp_path: Path, unit: str) -> None:  # type: ignore[no-untyped-def]
    compiler = shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    include = installed_torch_include("torch/csrc/autograd/FunctionsManual.h")
    out = tmp_path / "out"
    assert cli.main(["generate", "--pytorch-root", str(real_yaml.torchgen_dir), "--out", str(out)]) == 0
    # FunctionsManual.h includes generated/Functions.h: our FunctionsBase.h stands in for it.
    shim = tmp_path / "shim" / "torch" / "csrc" / "autograd" / "generated"
    shim.mkdir(parents=True)
    (shim / "Functions.h").write_text(f'#include "{out / "FunctionsBase.h"}"\n')
    cmd = [
        compiler,
        "-std=c++17",
        "-fsyntax-only",
        f"-I{tmp_path / 'shim'}",
        f"-I{include}",
        f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}",
        str(out / unit),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
