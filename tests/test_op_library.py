"""What an op library registers besides its Autograd kernels: RegisterSchema.cpp and ADInplaceOrViewType_<k>.cpp.

Plans and text from small yaml files; the new files compile against the stub headers (which
must stay warning-free); ``generate --line-directives`` maps formula errors to the yaml; the
files survive incremental runs.  The slow tests build the sample's whole output (plus two view
ops) into one shared library with CMake (conftest's ``torch_tree``, which tests/test_sample_runtime.py
also builds with wrong formulas), linked with ``-Wl,--no-undefined`` against the torch wheel, and
run it in a torch process: gradients, version counters, views.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.emit.files import family, shard_of
from vtgen_build.emit.functionalize import register_functionalize
from vtgen_build.emit.schema import register_schema
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.inputs.files import Inputs
from vtgen_build.model import load_model
from vtgen_build.plan.functionalize import plan_functionalize
from vtgen_build.plan.inplace_or_view import InplaceOrViewPlan, plan_inplace_or_view
from vtgen_build.plan.kernel import build_plan
from vtgen_build.plan.policy import load_policy
from vtgen_build.plan.request import BuildRequest
from vtgen_build.plan.schemas import plan_schemas

from .conftest import CliRunner, RealYaml, TorchTree, YamlWriter, installed_torch_dir, installed_torch_include

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
STUBS = Path(__file__).resolve().parents[1] / "vtgen_build" / "stubs" / "include"
PACKAGE = Path(__file__).parent / "packages" / "op_library"

NATIVE = """
- func: twist(Tensor self) -> Tensor
  dispatch:
    CPU: twist
  tags: [core, fancy]

- func: twist_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: twist_

- func: twist.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: twist_out

- func: fill_both_(Tensor(a!) self, Tensor(b!) other) -> ()
  dispatch:
    CPU: fill_both_

- func: peek(Tensor(a) self, int dim, SymInt[] size) -> Tensor(a)
  dispatch:
    CPU: peek

- func: peek_(Tensor(a!) self, int dim, SymInt[] size) -> Tensor(a!)
  dispatch:
    CPU: peek_

- func: pieces(Tensor(a -> *) self) -> Tensor(a)[]
  dispatch:
    CPU: pieces

- func: mask_of(Tensor(a) self) -> Tensor(a)
  dispatch:
    CPU: mask_of
"""

DERIVATIVES = """
- name: twist(Tensor self) -> Tensor
  self: grad * 2

- name: mask_of(Tensor(a) self) -> Tensor(a)
  output_differentiability: [False]
"""

TAGS = """
- tag: core
  desc: PyTorch knows this one.
- tag: fancy
  desc: Ours only.
- tag: inplace
  desc: Added to in-place variants.
- tag: out
  desc: Added to out= variants.
