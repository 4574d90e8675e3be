"""The stable-ABI mode (``--stable-abi``, ``STABLE_ABI``): what it generates, the errors at the yaml
line for what a target cannot carry, ``TORCH_TARGET_VERSION``'s packing, and (slow) the sample
built with CMake against the real torch headers, its ABI audit, ``torch-abi-audit``'s agreement,
and a kernel calling ``at::sin`` failing the build at its op.  The sample's runtime across PyTorch
releases is tests/test_stable_matrix.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from vtgen_build.plan.request import StableTarget, decode_target_version

from .conftest import ROOT, installed_torch_dir, installed_torch_include

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

STABLE_SAMPLE = ROOT / "sample_stable"


def _generate(
    run_cli: CliRunner, native: str, out: Path, *extra: str, derivatives: str | None = None
) -> tuple[int, str]:
    deriv = derivatives or str(Path(native).with_name("empty_derivatives.yaml"))
    if derivatives is None:
        Path(deriv).write_text("")
    result = run_cli(
        "generate", "--native-functions", native, "--derivatives", deriv, "--namespace", "st",
        "--out", str(out), "--register-backends", "CPU,Meta", "--torch-version", "2.13", *extra,
    )  # fmt: skip
    return result.code, result.err


# -- TORCH_TARGET_VERSION ----------------------------------------------------------------------------
def test_target_version_is_packed_as_torch_names_it() -> None:
    """(major << 56) | (minor << 48): 2.10 is 0x020a000000000000 -- not 0x0210... (the hex trap) --
    equal to torch's own TORCH_VERSION_2_10_0, and decoded back."""
    target = StableTarget(2, 10)
    assert target.macro == "0x020a000000000000ULL"
    assert decode_target_version(target.packed) == (2, 10)
    assert decode_target_version(0x0210000000000000) == (2, 16)  # what misreading the hex gives
    with pytest.raises(ValueError):
        decode_target_version(target.packed | 1)
    include = installed_torch_include("torch/csrc/stable/version.h")
    text = (include / "torch/csrc/stable/version.h").read_text()
    for major, minor in re.findall(r"#define TORCH_VERSION_(\d+)_(\d+)_0 ", text):
        expr = re.search(rf"#define TORCH_VERSION_{major}_{minor}_0 (.+)", text)
        assert expr is not None
        value = eval(expr.group(1).replace("0ULL", "0"))  # torch's own arithmetic: (((0 + 2) << 56) | ...)
        assert value == StableTarget(int(major), int(minor)).packed, (major, minor)


