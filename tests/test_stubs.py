"""The stub ATen header set: torchgen's own output compiles against it, mistakes do not.

A reference run of torchgen's gen_autograd (taken from ``$VTGEN_TORCHGEN_REF``
or generated here, ~10 s) checks that the stubs accept PyTorch's own spelling of
kernels and Nodes, with PyTorch's real ``FunctionsManual.h`` from the installed
wheel.  Our own output is checked as a whole in ``test_check.py``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from vtgen_build.inputs.files import Inputs
from vtgen_build.model import Model, load_model
from vtgen_build.model.cpp_api import cpp_signatures, dispatcher_arguments, dispatcher_returns, method_signatures
from vtgen_build.stubs.gen_decls import ATEN_DECLS_DIR, render_aten_decls, render_decls, write_decls

from .conftest import RealYaml, installed_torch_include

STUBS = Path(__file__).resolve().parents[1] / "vtgen_build" / "stubs" / "include"
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")


@dataclass(frozen=True)
class StubBuild:
    """Include directories for compiling torchgen-style output against the stubs."""

    ref: Path  # torchgen's output directory
    include_dirs: tuple[Path, ...]

    def compile(self, source: Path) -> subprocess.CompletedProcess[str]:
        assert CXX is not None
        cmd = [CXX, "-std=c++17", "-fsyntax-only", *(f"-I{d}" for d in self.include_dirs), str(source)]
        return subprocess.run(cmd, capture_output=True, text=True, check=False)

    def compile_text(self, text: str, path: Path) -> subprocess.CompletedProcess[str]:
        path.write_text(text)
        return self.compile(path)


@pytest.fixture(scope="session")
def torchgen_ref(tmp_path_factory: pytest.TempPathFactory, real_yaml: RealYaml) -> Path:
    given = os.environ.get("VTGEN_TORCHGEN_REF")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("torchgen_ref")
    packaged = real_yaml.torchgen_dir / "packaged"
    cmd = [
        sys.executable,
        "-m",
        "torchgen.packaged.autograd.gen_autograd",
        str(real_yaml.native_functions),
        str(real_yaml.tags),
        str(out),
        str(packaged / "autograd"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"torchgen's gen_autograd failed: {done.stderr[-500:]}")
    return out


@pytest.fixture(scope="session")
def stub_build(
    tmp_path_factory: pytest.TempPathFactory, real_model: Model, real_yaml: RealYaml, torchgen_ref: Path
) -> StubBuild:
    manual = installed_torch_include("torch/csrc/autograd/FunctionsManual.h") / "torch/csrc/autograd/FunctionsManual.h"
    gen = tmp_path_factory.mktemp("stub_gen")
    write_decls(real_model.native_functions, str(gen))
    autograd = gen / "torch" / "csrc" / "autograd"
    autograd.mkdir(parents=True)
    (autograd / "FunctionsManual.h").symlink_to(manual)
    (autograd / "generated").symlink_to(torchgen_ref)
    return StubBuild(torchgen_ref, (STUBS, gen))


# -- pieces of torchgen's output -------------------------------------------------------------
def _blocks(text: str, start: re.Pattern[str]) -> list[str]:
    """Top-level definitions whose first line matches ``start``, up to the closing ``}``."""
    lines = text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        if start.match(lines[i]):
            j = i
            while lines[j] != "}":
                j += 1
            found.append("\n".join(lines[i : j + 1]))
            i = j
        i += 1
    return found


def _kernel_tu(ref: Path, kernels: list[str]) -> str:
    """A translation unit holding the named VariableType kernels, with the shards' prelude."""
    shards = [(ref / f"VariableType_{k}.cpp").read_text() for k in range(10)]
    first = shards[0]
    cut = re.search(r"^namespace \{\n", first, re.M).end()  # type: ignore[union-attr]
    bodies = []
    for name in kernels:
        pattern = re.compile(rf"^\S.* {re.escape(name)}\(c10::DispatchKeySet ks")
        hits = [b for text in shards for b in _blocks(text, pattern)]
        assert hits, f"no kernel {name} in the reference output"
        bodies.extend(hits)
    return first[:cut] + "\n\n".join(bodies) + "\n}\n}\n}\n"


