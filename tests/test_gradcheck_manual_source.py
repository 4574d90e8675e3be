"""``check --gradcheck`` on a PyTorch source checkout: its FunctionsManual.cpp is built into the library.

The checkout is made here: the real yaml (sin's formula calling ``handle_r_to_c``, a
helper the wheel declares but libtorch does not export) and a FunctionsManual.cpp of
the test's own defining that helper (written, like PyTorch's, against torch's own
generated/Functions.h).  One checkout and one output directory serve
both tests, so the kernel unit is compiled once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from vtgen_build.gradcheck.manual_source import MANUAL_SOURCE, ManualSource, find_manual_source
from vtgen_build.torchlib.build import CompiledUnit

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

SIN = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos().conj()\n"
FORMULA = "grad * self.cos().conj()"
SIN_VIA_HELPER = SIN.replace(FORMULA, f"handle_r_to_c(self.scalar_type(), {FORMULA})")

# The helper the edited formula calls; it also logs each call to the file $VTGEN_TEST_HELPER_LOG names,
# so the test sees that this definition (not some other) ran.
GOOD = """#include <torch/csrc/autograd/FunctionsManual.h>
#include <cstdio>
#include <cstdlib>

namespace torch::autograd::generated::details {
const char* kCudnnDoubleBackwardMsg = "the test checkout's message";

at::Tensor handle_r_to_c(at::ScalarType self_st, at::Tensor gradient_result) {
  if (const char* log = std::getenv("VTGEN_TEST_HELPER_LOG")) {
    if (std::FILE* f = std::fopen(log, "a")) {
      std::fputs("handle_r_to_c\\n", f);
      std::fclose(f);
    }
  }
  // fmap unqualified (and out of ADL's reach: a std:: argument), as PyTorch's file writes it: torch's own
  // generated/Functions.h declares it for this namespace, the check build's shadow of it does not
  std::vector<int64_t> dims(gradient_result.sizes().begin(), gradient_result.sizes().end());
  std::vector<int64_t> sizes = fmap(dims, [](int64_t s) { return s; });
  TORCH_CHECK(sizes.size() == static_cast<size_t>(gradient_result.dim()));
  if (!at::isComplexType(self_st) && gradient_result.is_complex()) {
    return at::real(gradient_result);
  }
  return gradient_result;
}
} // namespace torch::autograd::generated::details
"""

BROKEN = """#include <torch/csrc/autograd/FunctionsManual.h>