def test_generated_header_carries_the_target(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.11")
    assert code == 0, err
    header = (tmp_path / "out" / "NativeKernels.h").read_text()
    value = re.search(r"TORCH_TARGET_VERSION != (0x[0-9a-f]{16})ULL", header)
    assert value is not None and decode_target_version(int(value.group(1), 16)) == (2, 11)


# -- what the mode generates -----------------------------------------------------------------------
def test_sample_generates_stable_registrations_only(run_cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "generate", "--native-functions", str(STABLE_SAMPLE / "native_functions.yaml"),
        "--derivatives", str(STABLE_SAMPLE / "derivatives.yaml"), "--namespace", "vtstable", "--out", str(out),
        "--register-backends", "CPU,Meta", "--stable-abi", "2.10", "--torch-version", "2.13",
    )  # fmt: skip
    assert result.code == 0, result.err
    files = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert files == ["NativeKernels.h", "RegisterCPU.cpp", "RegisterMeta.cpp", "RegisterSchema.cpp"]  # no autograd C++
    text = {name: (out / name).read_text() for name in files}
    assert "at::" not in text["NativeKernels.h"] and "ATen" not in text["NativeKernels.h"]
    assert (
        "void softsign_meta(vtgen::stable::MetaOutputs & outputs, const torch::stable::Tensor & self);"
        in (text["NativeKernels.h"])
    )
    assert "affine_cpu(const torch::stable::Tensor & input, const torch::stable::Tensor & weight, " \
        "const ::std::optional<torch::stable::Tensor> & bias);" in text["NativeKernels.h"]  # fmt: skip
    assert "void clamp_abs_cpu(torch::stable::Tensor & self, double bound);" in text["NativeKernels.h"]
    assert (
        'STABLE_TORCH_LIBRARY(vtstable, m) {\n  m.def("softsign(Tensor self) -> Tensor");' in text["RegisterSchema.cpp"]
    )
    cpu, meta = text["RegisterCPU.cpp"], text["RegisterMeta.cpp"]
    assert (
        "STABLE_TORCH_LIBRARY_IMPL(vtstable, CPU, m)" in cpu
        and 'm.impl("softsign_", TORCH_BOX(&vtstable_softsign__CPU));' in cpu
    )
    assert "vtstable::softsign_out(self, out);" in cpu and "vtstable::softsign_out(" not in meta
    assert 'm.impl("sincos", TORCH_BOX(' in meta and "sincos_meta" in meta
    assert "outputs_.resize_out(0, out);" in meta  # the out= variant's Meta kernel, from the meta function alone


def test_stable_runs_are_byte_identical(run_cli: CliRunner, tmp_path: Path) -> None:
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        result = run_cli(
            "generate", "--native-functions", str(STABLE_SAMPLE / "native_functions.yaml"),
            "--derivatives", str(STABLE_SAMPLE / "derivatives.yaml"), "--namespace", "vtstable", "--out", str(out),
            "--register-backends", "CPU,Meta", "--stable-abi", "2.10", "--torch-version", "2.13",
        )  # fmt: skip
        assert result.code == 0, result.err
        outs.append({p.name: p.read_bytes() for p in out.iterdir() if p.suffix in (".h", ".cpp")})
    assert outs[0] == outs[1]


# -- errors ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "line", "message"),
    [
        (
            "- func: scaled(Tensor self, Scalar alpha) -> Tensor\n  dispatch:\n    CPU: scaled\n",
            1,
            "st::scaled: argument 'alpha': 'Scalar' cannot be a stable-ABI kernel argument (a StableIValue carries "
            "no Scalar: write `float` (or `int`) and convert in the kernel)",
        ),
        (
            "- func: grow(Tensor self, SymInt n) -> Tensor\n  dispatch:\n    CPU: grow\n",
            1,
            "st::grow: argument 'n': 'SymInt' cannot be a stable-ABI kernel argument (a stable kernel gets no "
            "symbolic ints: write `int` (torch.compile then specializes on it))",
        ),
        (
            "- func: ok(Tensor self) -> Tensor\n  dispatch:\n    CPU: ok\n"
            "- func: noisy(Tensor self, Generator? gen=None) -> Tensor\n  dispatch:\n    CPU: noisy\n",
            4,
            "st::noisy: argument 'gen': 'Generator?' cannot be a stable-ABI kernel argument (vtgen_build's stable "
            "mode passes no Generator (torch::stable::Generator needs 2.13): take a seed as `int`)",
        ),
        (
            "- func: pointy(Tensor self) -> Tensor\n  tags: pointwise\n  dispatch:\n    CPU: pointy\n",
            1,
            "tags: pointwise: a stable-ABI schema carries tags from stable-abi 2.12 on (StableLibrary::def with "
            "tags); at 2.10, remove 'tags:' or raise the target",
        ),
        (  # accepted once, and failed opcheck's test_aot_dispatch_dynamic
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CPU: f_out\n",
            1,
            "st::f.out: returns 'Tensor(a!)': a stable-ABI op cannot return a tensor it writes (torch.compile and "
            "opcheck's test_aot_dispatch_dynamic functionalize a mutating custom op only when it returns nothing); "
            "write '-> ()': callers still get the result in the argument",
        ),
        (  # a structured group's in-place variant, at its own line
            "- func: f(Tensor self) -> Tensor\n  structured_delegate: f.out\n"
            "- func: f_(Tensor(a!) self) -> Tensor(a!)\n  structured_delegate: f.out\n"
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> ()\n  structured: True\n  dispatch:\n    CPU: f_out\n",
            3,
            "st::f_: returns 'Tensor(a!)': a stable-ABI op cannot return a tensor it writes (torch.compile and "
            "opcheck's test_aot_dispatch_dynamic functionalize a mutating custom op only when it returns nothing); "
            "write '-> ()': callers still get the result in the argument",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> ()\n  structured: True\n"
            "  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU: f_out\n",
            1,
            "structured_inherits: TensorIteratorBase: the stable ABI has no TensorIterator or precomputed fields; "
            "drop it (the meta function decides sizes, dtype and device)",
        ),
    ],
)
def test_what_the_target_cannot_carry_fails_at_the_yaml_line(
    entry: str, line: int, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", entry)
    tags = tmp_yaml("tags.yaml", "- tag: pointwise\n  desc: x\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--tags", tags)
    assert code == 1
    assert err.strip() == f"{native}:{line}: error: {message}", err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("2.9", "--stable-abi: 2.9 is older than the first release with the LibTorch stable ABI (2.10); target "
                "2.10 or newer, or build without the stable ABI for one release"),
        ("2.14", "--stable-abi: 2.14 is newer than the torch this build compiles against (2.13): its headers cannot "
                 "target a release they predate (PyTorch would only fail when the library loads); target 2.13 or "
                 "older, or build against torch 2.14"),
        ("2.x", "--stable-abi: '2.x' is not a release X.Y (e.g. 2.10)"),
    ],
)  # fmt: skip
def test_bad_targets(target: str, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", target)
    assert code == 1 and err.strip() == f"vtgen-build: error: {message}", err


def test_fake_module_needs_2_13(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    code, err = _generate(run_cli, native, tmp_path / "a", "--stable-abi", "2.10", "--fake-module", "st._fake")
    assert code == 1 and "--fake-module needs stable-abi 2.13 or newer" in err, err
    code, err = _generate(run_cli, native, tmp_path / "b", "--stable-abi", "2.13", "--fake-module", "st._fake")
    assert code == 0, err
    assert 'm.set_python_module("st._fake");' in (tmp_path / "b" / "RegisterSchema.cpp").read_text()


def test_an_unsupported_type_in_native_functions_alone_is_said_before_derivatives(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """`Tensor weight` edited to `Scalar weight` in native_functions.yaml only: the derivatives.yaml entry no
    longer matches, and its did-you-mean suggested writing the unsupported `Scalar` there too. The stable
    error comes first, at the native_functions.yaml line."""
    native = tmp_yaml("nf.yaml", "- func: scale(Tensor self, Scalar weight) -> Tensor\n  dispatch:\n    CPU: scale\n")
    derivatives = tmp_yaml("d.yaml", "- name: scale(Tensor self, Tensor weight) -> Tensor\n  self: grad * weight\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", derivatives=derivatives)
    assert code == 1 and err.startswith(f"{native}:1: error: st::scale: argument 'weight': 'Scalar' cannot be"), err
    assert "did you mean" not in err and str(derivatives) not in err, err


def test_concrete_sizes_in_formulas_are_taken_by_the_python_autograd(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """`.size(-1)`, `.sizes()` and `.strides()` are what the C++ API spells; a stable library's formulas go to the
    Python autograd only, where a size is a SymInt either way: taken (once only `sym_size(-1)` was). The C++
    autograd still refuses them, at the line with the column."""
    native = tmp_yaml("nf.yaml", "- func: scale(Tensor self, Tensor other) -> Tensor\n  dispatch:\n    CPU: scale\n")
    formula = "grad * self.size(-1) * other.sizes()[0] * self.strides()[0]"
    derivatives = tmp_yaml("d.yaml", f"- name: scale(Tensor self, Tensor other) -> Tensor\n  self: {formula}\n")
    module = tmp_path / "_autograd.py"
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--python-autograd", str(module),
                          derivatives=derivatives)  # fmt: skip
    assert code == 0, err
    text = module.read_text()
    assert "= self.size((-1))" in text and "= other.shape" in text and "_strides_or_error(self" in text, text
    compile(text, str(module), "exec")
    code, err = _generate(run_cli, native, tmp_path / "cpp", derivatives=derivatives)
    assert code == 1 and err.startswith(f"{derivatives}:2: error: .size(int) is not supported in C++ autograd "
                                        "formulas (column 12 of the formula"), err  # fmt: skip


def test_derivatives_are_still_checked(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """No C++ autograd in stable mode, but derivatives.yaml is not ignored: a wrong entry is an error."""
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    derivatives = tmp_yaml("d.yaml", "- name: twice(Tensor self) -> Tensor\n  slef: grad * 2\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", derivatives=derivatives)
    assert code == 1 and f"{derivatives}:2: error:" in err and "slef" in err, err


# -- slow: the sample built with CMake against the real torch headers, and its ABI audit ------------
# torch's own headers refuse ATen/ATen.h under TORCH_TARGET_VERSION; a source that undefines it (or
# is compiled with other flags, or a static library built elsewhere) gets past the compiler: the
# audit after linking is what catches it.
ATEN_KERNEL = """\
// A kernel that reaches past the stable ABI: libtorch's C++ API through ATen.
#include "NativeKernels.h"
#undef TORCH_TARGET_VERSION
#include <ATen/ATen.h>

namespace vtstable {
torch::stable::Tensor aten_sin_cpu(const torch::stable::Tensor& self) {
  at::Tensor t = at::sin(at::ones({2}));
  (void)t;
  return torch::stable::clone(self);
}
} // namespace vtstable
"""


def _cmake_build(source: Path, build: Path) -> subprocess.CompletedProcess[str]:
    if not build.exists():
        configure = subprocess.run(
            ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", f"-DPython_EXECUTABLE={sys.executable}",
             f"-Dvtgen_build_DIR={ROOT / 'cmake'}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert configure.returncode == 0, configure.stdout + configure.stderr
    return subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def stable_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A copy of sample_stable and its CMake build (source, build directory, build output)."""
    if shutil.which("cmake") is None or shutil.which("ninja") is None or installed_torch_dir() is None:
        pytest.skip("needs cmake, ninja and torch")
    base = tmp_path_factory.mktemp("stable")
    source = base / "src"
    shutil.copytree(STABLE_SAMPLE, source, ignore=shutil.ignore_patterns("build"))
    result = _cmake_build(source, base / "build")
    assert result.returncode == 0, result.stdout + result.stderr
    return source, base / "build", result.stdout


@pytest.mark.slow
def test_sample_passes_the_audit_and_torch_abi_audit_agrees(stable_build: tuple[Path, Path, str]) -> None:
    _, build, output = stable_build
    library = build / "_vtstable_ops.so"
    assert re.search(r"abi-audit: _vtstable_ops.so: all \d+ undefined symbols are stable C-shim", output), output
    if shutil.which("torch-abi-audit") is None:
        pytest.skip("torch-abi-audit is not installed (pip install torch-abi-audit)")
    report = subprocess.run(["torch-abi-audit", "--json", "-v", str(library)], capture_output=True, text=True)
    verdict = json.loads(report.stdout)["bundled_libs"][0]["torch"]
    assert verdict["uses_torch"] and verdict["stable"] and verdict["unstable_symbols"] == [], verdict
    assert verdict["min_torch_version"] == "2.10.0", verdict  # the target, seen from the symbols alone


@pytest.mark.slow
def test_the_matrix_checks_fail_on_a_wrong_fake(stable_build: tuple[Path, Path, str], tmp_path: Path) -> None:
    """The release matrix's child (tests/stable_matrix_child.py) is not a rubber stamp: a Python fake
    returning the wrong shape fails opcheck for that op, and only for it."""
    source, build, _ = stable_build
    package = tmp_path / "site" / "vtstable"
    shutil.copytree(source / "src" / "vtstable", package)
    shutil.copy(build / "_vtstable_ops.so", package)
    shutil.copytree(build / "vtgen" / "vtstable_ops" / "python_api", package / "ops")
    fake = package / "_fake.py"
    right = "    return torch.empty_like(input)"
    fake.write_text(fake.read_text().replace(right, "    return input.new_empty(input.shape[:-1])"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"PYTHONPATH": str(tmp_path / "site")}
    child = ROOT / "tests" / "stable_matrix_child.py"
    done = subprocess.run(
        [sys.executable, str(child), "opcheck:"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])["results"]
    failed = sorted(name for name, r in results.items() if not r["ok"])
    assert failed == ["opcheck:affine", "opcheck:affine(bias=None)"], results
    assert "test_faketensor" in results["opcheck:affine"]["detail"], results["opcheck:affine"]


@pytest.mark.slow
def test_a_kernel_calling_at_sin_fails_the_build_at_its_op(stable_build: tuple[Path, Path, str]) -> None:
    source, build, _ = stable_build
    native = source / "native_functions.yaml"
    text = native.read_text()
    native.write_text(text + "\n- func: aten_sin(Tensor self) -> Tensor\n  dispatch:\n    CPU: aten_sin_cpu\n")
    line = text.count("\n") + 4  # the `CPU: aten_sin_cpu` line
    (source / "src" / "aten_kernel.cpp").write_text(ATEN_KERNEL)
    cmake = source / "CMakeLists.txt"
    cmake.write_text(cmake.read_text().replace("src/kernels.cpp)", "src/kernels.cpp src/aten_kernel.cpp)"))
    try:
        result = _cmake_build(source, build)
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert re.search(
            rf"native_functions.yaml:{line}: error: 'at::_ops::sin::call\(at::Tensor const&\)' is not in libtorch's "
            r"stable C shim \(referenced in aten_kernel.cpp.o\); pulled in by the CPU kernel of vtstable::aten_sin",
            output,
        ), output
        rejected = build / "_vtstable_ops.so.rejected"
        assert not (build / "_vtstable_ops.so").exists() and rejected.exists()
        if shutil.which("torch-abi-audit") is not None:
            named = shutil.copy(rejected, build / "rejected_copy.so")  # the tool looks at *.so files only
            report = subprocess.run(["torch-abi-audit", "--json", "-v", str(named)], capture_output=True, text=True)
            verdict = json.loads(report.stdout)["bundled_libs"][0]["torch"]
            assert not verdict["stable"] and any("at::_ops::sin::call" in s for s in verdict["unstable_symbols"])
    finally:
        native.write_text(text)
        cmake.write_text(cmake.read_text().replace(" src/aten_kernel.cpp)", ")"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"stable-abi": "2.10"}, "'stable-abi' needs 'register-backends'"),
        ({"stable-abi": "2.10", "register-backends": ["CPU"]}, "'check' cannot compile a stable-ABI library"),
        ({"stable-abi": "2.9", "register-backends": ["CPU"], "check": False}, "'stable-abi': 2.9 is older than"),
    ],
)
def test_setuptools_key(extra: dict[str, object], message: str) -> None:
    from vtgen_build.setuptools_hook import ConfigError, read_settings

    base = {"native-functions": "n.yaml", "derivatives": "d.yaml", "output-dir": "src/p/gen"}
    with pytest.raises(ConfigError, match=re.escape(message)):
        read_settings({**base, **extra})
    ok = read_settings({**base, "stable-abi": "2.10", "register-backends": ["CPU"], "check": False})
    assert ok.stable_abi == StableTarget(2, 10)


def test_options_that_only_shape_autograd_are_refused(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--manual-header", "h.h")
    assert code == 1 and "--manual-header does not apply with --stable-abi" in err, err
    code, err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--stub-decls")
    assert code == 1 and "--stub-decls does not apply with --stable-abi" in err, err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("STABLE_ABI 2.9 REGISTER_BACKENDS CPU", "STABLE_ABI: 2.9 is older than the first release with the LibTorch"),
        ("STABLE_ABI 9.1 REGISTER_BACKENDS CPU", "STABLE_ABI: 9.1 is newer than the torch this build compiles against"),
        ("STABLE_ABI 2.10", "STABLE_ABI needs REGISTER_BACKENDS"),
        ("STABLE_ABI 2.10 REGISTER_BACKENDS CPU USE_TORCH",
         "STABLE_ABI builds against torch's stable headers only; drop USE_TORCH"),
    ],
)  # fmt: skip
def test_cmake_refuses_bad_stable_targets_when_it_configures(arguments: str, message: str, tmp_path: Path) -> None:
    if shutil.which("cmake") is None or installed_torch_dir() is None:
        pytest.skip("needs cmake and torch")
    source = tmp_path / "src"
    source.mkdir()
    (source / "nf.yaml").write_text("- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n")
    (source / "d.yaml").write_text("")
    (source / "k.cpp").write_text("")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(t LANGUAGES CXX)\nfind_package(vtgen_build CONFIG REQUIRED)\n"
        "add_library(t MODULE k.cpp)\n"
        f"vtgen_generate(t NATIVE_FUNCTIONS nf.yaml DERIVATIVES d.yaml NAMESPACE st {arguments})\n"
    )
    done = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(tmp_path / "b"), f"-DPython_EXECUTABLE={sys.executable}",
         f"-Dvtgen_build_DIR={ROOT / 'cmake'}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and f"vtgen_generate(): {message}" in output, output