"""


def _inputs(tmp_yaml: YamlWriter, derivatives: str = DERIVATIVES) -> Inputs:
    return Inputs(
        tmp_yaml("native_functions.yaml", NATIVE),
        tmp_yaml("derivatives.yaml", derivatives),
        tmp_yaml("tags.yaml", TAGS),
        "myops",
    )


def _plans(inputs: Inputs) -> dict[str, InplaceOrViewPlan]:
    policy = load_policy()
    return {p.op: p for p in plan_inplace_or_view(build_plan(load_model(inputs), policy), policy)}


def test_schema_registration_of_the_library_ops(tmp_yaml: YamlWriter) -> None:
    model = load_model(_inputs(tmp_yaml))
    text = register_schema(plan_schemas(model.native_functions, load_policy()))
    assert text.count("TORCH_LIBRARY(myops, m) {") == 1
    assert '  m.def("twist(Tensor self) -> Tensor", {at::Tag::core});  // not a PyTorch tag: fancy' in text
    assert '  m.def("twist_(Tensor(a!) self) -> Tensor(a!)", {at::Tag::inplace});' in text
    assert '  m.def("twist.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", {at::Tag::out});' in text
    assert text.count("m.def(") == len(model.native_functions)


def test_out_variants_get_a_functionalize_kernel_instead_of_the_out_tag(tmp_yaml: YamlWriter) -> None:
    """With backend registrations (a build against torch): twist.out has a functional sibling, so it
    is registered without PyTorch's `out` tag (Inductor 2.13 lowers `twist` to a tagged out= overload
    wrongly: tests/test_pytorch_issues.py) and gets a Functionalize kernel calling `myops::twist`."""
    model = load_model(_inputs(tmp_yaml))
    (planned,) = plan_functionalize(model.native_functions)
    assert (planned.namespace, planned.out, planned.functional, planned.overload) == ("myops", "twist.out", "twist", "")
    text = register_schema(plan_schemas(model.native_functions, load_policy(), (planned,)))
    assert '  m.def("twist.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", {});' in text
    unit = register_functionalize((planned,))
    assert 'findSchemaOrThrow("myops::twist", "")' in unit
    registration = 'm.impl("twist.out", torch::CppFunction::makeFromBoxedFunction<&functionalize_twist_out>());'
    assert "TORCH_LIBRARY_IMPL(myops, Functionalize, m) {\n  " + registration + "\n}" in unit


def test_aten_schemas_are_left_to_libtorch(tmp_yaml: YamlWriter) -> None:
    native = tmp_yaml("aten.yaml", "- func: sin(Tensor self) -> Tensor\n  dispatch:\n    CPU: sin\n")
    model = load_model(Inputs(native, tmp_yaml("d.yaml", "- name: sin(Tensor self) -> Tensor\n  self: grad\n")))
    text = register_schema(plan_schemas(model.native_functions, load_policy()))
    assert "TORCH_LIBRARY(" not in text and "nothing to register" in text


def test_only_aten_kernels_include_the_redispatch_header(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    """An op library's kernels call through typed handles, so its units skip ATen/RedispatchFunctions.h
    (a parse every unit would pay); aten's kernels call at::redispatch:: and include it."""
    derivatives = tmp_yaml("d.yaml", "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n")
    for namespace in ("aten", "myops"):
        native = tmp_yaml(
            f"{namespace}.yaml",
            "- func: sin(Tensor self) -> Tensor\n- func: sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n",
        )
        out = tmp_path / namespace
        inputs = Inputs(native, derivatives, namespace=namespace)
        generate(inputs, GenerateOptions(str(out), shards=1, request=BuildRequest(namespace)))
        for unit in ("VariableType_0.cpp", "ADInplaceOrViewType_0.cpp"):
            text = (out / unit).read_text()
            assert ("#include <ATen/RedispatchFunctions.h>" in text) == (namespace == "aten"), (namespace, unit)
        calls = (out / "VariableType_0.cpp").read_text() + (out / "ADInplaceOrViewType_0.cpp").read_text()
        assert ("at::redispatch::sin(" in calls and "at::redispatch::sin_outf(" in calls) == (namespace == "aten")


def test_inplace_out_and_view_plans(tmp_yaml: YamlWriter) -> None:
    plans = _plans(_inputs(tmp_yaml))
    assert set(plans) == {"twist_", "twist.out", "peek", "peek_", "pieces", "mask_of", "fill_both_"}
    assert plans["fill_both_"].bumped == ("self", "other")  # returns nothing: bumps what it writes
    assert plans["twist_"].bumped == ("self",) and plans["twist_"].view is None
    assert plans["twist.out"].bumped == ("out",)
    assert plans["peek_"].view is None  # the in-place variant of a view mutates
    peek, pieces, mask = (plans[op].view for op in ("peek", "pieces", "mask_of"))
    assert peek is not None and (peek.base, peek.differentiable, peek.multi_output) == ("self", True, False)
    assert pieces is not None and pieces.multi_output
    assert mask is not None and not mask.differentiable  # output_differentiability: [False]