namespace torch::autograd::generated::details {
at::Tensor handle_r_to_c(at::ScalarType self_st, at::Tensor gradient_result) {
  return helper_this_torch_lacks(gradient_result);
}
} // namespace torch::autograd::generated::details
"""


@dataclass(frozen=True)
class Checkout:
    root: Path
    out: Path

    @property
    def manual_source(self) -> Path:
        return self.root / MANUAL_SOURCE

    def gradcheck(self, source: str, log: Path, *more: str) -> subprocess.CompletedProcess[str]:
        self.manual_source.write_text(source, encoding="utf-8")
        args = ["check", "--pytorch-root", str(self.root), "--out", str(self.out), "--gradcheck", "--op", "sin", *more]
        env = {**os.environ, "VTGEN_TEST_HELPER_LOG": str(log)}
        command = [sys.executable, "-m", "vtgen_build", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False, env=env)


@pytest.fixture(scope="session")
def checkout(real_yaml: RealYaml, tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    """A PyTorch source checkout's layout holding the real yaml, sin's formula calling a hidden helper."""
    root = tmp_path_factory.mktemp("pytorch-checkout")
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(real_yaml.native_functions, native / "native_functions.yaml")
    shutil.copy(real_yaml.tags, native / "tags.yaml")
    derivatives = real_yaml.derivatives.read_text(encoding="utf-8")
    assert derivatives.count(SIN) == 1
    (root / "tools/autograd").mkdir(parents=True)
    (root / "tools/autograd/derivatives.yaml").write_text(derivatives.replace(SIN, SIN_VIA_HELPER), encoding="utf-8")
    header = real_yaml.torchgen_dir.parent / "torch/include/torch/csrc/autograd/FunctionsManual.h"
    (root / "torch/csrc/autograd").mkdir(parents=True)
    shutil.copy(header, root / "torch/csrc/autograd/FunctionsManual.h")
    return Checkout(root, tmp_path_factory.mktemp("gradcheck-out"))


def test_a_failed_compile_is_told_at_its_first_error(tmp_path: Path) -> None:
    source = ManualSource(tmp_path / MANUAL_SOURCE)
    diagnostics = (
        f"In file included from {tmp_path}/sources/vtgen_functions_manual.cpp:2:\n"
        f"{source.path}: In function 'at::Tensor f()':\n"
        f"{source.path}:973:24: error: 'fmap' was not declared in this scope\n"
        f"{source.path}:990:1: error: a later one\n"
    )
    failed = CompiledUnit(source.unit()[0], None, "", True, 1.0, diagnostics)
    told = source.summary((failed,), "2.13.0").splitlines()
    assert told[0] == f"{source.path}:973: error: 'fmap' was not declared in this scope"
    assert "against torch 2.13.0" in told[1] and "left out" in told[1]
    cached = CompiledUnit(source.unit()[0], tmp_path / "x.o", "d", False, 0.0, "")
    assert (
        source.summary((cached,), "2.13.0")
        == f"helpers libtorch does not export: from the checkout's {source.path} (cached)"
    )


@pytest.mark.torch
def test_only_a_source_checkout_has_a_manual_source(checkout: Checkout, real_yaml: RealYaml) -> None:
    checkout.manual_source.write_text(GOOD, encoding="utf-8")
    found = find_manual_source(str(checkout.root))
    assert found is not None and found.path == checkout.manual_source.resolve()
    assert find_manual_source(str(real_yaml.torchgen_dir)) is None  # an installed torchgen package
    assert find_manual_source(None) is None


@pytest.mark.slow
@pytest.mark.torch
@needs_gxx
def test_the_checkouts_helper_links_and_runs(checkout: Checkout, tmp_path: Path) -> None:
    log = tmp_path / "helper-calls.txt"
    run = checkout.gradcheck(GOOD, log)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"helpers libtorch does not export: from the checkout's {checkout.manual_source.resolve()}" in run.stdout
    assert "passed backward 1, forward-AD 1, gradgrad 1, forward-over-reverse 1; failed 0" in run.stdout
    assert "not run: sin:" not in run.stdout and "not run: sin_:" not in run.stdout
    assert "ops: passed 2, failed 0, not run 1" in run.stdout  # sin and sin_; sin.out has no OpInfo
    assert "handle_r_to_c" in log.read_text(encoding="utf-8")  # the checkout's definition ran


@pytest.mark.slow
@pytest.mark.torch
@needs_gxx
def test_a_manual_source_that_does_not_compile_is_reported_and_left_out(checkout: Checkout, tmp_path: Path) -> None:
    log = tmp_path / "helper-calls.txt"
    run = checkout.gradcheck(BROKEN, log)
    assert run.returncode == 0, run.stdout + run.stderr  # the run goes on without it
    assert "Traceback" not in run.stdout + run.stderr
    first = next(line for line in run.stdout.splitlines() if ": error: " in line)
    assert first.startswith(f"{checkout.manual_source.resolve()}:5: error: ")
    assert "helper_this_torch_lacks" in first
    assert "against torch" in run.stdout and "the checkout's helpers are left out" in run.stdout
    # sin then calls libtorch's own (hidden) handle_r_to_c, bound from its symbol table
    assert "calling 1 helpers libtorch hides, bound from its symbol table" in run.stdout
    assert "ops: passed 2, failed 0, not run 1" in run.stdout
    assert not log.exists()
    unbound = checkout.gradcheck(BROKEN, log, "--no-bind-hidden")
    assert unbound.returncode == 3, unbound.stdout + unbound.stderr  # sin left unverified
    assert "not run: sin: needs symbols libtorch does not export: " in unbound.stderr
    assert "handle_r_to_c" in unbound.stderr and not log.exists()


@pytest.mark.torch
def test_the_python_tier_leaves_an_entry_calling_the_checkouts_helpers_unverified(checkout: Checkout) -> None:
    """The Python tier's helpers mirror the installed torch's FunctionsManual.cpp: given this checkout (its own
    FunctionsManual.cpp), sin (calling handle_r_to_c here) is not carried, so never passed by that tier."""
    from vtgen_build.gradcheck.python_tier_run import TierOptions, _plan
    from vtgen_build.inputs.files import Inputs
    from vtgen_build.model.schema import op_selection

    checkout.manual_source.write_text(GOOD, encoding="utf-8")
    native = checkout.root / "aten/src/ATen/native"
    inputs = Inputs(str(native / "native_functions.yaml"), str(checkout.root / "tools/autograd/derivatives.yaml"),
                    str(native / "tags.yaml"))  # fmt: skip
    plan = _plan(inputs, "2.13", TierOptions(op_selection(["sin"], "aten"), pytorch_root=str(checkout.root)))
    why = {n.op: n.why for n in plan.not_carried}
    assert "sin" not in plan.carried and "its own FunctionsManual.cpp" in why.get("sin", ""), why
