"""A PyTorch-checkout-shaped copy of the real yaml with edited formulas (the gradcheck edit tests)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RealYaml, installed_torch_include


@dataclass(frozen=True)
class EditedYaml:
    root: Path  # a PyTorch-checkout-shaped copy: --pytorch-root
    derivatives: Path
    lines: dict[str, int]  # op → the line of its edited formula


def edited_checkout(real_yaml: RealYaml, root: Path, derivatives: str, lines: dict[str, int]) -> EditedYaml:
    """Lay out ``root`` as a checkout: the real native_functions.yaml and tags.yaml, the installed
    torch's FunctionsManual.h, and ``derivatives`` (the edited text) as tools/autograd/derivatives.yaml."""
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    include = installed_torch_include("torch/csrc/autograd/FunctionsManual.h")
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(real_yaml.native_functions, native / "native_functions.yaml")
    shutil.copy(real_yaml.tags, native / "tags.yaml")
    manual = root / "torch/csrc/autograd/FunctionsManual.h"
    manual.parent.mkdir(parents=True)
    manual.symlink_to(include / "torch/csrc/autograd/FunctionsManual.h")
    path = root / "tools/autograd/derivatives.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(derivatives, encoding="utf-8")
    return EditedYaml(root, path, lines)


def vtgen(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m vtgen_build ARGS`` in a child process."""
    exe = [sys.executable, "-m", "vtgen_build"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, check=False, timeout=3000)
