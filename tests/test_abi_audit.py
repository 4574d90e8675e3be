"""The stable-ABI audit (``vtgen-build abi-audit``) on small libraries compiled here (one g++ compile each,
no torch headers: a stand-in shim header names the allowed functions).  Issue 44, item 19: an OpenMP
kernel uses the compiler's runtime (libgomp, which the torch wheel ships), not libtorch's C++ API; a
library's own dependency can be allowed; libtorch's libraries cannot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import CliRunner

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++ and nm")

KERNELS = """\
#pragma once
namespace lib {
// native_functions.yaml:3: CPU kernel of lib::scale
void scale_cpu(double* x, long n);
// native_functions.yaml:7: CPU kernel of lib::blas_scale
void blas_scale_cpu(double* x, long n);
}  // namespace lib
"""

SOURCE = """\
extern "C" int aoti_torch_stand_in(void);
extern "C" void dep_scale(double* x, long n);  // the op library's own dependency
namespace lib {
__attribute__((visibility("default"))) void scale_cpu(double* x, long n) {
  aoti_torch_stand_in();
#pragma omp parallel for
  for (long i = 0; i < n; ++i) x[i] *= 2.0;
}
__attribute__((visibility("default"))) void blas_scale_cpu(double* x, long n) {
  %s
}
}  // namespace lib
"""


def _build(tmp: Path, name: str, blas: str) -> tuple[list[str], Path]:
    """A library of two kernels (an OpenMP loop; ``blas``: the other's body), and the audit's arguments."""
    shim = tmp / "include" / "torch" / "csrc" / "stable" / "c"
    shim.mkdir(parents=True, exist_ok=True)
    (shim / "shim.h").write_text("AOTI_TORCH_EXPORT int aoti_torch_stand_in(void);\n")
    (tmp / "NativeKernels.h").write_text(KERNELS)
    source, obj, library = tmp / f"{name}.cpp", tmp / f"{name}.o", tmp / f"lib{name}.so"
    source.write_text(SOURCE % blas)
    gxx = shutil.which("g++") or "g++"
    subprocess.run([gxx, "-fPIC", "-fopenmp", "-ffunction-sections", "-c", str(source), "-o", str(obj)], check=True)
    subprocess.run([gxx, "-shared", "-fopenmp", "-o", str(library), str(obj)], check=True)
    args = ["abi-audit", str(library), "--kernels", str(tmp / "NativeKernels.h"), "--torch-include"]
    return [*args, str(tmp / "include"), "--objects", str(obj), "--keep"], library


def test_an_openmp_kernel_passes(tmp_path: Path, run_cli: CliRunner) -> None:
    args, library = _build(tmp_path, "omp", "")
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True).stdout
    assert "GOMP_parallel" in undefined  # the compiler's OpenMP runtime, as the torch wheel's own code uses
    done = run_cli(*args)
    assert done.code == 0, done.err
    assert "undefined symbols are stable C-shim functions or C/C++ runtime" in done.out


def test_a_dependency_is_named_as_such_and_can_be_allowed(tmp_path: Path, run_cli: CliRunner) -> None:
    args, _ = _build(tmp_path, "dep", "dep_scale(x, n);")
    refused = run_cli(*args)
    assert refused.code == 1
    said = "native_functions.yaml:7: error: 'dep_scale' is neither libtorch's stable C shim nor the C/C++ or compiler "
    assert said in refused.err, refused.err
    assert "pulled in by the CPU kernel of lib::blas_scale" in refused.err and "C++ API" not in refused.err
    assert run_cli(*args, "--allow", "dep_*").code == 0
    dependency = tmp_path / "libdep.so"
    (tmp_path / "dep_impl.c").write_text("void dep_scale(double* x, long n) { (void)x; (void)n; }\n")
    subprocess.run([shutil.which("gcc") or "gcc", "-shared", "-fPIC", "-o", str(dependency),
                    str(tmp_path / "dep_impl.c")], check=True)  # fmt: skip
    allowed = run_cli(*args, "--allow-library", str(dependency))
    assert allowed.code == 0 and "or allowed" in allowed.out, allowed.err
    torch_named = tmp_path / "libtorch_cpu.so"
    shutil.copy(dependency, torch_named)
    refused = run_cli(*args, "--allow-library", str(torch_named))
    assert refused.code == 1 and "libtorch's own libraries are what the audit checks against" in refused.err