def _node_tu(ref: Path, nodes: list[str]) -> str:
    """A translation unit holding the definitions of the named backward Nodes."""
    text = (ref / "Functions.cpp").read_text()
    cut = text.index("static variable_list", text.index("namespace torch::autograd::generated {"))
    bodies = []
    for node in nodes:
        pattern = re.compile(rf"^(static |inline )?\S.*\b{node}(::|_apply_functional)")
        hits = _blocks(text, pattern)
        assert hits, f"no Node {node} in the reference output"
        bodies.extend(hits)
    return text[:cut] + "\n\n".join(bodies) + "\n} // namespace torch::autograd::generated\n"


KERNELS = [
    "sin",
    "mul_Tensor",
    "add__Tensor",
    "cat",
    "_foreach_add_List",
    "addmm_out_out",
    "sum_dim_IntList",
    "index_Tensor",
    "zeros_like",
    "max_dim",
    "_linalg_eigh",
]
NODES = [
    "AbsBackward0",
    "MulBackward0",
    "CatBackward0",
    "ForeachAddBackward0List",
    "SumBackward1",
    "IndexBackward0",
    "LinalgEighBackward0",
    "ConvolutionBackward0",
]


def _check(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr[-4000:]


def test_kernels_compile(stub_build: StubBuild, tmp_path: Path) -> None:
    _check(stub_build.compile_text(_kernel_tu(stub_build.ref, KERNELS), tmp_path / "kernels.cpp"))


def test_nodes_compile_with_real_functions_manual(stub_build: StubBuild, tmp_path: Path) -> None:
    _check(stub_build.compile_text(_node_tu(stub_build.ref, NODES), tmp_path / "nodes.cpp"))


# -- mistakes must fail ------------------------------------------------------------------------
_FORMULA_TU = """\
#include "torch/csrc/autograd/FunctionsManual.h"
#include <ATen/RedispatchFunctions.h>
using namespace torch::autograd::generated::details;
using at::Tensor;
at::Tensor formula(const Tensor& grad, const Tensor& self, const Tensor& other, c10::SymIntArrayRef sizes,
                   const at::Scalar& alpha, int64_t dim) {{
  return {expr};
}}
"""

GOOD_FORMULAS = [
    "grad * self.sgn()",
    "grad.expand_symint(sizes)",
    "at::sum(grad, {0}, true)",
    "grad.sum_to_size(self.sizes())",
    "at::zeros_like(self).index_select(dim, other)",
    "maybe_multiply(grad, alpha.conj())",
    "sum_backward(grad, sizes, self.sizes(), false)",
    "handle_r_to_c(self.scalar_type(), grad.mul(other))",
    "at::cat({grad, self}, dim)",
    "at::redispatch::mul(c10::after_autograd_keyset, grad, other)",
    "grad.view_symint(sizes) + 1",
]

BAD_FORMULAS = {
    "missing method": "grad * self.sgnn()",
    "Tensor for IntArrayRef": "grad.expand(self)",
    "Tensor for SymIntArrayRef": "grad.view_symint(other)",
    "missing at:: function": "at::sinn(grad)",
    "too few arguments": "at::mul(grad)",
    "too many arguments": "at::sin(grad, self)",
    "Scalar for Tensor": "at::mm(grad, alpha)",
    "wrong helper argument type": "sum_backward(grad, self, self.sizes(), false)",
    "helper that does not exist": "sum_backwards(grad, sizes, self.sizes(), false)",
    "IntArrayRef for SymIntArrayRef (no _symint)": "grad.expand(sizes)",
    "method that is function-only": "grad.zeros_like()",
    "out= overload misspelt": "at::add_outt(grad, self, other)",
    "wrong return type": "self.sizes()",
    "redispatch without keyset": "at::redispatch::mul(grad, other)",
}


def test_good_formulas_compile(stub_build: StubBuild, tmp_path: Path) -> None:
    units = (_FORMULA_TU.format(expr=e).replace("formula(", f"formula{i}(") for i, e in enumerate(GOOD_FORMULAS))
    body = "\n".join(units)
    _check(stub_build.compile_text(body, tmp_path / "good.cpp"))


def test_mistaken_formulas_fail(stub_build: StubBuild, tmp_path: Path) -> None:
    def run(item: tuple[str, str]) -> tuple[str, int]:
        label, expr = item
        path = tmp_path / (re.sub(r"\W+", "_", label) + ".cpp")
        return label, stub_build.compile_text(_FORMULA_TU.format(expr=expr), path).returncode

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = dict(pool.map(run, BAD_FORMULAS.items()))
    compiled = [label for label, rc in results.items() if rc == 0]
    assert not compiled, f"these mistakes compiled against the stubs: {compiled}"


def test_mistakes_in_real_kernels_and_nodes_fail(stub_build: StubBuild, tmp_path: Path) -> None:
    kernels = _kernel_tu(stub_build.ref, ["sin"])
    nodes = _node_tu(stub_build.ref, ["AbsBackward0"])
    mutations = {
        "saved member that does not exist": (kernels, "grad_fn->self_ = Saved", "grad_fn->selff_ = Saved"),
        "Node that does not exist": (kernels, "make_intrusive<SinBackward0>", "make_intrusive<SinBackward9>"),
        "misspelt method in a formula": (nodes, "self.sgn()", "self.sgnn()"),
    }
    for label, (text, old, new) in mutations.items():
        assert old in text, label
        done = stub_build.compile_text(text.replace(old, new), tmp_path / "mutated.cpp")
        assert done.returncode != 0, f"{label}: compiled"


# -- the generated declarations -----------------------------------------------------------------
def test_declaration_spellings(real_model: Model) -> None:
    by_name = {str(f.func.name): f for f in real_model.native_functions}
    assert [s.decl() for s in cpp_signatures(by_name["add.out"])] == [
        "at::Tensor & add_out(at::Tensor & out, const at::Tensor & self, const at::Tensor & other, "
        "const at::Scalar & alpha=1)",
        "at::Tensor & add_outf(const at::Tensor & self, const at::Tensor & other, const at::Scalar & alpha, "
        "at::Tensor & out)",
    ]
    assert [s.decl() for s in method_signatures(by_name["view"])] == [
        "at::Tensor view(at::IntArrayRef size) const",
        "at::Tensor view_symint(c10::SymIntArrayRef size) const",
    ]
    zeros = [s.decl() for s in cpp_signatures(by_name["zeros"])]
    assert "at::Tensor zeros(at::IntArrayRef size, at::TensorOptions options={})" in zeros
    assert [b.decl() for b in dispatcher_arguments(by_name["index.Tensor"])] == [
        "const at::Tensor & self",
        "const c10::List<::std::optional<at::Tensor>> & indices",
    ]
    assert [b.type.cpp() for b in dispatcher_arguments(by_name["cat"])] == ["const at::ITensorListRef &", "int64_t"]
    assert dispatcher_returns(by_name["max.dim"]).cpp() == "::std::tuple<at::Tensor,at::Tensor>"
    assert dispatcher_returns(by_name["_foreach_add_.List"]).cpp() == "void"


def test_shipped_aten_declarations_are_current(real_model: Model) -> None:
    """stubs/include/vtgen_aten/ is what tools/gen_stub_aten_decls.py writes for the installed torch."""
    shipped = STUBS / ATEN_DECLS_DIR
    for kind, text in render_aten_decls(real_model.native_functions).items():
        content = (shipped / f"{kind}.inc").read_text(encoding="utf-8")
        assert content.split("\n", 1)[1] == text, f"{kind}.inc is stale: run python tools/gen_stub_aten_decls.py"


def test_aten_yaml_declares_aten_itself(real_model: Model) -> None:
    decls = render_decls(real_model.native_functions)
    assert all(f"<{ATEN_DECLS_DIR}/" not in text for text in decls.values())
    assert "TORCH_API at::Tensor sin(const at::Tensor & self);" in decls["vtgen_decls/Functions.inc"]


def test_op_library_gets_the_shipped_aten_set_and_its_own_namespace() -> None:
    root = Path(__file__).resolve().parents[1] / "sample_project"
    model = load_model(
        Inputs(str(root / "native_functions.yaml"), str(root / "derivatives.yaml"), str(root / "tags.yaml"), "vtsample")
    )
    decls = render_decls(model.native_functions)
    for kind in ("TensorMethods", "Functions", "RedispatchFunctions"):
        assert f"#include <{ATEN_DECLS_DIR}/{kind}.inc>" in decls[f"vtgen_decls/{kind}.inc"]
    assert "namespace vtsample {" in decls["vtgen_decls/Functions.inc"]
    redispatch = decls["vtgen_decls/RedispatchFunctions.inc"]
    assert (
        "at::Tensor tile_to_symint(c10::DispatchKeySet dispatchKeySet, const at::Tensor & self, "
        "c10::SymIntArrayRef size);" in redispatch
    )
    assert "softsign" not in decls["vtgen_decls/TensorMethods.inc"]  # methods are bound for aten only
