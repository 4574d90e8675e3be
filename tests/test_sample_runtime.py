"""The sample op library at run time, against the real torch 2.13 wheel.

``pip install --no-build-isolation -e ./sample_project`` (the documented dev loop) into a fresh
venv builds the whole generated output (the backend registrations and the structured ops'
kernels too) with the sample's kernels and meta functions into one shared library, with the
defaults (precompiled headers, shards from the op count, Release), linked with
``--no-undefined`` against the wheel's libraries; ``import vtsample`` loads it (and its Python
fake kernels) and every check of tests/sample_checks.py (gradcheck, gradgradcheck, forward AD,
in-place, views, out=, errors; opcheck on every op and variant, torch.compile with dynamic
False/True, torch.export) runs in one child process.  Then a formula edit: the next ``import
vtsample`` rebuilds only the units whose text changed, and the new formula runs.  A CMake build
of a copy with a wrong formula shows the checks can fail, and a formula that does not compile
fails the build at its yaml line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import (
    ROOT,
    SAMPLE,
    TorchTree,
    clean_env,
    copy_sample,
    install_wheel,
    nested_venv,
    run_clean,
    sample_inputs,
)
from .test_gradcheck_library import library_check

pytestmark = [pytest.mark.slow, pytest.mark.torch]

CHECKS = Path(__file__).resolve().parent / "sample_checks.py"
# every sample op and variant (tests/sample_checks.py OPCHECK_CASES)
OPCHECKED = (
    *("softsign", "softsign_", "softsign_out", "scale_add", "scale_add_", "scale_add_out", "topk_abs"),
    *("stack_mean", "affine", "tile_to", "swap_dims", "soft_quantize"),
)
NAMES = (
    "forward_values",
    "softsign_kernel_one_pass",
    "softsign_gradients",
    "scale_add_gradients",
    "topk_abs_gradients",
    "stack_mean_gradients",
    "affine_gradients",
    "affine_without_bias_gradients",
    "tile_to_gradients",
    "swap_dims_gradients",
    "soft_quantize_gradients",
    "complex_is_refused",
    "inplace_gradients",
    "inplace_on_saved_input_is_detected",
    "inplace_on_leaf_is_refused",
    "out_with_grad_is_refused",
    "view_aliases_and_rebases",
    "not_implemented_names_the_op",
    "missing_forward_formula_names_the_entry",
    "non_differentiable_output",
    # PyTorch's own custom-op tests (issue 20): opcheck per op and variant, torch.compile, export
    *(f"opcheck_{op}" for op in OPCHECKED),
    "compile_static_equals_eager",
    "compile_dynamic_equals_eager",
    "export_three_ops",
    "export_save_load_in_fresh_process",
    "aoti_package_loads_in_fresh_process",
    "aoti_missing_shim_is_detected",
    "view_op_refused_by_compile",
    "out_variant_compiles",
    "inplace_in_compile_style_compiles",
    "structured_meta_error_same_under_fake_tensors",
    # autocast from the yaml's `autocast:` policies (issue 46)
    "autocast_fp32_runs_in_float32",
    "autocast_promote_runs_in_the_widest_type",
    "autocast_lower_runs_in_the_autocast_dtype",
    "autocast_only_ops_with_a_policy",
)


def _require_torch() -> None:
    pytest.importorskip("torch")
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _run_checks(python: Path, cwd: Path, *args: str | Path) -> dict[str, str | None]:
    code, out = run_clean([python, CHECKS, *args], cwd)
    assert code == 0, out
    results: dict[str, str | None] = json.loads(out.strip().splitlines()[-1])
    return results


@dataclass(frozen=True)
class InstalledSample:
    venv: Path
    source: Path  # the copy of the sample the editable install builds from
    build_dir: Path  # scikit-build-core's build/<wheel tag> of that copy
    log: str


@pytest.fixture(scope="session")
def installed_sample(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledSample:
    """A fresh venv with the sample installed the way sample_project/README.md's dev loop does:
    editable, no build isolation (scikit-build-core's ``editable.rebuild``).  The venv sees the
    machine's torch, scikit-build-core and PyYAML (conftest.nested_venv) and imports vtgen_build
    from the wheel of this checkout, installed into it (conftest.install_wheel).
    test_formula_edit_rebuilds_on_import edits the copy's formula last (after runtime_results) and
    leaves it edited, the library rebuilt to match."""
    _require_torch()
    pytest.importorskip("scikit_build_core")
    tmp = tmp_path_factory.mktemp("runtime")
    sample = copy_sample(tmp / "sample")
    venv = tmp / "venv"
    python = nested_venv(venv, tmp)
    install_wheel(python, wheelhouse, "vtgen_build", tmp)
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "-v", "--no-index"]
    code, log = run_clean([*pip, "--no-deps", "--no-build-isolation", "-e", sample], tmp)
    assert code == 0, log[-6000:]
    # A default build prints no compiler warning (g++: `file:line:col: warning: ...`).
    assert "warning:" not in log, log[-6000:]
    (build_dir,) = (sample / "build").iterdir()
    return InstalledSample(venv, sample, build_dir, log)


@pytest.fixture(scope="session")
def runtime_results(installed_sample: InstalledSample) -> dict[str, str | None]:
    return _run_checks(_python(installed_sample.venv), installed_sample.venv)


def test_one_library_links_against_the_wheel(installed_sample: InstalledSample) -> None:
    """The installed library holds every generated unit and our kernels (one shard per kind: the
    default for 12 ops), linked with --no-undefined (so all it needs is exported by
    torch_cpu/c10) and -Bsymbolic, hidden by default; the shared headers precompiled, -O3 (the
    generated units -O1 after it)."""
    ninja = (installed_sample.build_dir / "build.ninja").read_text()
    (link,) = [block for block in ninja.split("\nbuild ") if block.startswith("_vtsample_ops.so:")]
    for unit in ("kernels.cpp", "helpers.cpp", "RegisterSchema.cpp", "RegisterCPU.cpp", "RegisterMeta.cpp"):
        assert f"{unit}.o" in link, link
    for kind in ("VariableType", "ADInplaceOrViewType", "Functions"):
        assert f"{kind}_0.cpp.o" in link and f"{kind}_1.cpp.o" not in link, link
    assert "-Wl,--no-undefined" in link and "-Wl,-Bsymbolic" in link, link
    assert "libtorch_cpu.so" in link and "libc10.so" in link, link
    assert "-fvisibility=hidden" in ninja
    assert "cmake_pch.hxx.gch" in ninja and "-O3" in ninja, "precompiled headers and Release by default"
    for unit, levels in (("VariableType_0.cpp", ["-O3", "-O1"]), ("kernels.cpp", ["-O3"])):
        (block,) = [b for b in ninja.split("\nbuild ") if b.split(":", 1)[0].endswith(f"/{unit}.o")]
        (flags,) = [line for line in block.splitlines() if line.strip().startswith("FLAGS =")]
        assert [f for f in flags.split() if f.startswith("-O")] == levels, flags
    assert "library kineto not found" not in installed_sample.log
    found = run_clean(
        [_python(installed_sample.venv), "-c", "import vtsample; print(vtsample.library_path())"], Path("/")
    )
    # An editable install: the library is in the build tree's install directory, not the venv
    # (the last line: the import's rebuild, Ninja with nothing to do, writes to stderr first).
    assert found[0] == 0 and Path(found[1].splitlines()[-1]).is_relative_to(installed_sample.build_dir), found


def test_backend_adds_torch_to_the_build_requirements() -> None:
    """The isolated `pip install .` route: the sample's backend asks for the torch it builds against
    (tests/test_pip.py shows the stub mode asks for none)."""
    pytest.importorskip("scikit_build_core")
    spec = importlib.util.spec_from_file_location("vtsample_build", SAMPLE / "backend" / "vtsample_build.py")
    assert spec is not None and spec.loader is not None
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    for hook in (backend.get_requires_for_build_wheel, backend.get_requires_for_build_editable):
        assert "torch==2.13.0" in hook(None), hook
        assert "torch==2.13.0" not in hook({"cmake.define.VTSAMPLE_USE_TORCH": "OFF"}), hook


def test_every_check_ran(runtime_results: dict[str, str | None]) -> None:
    assert tuple(runtime_results) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_runtime(runtime_results: dict[str, str | None], name: str) -> None:
    error = runtime_results.get(name, "did not run")
    assert error is None, error


# ---------------------------------------------------------------------------------------------
# The op library built with CMake directly (conftest's torch_tree): the checks can fail; errors at the yaml line
# ---------------------------------------------------------------------------------------------


def _replace_line(path: Path, old: str, new: str) -> int:
    """Replace the line ``old`` by ``new``; return its number."""
    lines = path.read_text().splitlines()
    index = lines.index(old)
    lines[index] = new
    path.write_text("\n".join(lines) + "\n")
    return index + 1


_OTHER = "  other: handle_r_to_c(other.scalar_type(), maybe_multiply(grad, alpha))"


def test_wrong_formula_fails_gradcheck(torch_tree: TorchTree) -> None:
    """A dropped factor (alpha) in one formula: that op's gradcheck fails, the others still pass."""
    other_line = _replace_line(torch_tree.derivatives, _OTHER, "  other: handle_r_to_c(other.scalar_type(), grad)")
    try:
        code, log = torch_tree.build()
        assert code == 0, log
        results = _run_checks(
            Path(sys.executable),
            torch_tree.binary,
            "--library",
            torch_tree.library,
            "scale_add_gradients",
            "softsign_gradients",
        )
        gradcheck = library_check(torch_tree)  # check --gradcheck --library (tests/test_gradcheck_library.py)
    finally:
        _replace_line(torch_tree.derivatives, "  other: handle_r_to_c(other.scalar_type(), grad)", _OTHER)
    assert results["softsign_gradients"] is None, results["softsign_gradients"]
    assert results["scale_add_gradients"] is not None and "Jacobian mismatch" in results["scale_add_gradients"]
    code, log = gradcheck
    at = f"{torch_tree.derivatives}:{other_line}: error: gradcheck failed for scale_add (schema samples) (float64"
    assert code == 1 and at in log, log
    assert "ops: passed 15, failed 2, not run 0" in log, log  # scale_add and scale_add_ only


# In a formula with no forward formula derived from it: one translation unit (the Node's)
# fails, whichever the build compiles first.
_STACK_MEAN = "  tensors: stack_mean_backward(grad, dim, tensors.size())"
_TYPO = "  tensors: stack_mean_backward(grad.no_such_method(), dim, tensors.size())"


def test_formula_typo_fails_the_cmake_build_at_its_yaml_line(torch_tree: TorchTree) -> None:
    line = _replace_line(torch_tree.derivatives, _STACK_MEAN, _TYPO)
    try:
        code, log = torch_tree.build()
    finally:
        _replace_line(torch_tree.derivatives, _TYPO, _STACK_MEAN)
    assert code != 0, log
    assert f"derivatives.yaml:{line}:" in log and "no_such_method" in log, log


def test_kernel_no_source_defines_fails_the_link_at_its_yaml_line(torch_tree: TorchTree) -> None:
    """The yaml names `Meta: topk_abs_meta`; a kernels.cpp without it fails the link, and the error
    is at that dispatch: line (vtgen_build.linkcheck, the target's link launcher)."""
    kernels = torch_tree.source / "src" / "kernels.cpp"
    text = kernels.read_text()
    line = (torch_tree.source / "native_functions.yaml").read_text().splitlines().index(
        "    Meta: topk_abs_meta       # a C++ fake kernel: shapes and dtypes only"
    ) + 1
    kernels.write_text(text.replace(" topk_abs_meta(", " topk_abs_meta_elsewhere("))
    try:
        code, log = torch_tree.build()
    finally:
        kernels.write_text(text)
    assert code != 0, log
    expected = (
        f"native_functions.yaml:{line}: error: kernel 'vtsample::topk_abs_meta' (Meta kernel of vtsample::topk_abs) "
        "is declared in NativeKernels.h but no source of the library defines it"
    )
    assert expected in log, log[-3000:]


# ---------------------------------------------------------------------------------------------
# The dev loop: edit a formula in the editable install, import again
# ---------------------------------------------------------------------------------------------

_SOFTSIGN = "  self: softsign_backward(grad, self)"
_DOUBLED = "  self: maybe_multiply(softsign_backward(grad, self), 2)"
_COMPILED = re.compile(r"Building CXX object \S*/(\w+\.cpp)\.o\b")
# The ratio of x.grad to the formula's gradient 1 / (1 + |x|)^2: 2 after the edit.
_GRADIENT_RATIO = """
import torch, vtsample
x = torch.tensor([-1.5, 0.25, 2.0], dtype=torch.float64, requires_grad=True)
torch.ops.vtsample.softsign(x).sum().backward()
print(sorted({round(r, 9) for r in (x.grad * (1 + x.detach().abs()) ** 2).tolist()}))
"""


def test_formula_edit_rebuilds_on_import(
    installed_sample: InstalledSample, runtime_results: dict[str, str | None]
) -> None:
    """sample_project/README.md's loop: edit derivatives.yaml, `import vtsample`: the generator
    rewrites the softsign Node's unit and the kernel unit whose forward formula derives from it;
    only those two compile, the library is relinked and reinstalled, and the new formula runs.
    The next import with nothing changed compiles nothing."""
    assert runtime_results  # the checks ran on the unedited library (this test edits the copy for good)
    python = _python(installed_sample.venv)
    _replace_line(installed_sample.source / "derivatives.yaml", _SOFTSIGN, _DOUBLED)
    # SKBUILD_EDITABLE_VERBOSE=1: the rebuild's output, on stderr (pyproject.toml keeps it quiet)
    code, log = run_clean([python, "-c", _GRADIENT_RATIO], installed_sample.venv, SKBUILD_EDITABLE_VERBOSE="1")
    assert code == 0, log
    assert "vtgen-build: re-planned" in log and "2 files written" in log, log
    assert sorted(_COMPILED.findall(log)) == ["Functions_0.cpp", "VariableType_0.cpp"], log
    assert "Linking CXX shared module _vtsample_ops.so" in log, log
    assert "warning:" not in log, log
    assert log.strip().splitlines()[-1] == "[2.0]", log

    code, log = run_clean([python, "-c", _GRADIENT_RATIO], installed_sample.venv, SKBUILD_EDITABLE_VERBOSE="1")
    assert code == 0, log
    assert "ninja: no work to do." in log and not _COMPILED.search(log), log
    assert log.strip().splitlines()[-1] == "[2.0]", log


_TYPED_USE = """
import torch
import vtsample

values, indices = vtsample.ops.topk_abs(torch.randn(3, 4), 2)
total: torch.Tensor = vtsample.ops.scale_add(values, values, alpha=2.0)
wrong: str = vtsample.ops.softsign(total)
"""


def test_mypy_strict_sees_the_typed_api_of_the_editable_install(
    installed_sample: InstalledSample, tmp_path: Path
) -> None:
    """The editable install puts src/ on sys.path (where mypy looks): the package has py.typed and the
    build copies the typed API into src/vtsample/ops, so `mypy --strict` checks calls of it (and
    finds the one wrong annotation)."""
    pytest.importorskip("mypy")
    (tmp_path / "use.py").write_text(_TYPED_USE)
    assert (installed_sample.source / "src" / "vtsample" / "ops" / "py.typed").is_file()
    code, log = run_clean(
        [_python(installed_sample.venv), "-m", "mypy", "--strict", "--cache-dir", tmp_path / "cache", "use.py"],
        tmp_path,
    )
    assert code == 1, log
    expected = 'use.py:7: error: Incompatible types in assignment (expression has type "Tensor", variable has type'
    assert expected in log and "Found 1 error in 1 file" in log, log


def test_editable_import_is_quiet(installed_sample: InstalledSample, runtime_results: dict[str, str | None]) -> None:
    """`import vtsample` in the editable install prints nothing when nothing changed, and never
    anything on stdout; a rebuild says so on stderr (one line, the rebuild's output kept back)."""
    assert runtime_results  # after the checks: this test touches the copy's yaml
    python, env = str(_python(installed_sample.venv)), clean_env()

    def run(code: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([python, "-c", code], cwd=installed_sample.venv, env=env, capture_output=True,
                              text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    run("import vtsample")  # whatever an earlier test left to rebuild
    quiet = run("import vtsample")
    assert (quiet.stdout, quiet.stderr) == ("", ""), quiet
    derivatives = installed_sample.source / "derivatives.yaml"
    derivatives.write_text(derivatives.read_text() + "\n")  # the generator runs, nothing recompiles
    os.utime(installed_sample.source / "src" / "helpers.cpp")  # one unit recompiles, the library relinks
    rebuilt = run("import vtsample")
    assert rebuilt.stdout == "", rebuilt
    assert rebuilt.stderr.startswith("vtsample: rebuilt the op library (") and rebuilt.stderr.count("\n") == 1, rebuilt


# The classic sample's element-wise ops (the `pointwise` tag): their batching rules, installed by vtsample.ops
RULED = ("softsign", "scale_add", "soft_quantize")
_VMAP_PROBE = """
import json
import torch, vtsample
functorch = torch._C._functorch
functorch._set_vmap_fallback_warning_enabled(True)
ops, x, s = torch.ops.vtsample, torch.randn(4, 3, 5), torch.rand(5) + 0.5
calls = {"softsign": (ops.softsign, (x,), (0,)), "scale_add": (ops.scale_add, (x, s), (1, None)),
         "soft_quantize": (ops.soft_quantize, (x, s), (0, None)), "topk_abs": (ops.topk_abs, (x, 2), (0, None))}
found = {}
for name, (op, args, dims) in calls.items():
    got = torch.vmap(op, in_dims=dims)(*args)
    rows = range(args[0].shape[dims[0]])
    loop = [op(*[a.select(d, i) if d is not None else a for a, d in zip(args, dims)]) for i in rows]
    want = torch.stack([l if isinstance(l, torch.Tensor) else l[0] for l in loop])
    first = got if isinstance(got, torch.Tensor) else got[0]
    functorch._set_vmap_fallback_enabled(False)
    try:
        torch.vmap(op, in_dims=dims)(*args)
        ruled = True
    except RuntimeError:
        ruled = False
    finally:
        functorch._set_vmap_fallback_enabled(True)
    found[name] = {"equal": bool(torch.allclose(first, want)), "ruled": ruled}
print(json.dumps(found))
"""


_PLANT = """
import torch, vtsample
for library in vtsample.ops._batching_libraries[:1]:  # softsign's, the first of BATCHING_RULES
    library._destroy()
_lib = torch.library.Library("vtsample", "IMPL")
_lib.impl("softsign", vtsample.ops._elementwise_batched(torch.ops.aten.sin.default), "FuncTorchBatched")
"""


def test_classic_batching_rules_run_without_the_fallback_and_a_wrong_one_fails_at_its_op(
    installed_sample: InstalledSample, runtime_results: dict[str, str | None]
) -> None:
    """The classic sample's `pointwise` ops get batching rules (installed by the generated vtsample.ops at
    `import vtsample`): vmap over a batch dimension (with an unbatched argument) equals the loop with PyTorch's
    fallback turned off and warns nothing, while topk_abs (no rule) warns and needs the fallback.  A wrong rule
    registered in place of softsign's (by a package importing vtsample) fails `check --gradcheck --library`'s
    torch.func table at its op only, the other rules ok."""
    assert runtime_results  # after the checks, on the library as the editable install built it
    python = _python(installed_sample.venv)
    done = subprocess.run([python, "-c", _VMAP_PROBE], cwd=installed_sample.venv, env=clean_env(),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for op in RULED:
        assert found[op] == {"equal": True, "ruled": True}, (op, found)
    assert found["topk_abs"] == {"equal": True, "ruled": False}, found
    warned = [line for line in done.stderr.splitlines() if "BatchedFallback" in line]  # (printed by torch)
    assert len(warned) == 1 and "vtsample::topk_abs" in warned[0], done.stderr[-3000:]
    # The plant: a package that imports vtsample and puts a wrong rule (sin's) in place of softsign's
    planted = installed_sample.venv / "planted"
    (planted / "vtplanted").mkdir(parents=True, exist_ok=True)
    (planted / "vtplanted" / "__init__.py").write_text(_PLANT)
    args = [sys.executable, "-m", "vtgen_build", "check", *sample_inputs(installed_sample.source)]
    args += ["--python", str(python), "--out", str(installed_sample.venv / "gradcheck-out"), "--gradcheck"]
    args += ["--library", "vtplanted", "--hints", str(installed_sample.source / "sample_hints.yaml")]
    env = {**clean_env(), "PYTHONPATH": os.pathsep.join([str(planted), str(ROOT)])}  # this checkout's vtgen_build
    done = subprocess.run(args, cwd=installed_sample.venv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)  # fmt: skip
    code, log = done.returncode, done.stdout
    func = [line for line in log.splitlines() if "error: torch.func" in line]
    assert code == 1 and len(func) == 1, log
    assert func[0].startswith(
        "vtgen-build: error: torch.func vmap of softsign (vmap through its generated batching rule"
    )
    for op in ("scale_add", "soft_quantize"):  # a row per sample (the table's rows: `op` or `op (its sample)`)
        rows = [line for line in log.splitlines() if line.startswith((f"  | {op} |", f"  | {op} ("))]
        assert rows and all("| rule | ok |" in row for row in rows), (op, log)
