"""``check --gradcheck`` trusts nothing it cached: an edited helper header recompiles and is checked.

One small op library (``sin`` and ``sin_`` of the real schema, whose backward formula calls a
helper of the user's header found through ``-I``) against the installed torch, two runs: the
helper is right and the checks pass; then the helper, passed with ``-I`` (which ``check`` hands
to the compiler as ``-isystem``), is edited to a wrong derivative: its unit is compiled again
and the check fails at the formula.  (Forged, truncated and planted objects and libraries:
``tests/test_artifact_cache.py``, with a real loader and a stand-in torch, in seconds.)
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RealYaml

_NATIVE = """\
- func: sin(Tensor self) -> Tensor
  variants: function, method
  tags: [core, pointwise]

- func: sin_(Tensor(a!) self) -> Tensor(a!)
  variants: function, method
  tags: pointwise
"""
_DERIVATIVES = """\
- name: sin(Tensor self) -> Tensor
  self: my_sin_backward(grad, self)
  result: auto_element_wise
"""
_HELPER = """\
#pragma once
#include <ATen/ATen.h>
namespace my_helpers {
inline at::Tensor my_sin_backward(const at::Tensor& grad, const at::Tensor& self) { return %s; }
}  // namespace my_helpers
"""


def _vtgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vtgen_build", *args], capture_output=True, text=True, check=False)


@pytest.mark.slow
@pytest.mark.torch
def test_gradcheck_recompiles_an_edited_helper_header(real_yaml: RealYaml, tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None or shutil.which("g++") is None:
        pytest.skip("needs torch and g++")
    root = tmp_path / "my ops"  # a path with a space
    (root / "include" / "my").mkdir(parents=True)
    (root / "native_functions.yaml").write_text(_NATIVE)
    (root / "derivatives.yaml").write_text(_DERIVATIVES)
    helper = root / "include" / "my" / "helpers.h"
    helper.write_text(_HELPER % "grad * self.cos().conj()")
    out = tmp_path / "out"
    args = ["check", "--native-functions", str(root / "native_functions.yaml"), "--derivatives"]
    args += [str(root / "derivatives.yaml"), "--tags", str(real_yaml.tags), "--out", str(out), "--shards", "1"]
    args += ["--manual-header", "my/helpers.h", "--using-namespace", "my_helpers", "-I", str(root / "include")]
    args += ["--gradcheck", "--op", "sin", "--max-samples", "1"]

    first = _vtgen(*args)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert "failed 0" in first.stdout and "OpInfo entries run: 0" not in first.stdout

    helper.write_text(_HELPER % "grad * self.sin()")  # wrong
    second = _vtgen(*args)
    assert second.returncode == 1, second.stdout + second.stderr[-3000:]
    assert "1 compiled now, linked" in second.stdout + second.stderr
    assert "derivatives.yaml:2: error: gradcheck failed for sin" in second.stderr