def _compile(source: Path, *include: Path) -> subprocess.CompletedProcess[str]:
    assert CXX is not None
    flags = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", *(f"-I{d}" for d in include)]
    return subprocess.run([CXX, *flags, str(source)], capture_output=True, text=True, check=False)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_new_files_compile_against_the_stubs_without_warnings(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    inputs = _inputs(tmp_yaml)
    out = tmp_path / "out"
    generate(inputs, GenerateOptions(str(out), shards=2, request=BuildRequest("myops", stub_decls=True)))
    sources = [out / "RegisterSchema.cpp", out / "ADInplaceOrViewType_0.cpp", out / "ADInplaceOrViewType_1.cpp"]
    assert "ViewFunc" in "".join(s.read_text() for s in sources)
    for source in sources:  # the stubs on -I, not -isystem: a warning in them fails too
        done = _compile(source, out, STUBS)
        assert done.returncode == 0, done.stderr


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_line_directives_point_a_compiler_error_at_the_yaml(
    tmp_yaml: YamlWriter, tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _inputs(tmp_yaml, DERIVATIVES.replace("grad * 2", "grad.no_such_method()"))
    args = ["--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives]
    args += ["--tags", str(inputs.tags), "--namespace", "myops", "--shards", "1", "--stub-decls"]
    plain, lined, again = tmp_path / "plain", tmp_path / "lined", tmp_path / "again"
    assert run_cli("generate", *args, "--out", str(plain)).code == 0
    assert "#line" not in (plain / "Functions_0.cpp").read_text()
    assert run_cli("generate", *args, "--line-directives", "--out", str(lined)).code == 0
    done = _compile(lined / "Functions_0.cpp", lined, STUBS)
    line = DERIVATIVES.strip().split("\n").index("  self: grad * 2") + 1
    assert re.search(rf"^{re.escape(inputs.derivatives)}:{line}:\d+: error:", done.stderr, re.M), done.stderr
    monkeypatch.chdir(tmp_path)  # another working directory, the same (absolute) inputs: the same bytes
    assert run_cli("generate", *args, "--line-directives", "--out", str(again)).code == 0
    for name in ("Functions_0.cpp", "VariableType_0.cpp"):
        assert (lined / name).read_bytes() == (again / name).read_bytes()


def test_incremental_runs_keep_the_new_files(tmp_yaml: YamlWriter) -> None:
    inputs = _inputs(tmp_yaml)
    options = GenerateOptions(str(Path(inputs.derivatives).parent / "out"), shards=2, request=BuildRequest("myops"))
    first = generate(inputs, options)
    kept = {"RegisterSchema.cpp", "ADInplaceOrViewType_0.cpp", "ADInplaceOrViewType_1.cpp"}
    assert kept <= set(first.written)
    Path(inputs.derivatives).write_text(Path(inputs.derivatives).read_text().replace("grad * 2", "grad * 3"))
    edited = generate(inputs, options)
    assert edited.mode == "incremental" and not kept & set(edited.written) and kept <= set(edited.outputs)
    Path(inputs.derivatives).write_text(Path(inputs.derivatives).read_text().replace("[False]", "[True]"))
    view_edit = generate(inputs, options)  # a view's differentiability decides its ADInplaceOrView kernel
    assert view_edit.mode == "full" and any("view op" in e for e in view_edit.explanations)
    assert "is_bw_differentiable */ true" in "".join(
        (Path(options.out_dir) / name).read_text() for name in kept if name.startswith("AD")
    )


# -- real torch: link and run ------------------------------------------------------------------
def _torch_flags() -> list[str]:
    include = installed_torch_include()
    code = "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
    abi = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    return ["-std=c++17", "-fPIC", "-O0", "-fvisibility=hidden", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
            f"-isystem{include}", f"-isystem{include / 'torch/csrc/api/include'}"]  # fmt: skip


def _run(library: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = PACKAGE / "runtime_checks.py"
    return subprocess.run([sys.executable, str(script), str(library), *args], capture_output=True, text=True,
                          check=False, timeout=600, env={**os.environ, **(env or {})})  # fmt: skip


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_whole_output_links_with_no_undefined_and_runs(torch_tree: TorchTree) -> None:
    """The sample's whole output plus two view ops, one shared library (conftest's torch_tree)."""
    code, log = torch_tree.build()
    assert code == 0, log  # an undefined symbol names what the generated code still needs
    ninja = (torch_tree.binary / "build.ninja").read_text()
    (link,) = [block for block in ninja.split("\nbuild ") if block.startswith("_vtsample_ops.so:")]
    assert "ADInplaceOrViewType_0.cpp.o" in link and "RegisterSchema.cpp.o" in link, link
    assert "-Wl,--no-undefined" in link and "-fvisibility=hidden" in ninja, link
    done = _run(torch_tree.library)
    assert done.returncode == 0 and "RUNTIME-OK" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_structured_op_with_keyword_scalar_passes_opcheck_and_inductor(torch_tree: TorchTree, tmp_path: Path) -> None:
    """cubic (structured, a keyword-only Scalar) and cubic.out: opcheck's four tests, and
    the default torch.compile backend with static and dynamic shapes equals eager (values and
    gradients).  With PyTorch's `out` tag on the out= variants Inductor 2.13 emitted
    `cubic.out(x, 0.7, scale=0.7, out=buf0)` (tests/test_pytorch_issues.py); the generated
    Functionalize kernels replace the tag.  A fresh Inductor cache: its key ignores the ops' tags."""
    code, log = torch_tree.build()
    assert code == 0, log
    schema = (torch_tree.binary / "vtgen" / "vtsample_ops" / "RegisterSchema.cpp").read_text()
    assert 'm.def("cubic.out(Tensor self, *, Scalar scale=1, Tensor(a!) out) -> Tensor(a!)", {});' in schema
    done = _run(torch_tree.library, "inductor", env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    assert done.returncode == 0 and "INDUCTOR-OK" in done.stdout, done.stdout + done.stderr[-4000:]


_CUBE = "  self: 3 * grad * (self * self).conj()"


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_a_wrong_formula_of_a_mutating_op_fails_gradcheck(torch_tree: TorchTree) -> None:
    """cube_ returns nothing: its gradient checks out through x.clone(), and fails with a wrong factor."""
    code, log = torch_tree.build()
    assert code == 0, log
    assert _run(torch_tree.library, "mutating-gradcheck").stdout.strip() == "GRADCHECK-OK"
    text = torch_tree.derivatives.read_text()
    assert _CUBE + "\n" in text
    torch_tree.derivatives.write_text(text.replace(_CUBE, _CUBE.replace("3 *", "2 *")))
    try:
        code, log = torch_tree.build()
        assert code == 0, log
        done = _run(torch_tree.library, "mutating-gradcheck")
    finally:
        torch_tree.derivatives.write_text(text)
    assert done.stdout.startswith("GRADCHECK-FAILED") and "Jacobian mismatch" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_an_aten_inplace_or_view_shard_compiles_against_the_real_headers(real_yaml: RealYaml, tmp_path: Path) -> None:
    """The shard holding transpose (views with replay functions, in-place and out= variants) of the real yaml."""
    assert CXX is not None
    out = tmp_path / "out"
    generate(real_yaml.inputs, GenerateOptions(str(out)))
    source = out / f"ADInplaceOrViewType_{shard_of(family('transpose'), 10)}.cpp"
    assert "transpose_int_ViewFunc" in source.read_text()
    warnings = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
    command = ["nice", CXX, *_torch_flags(), "-fsyntax-only", *warnings, str(source)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_every_aten_inplace_or_view_shard_compiles_against_the_stubs(real_yaml: RealYaml, tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate(real_yaml.inputs, GenerateOptions(str(out), shards=4, request=BuildRequest(stub_decls=True)))
    for k in range(4):
        done = _compile(out / f"ADInplaceOrViewType_{k}.cpp", out, STUBS)
        assert done.returncode == 0, done.stderr


def test_the_tags_we_register_are_at_tag_values() -> None:
    """The policy's tag list, the stub enum and (when torch is installed) the real enum agree."""

    def enum(path: Path) -> set[str]:
        body = re.search(r"enum class Tag \{(.*?)\};", path.read_text(), re.S)
        assert body is not None, path
        return {name.strip() for name in body.group(1).split(",") if name.strip()}

    assert enum(STUBS / "ATen/core/enum_tag.h") == set(load_policy().pytorch_tags)
    torch = installed_torch_dir()
    if torch is not None:
        real = torch / "include/torch/headeronly/core/enum_tag.h"
        if real.is_file():
            assert enum(real) == set(load_policy().pytorch_tags)
