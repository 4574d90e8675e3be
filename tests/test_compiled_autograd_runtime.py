"""A backward under compiled autograd through an overridden aten op gives eager's gradients.

``aten::sin``'s Autograd kernel and ``SinBackward0`` are generated from a one-entry yaml, built
against the installed torch (``torch.utils.cpp_extension``, -O0, ~1-4 min) and loaded in a
subprocess (the override is process-wide).  There, ``torch._dynamo.compiled_autograd`` traces
the backward: ``compiled_args`` collects the saved ``self``, ``apply_with_saved`` binds the
Node's functional form, which shows up in the compiled graph under the Node's name.  A build
with a wrong formula shows the check can fail: eager and compiled then agree on the wrong value.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vtgen_build.cli import commands as cli

pytestmark = [pytest.mark.slow, pytest.mark.torch]

FORMULAS = {"right": "grad * self.cos().conj()", "wrong": "grad * self.cos().conj() * 2"}

_BUILD = """
import sys
from torch.utils import cpp_extension
out, build = sys.argv[1], sys.argv[2]
print(cpp_extension.load(name="vtgen_ca_sin", sources=[out + "/Functions_0.cpp", out + "/VariableType_0.cpp"],
      extra_include_paths=[out], build_directory=build, is_python_module=False, extra_cflags=["-O0"]))
"""

_RUN = """
import json, sys, torch
from torch._dynamo import compiled_autograd
torch.ops.load_library(sys.argv[1])
graphs = []

def compiler(gm):  # the graph compiled autograd traced, before dynamo compiles it
    graphs.append(gm.code)
    return torch.compile(gm, backend="eager", fullgraph=True)

def grads(compiled):
    x = torch.linspace(-2, 2, 7, dtype=torch.float64, requires_grad=True)
    y = (torch.sin(x) * torch.sin(x * 3)).sum()
    if compiled:
        with compiled_autograd._enable(compiler):
            y.backward()
    else:
        y.backward()
    return x.grad

x = torch.linspace(-2, 2, 7, dtype=torch.float64)
expected = torch.cos(x) * torch.sin(3 * x) + torch.sin(x) * 3 * torch.cos(3 * x)
eager, compiled = grads(False), grads(True)
print(json.dumps({
    "eager_is_right": bool(torch.allclose(eager, expected)),
    "compiled_is_eager": bool(torch.allclose(compiled, eager)),
    "traced_node": any("SinBackward0" in g for g in graphs),
}))
"""


def _library(tmp: Path, formula: str) -> Path:
    (tmp / "native_functions.yaml").write_text("- func: sin(Tensor self) -> Tensor\n  variants: function, method\n")
    (tmp / "derivatives.yaml").write_text(
        textwrap.dedent(f"""\
            - name: sin(Tensor self) -> Tensor
              self: {formula}
              result: auto_element_wise
            """)
    )
    out = tmp / "out"
    args = ["generate", "--native-functions", str(tmp / "native_functions.yaml")]
    assert cli.main([*args, "--derivatives", str(tmp / "derivatives.yaml"), "--shards", "1", "--out", str(out)]) == 0
    build = tmp / "build"
    build.mkdir()
    done = subprocess.run([sys.executable, "-c", _BUILD, str(out), str(build)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    return build / "vtgen_ca_sin.so"


@pytest.mark.parametrize("case", sorted(FORMULAS))
def test_compiled_autograd_matches_eager(tmp_path: Path, case: str) -> None:
    if shutil.which("g++") is None and not os.environ.get("CXX"):
        pytest.skip("no C++ compiler")
    pytest.importorskip("torch")
    library = _library(tmp_path, FORMULAS[case])
    done = subprocess.run([sys.executable, "-c", _RUN, str(library)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"eager_is_right": case == "right", "compiled_is_eager": True, "traced_node": True}
