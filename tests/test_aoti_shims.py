"""AOTInductor C shims of an op library (plan/aoti_shims.py, emit/aoti_shims.py): which operators get
one and why the others do not, the C signatures Inductor is given, and the unit compiling against the
installed torch's headers.  The sample's packages calling them are checked at run time by
tests/sample_checks.py (aoti_package_loads_in_fresh_process, aoti_missing_shim_is_detected)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.cli.commands import main
from vtgen_build.emit.aoti_shims import aoti_shims_unit, declarations_by_operator
from vtgen_build.model import Inputs, load_model
from vtgen_build.plan.aoti_shims import AotiShimPlan, aten_op_names, plan_aoti_shims
from vtgen_build.plan.dialect import CLASSIC
from vtgen_build.plan.registrations import plan_registrations

from .conftest import SAMPLE, CliResult, CliRunner, YamlWriter, installed_torch_include, sample_inputs


def _plan(native: str, keys: tuple[str, ...], namespace: str = "lib") -> AotiShimPlan:
    model = load_model(Inputs(native, str(Path(native).with_name("d.yaml")), None, namespace))
    return plan_aoti_shims(model.native_functions, plan_registrations(model.native_functions, keys, CLASSIC))


def _sample_plan() -> AotiShimPlan:
    inputs = Inputs(str(SAMPLE / "native_functions.yaml"), str(SAMPLE / "derivatives.yaml"), None, "vtsample")
    functions = load_model(inputs).native_functions
    keys = ("CPU", "CompositeExplicitAutograd", "Meta")
    return plan_aoti_shims(functions, plan_registrations(functions, keys, CLASSIC))


def test_the_samples_shims_and_why_the_others_have_none() -> None:
    plan = _sample_plan()
    assert [s.name for s in plan.shims] == [
        *("aoti_torch_cpu_softsign", "aoti_torch_cpu_softsign_", "aoti_torch_cpu_scale_add"),
        *("aoti_torch_cpu_scale_add_", "aoti_torch_cpu_topk_abs", "aoti_torch_cpu_stack_mean"),
        *("aoti_torch_cpu_affine", "aoti_torch_cpu_tile_to", "aoti_torch_cpu_soft_quantize"),
    ]
    reasons = {s.operator: s.reason for s in plan.skipped}
    assert set(reasons) == {"vtsample::softsign.out", "vtsample::scale_add.out", "vtsample::swap_dims"}
    assert "out= operator" in reasons["vtsample::softsign.out"] and "alias" in reasons["vtsample::swap_dims"]
    # the spelling AOTInductor's wrapper calls (torch 2.13's c_shim_cpu.h conventions)
    declarations = declarations_by_operator(plan.shims)
    assert declarations["vtsample::scale_add"] == [
        "AOTITorchError aoti_torch_cpu_scale_add(AtenTensorHandle self, AtenTensorHandle other, double alpha, "
        "AtenTensorHandle* ret0)"
    ]
    assert declarations["vtsample::affine"] == [
        "AOTITorchError aoti_torch_cpu_affine(AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias, "
        "AtenTensorHandle* ret0)"
    ]
    assert declarations["vtsample::stack_mean"] == [
        "AOTITorchError aoti_torch_cpu_stack_mean(const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim, "
        "AtenTensorHandle* ret0)"
    ]
    unit = aoti_shims_unit(plan)
    assert "vtsample::swap_dims: returns an alias of an input" in unit  # listed in the unit, never silently left out


SHAPES = """\
- func: pick.Tensor(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: pick_tensor
- func: pick.Scalar(Tensor self, Scalar other) -> Tensor
  dispatch:
    CPU: pick_scalar
- func: everywhere(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: everywhere
- func: gpu_only(Tensor self) -> Tensor
  dispatch:
    CUDA: gpu_only
- func: split_all(Tensor self) -> Tensor[]
  dispatch:
    CPU: split_all
- func: decomposed(Tensor self) -> Tensor
"""


def test_devices_name_clashes_and_types(tmp_yaml: YamlWriter) -> None:
    """Inductor names a shim without the overload: two overloads, no shim.  CompositeExplicitAutograd
    serves every device of the build; a key the build lacks gives none."""
    native = tmp_yaml("nf.yaml", SHAPES)
    tmp_yaml("d.yaml", "")
    plan = _plan(native, ("CPU", "CUDA", "CompositeExplicitAutograd"))
    assert [s.name for s in plan.shims] == ["aoti_torch_cpu_everywhere", "aoti_torch_cuda_everywhere",
                                            "aoti_torch_cuda_gpu_only"]  # fmt: skip
    reasons = {s.operator: s.reason for s in plan.skipped}
    assert "shares its shim name with pick.Scalar" in reasons["lib::pick.Tensor"]
    assert "'Tensor[]' returns" in reasons["lib::split_all"]
    assert "CompositeImplicitAutograd" in reasons["lib::decomposed"]
    cpu_only = _plan(native, ("CPU",))
    assert (
        "no kernel for a device of this build (CPU)"
        in {s.operator: s.reason for s in cpu_only.skipped}["lib::gpu_only"]
    )
    # a CompositeExplicitAutograd kernel the build does not register serves no device
    assert "no kernel for a device" in {s.operator: s.reason for s in cpu_only.skipped}["lib::everywhere"]


def test_an_op_named_like_the_helper_is_refused(tmp_yaml: YamlWriter, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    native = tmp_yaml("nf.yaml", "- func: install_aoti_c_shims(Tensor self) -> Tensor\n  dispatch:\n    CPU: k\n")
    derivatives = tmp_yaml("d.yaml", "")
    args = ["generate", "--native-functions", str(native), "--derivatives", str(derivatives), "--namespace", "lib"]
    args += ["--out", str(tmp_path / "out"), "--register-backends", "CPU", "--python-api", str(tmp_path / "api")]
    assert main(args) == 1
    err = capsys.readouterr().err
    said = f"{native}:1: error: operator 'install_aoti_c_shims' has the name of the typed API's AOTInductor helper"
    assert said in err, err


_EVERY_ARGUMENT = (
    "Tensor self, Tensor? weight, Tensor[] more, int n, SymInt m, float f, bool flag, str mode, Scalar s, "
    "ScalarType dtype, int[] dims, SymInt[] sizes, float[] scales, int? k, SymInt? j, float? g, bool? b, "
    "Scalar? t, ScalarType? dt, int[]? odims"
)
TYPES = f"""\
- func: every_type({_EVERY_ARGUMENT}) -> (Tensor, int, float, bool, Scalar, SymInt)
  dispatch:
    CPU: every_type
- func: fill_in(Tensor(a!) self, Scalar value) -> ()
  dispatch:
    CPU: fill_in
"""


@pytest.mark.slow
def test_every_supported_type_compiles_against_torch(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    """AOTIShims.cpp of an op taking every argument type the shim ABI spells (and returning every
    return type), and of a mutating op, compiles against the installed torch's headers."""
    pytest.importorskip("torch")
    from vtgen_build.check.run import find_compiler
    from vtgen_build.torchlib import locate_torch

    native = tmp_yaml("nf.yaml", TYPES)
    derivatives = tmp_yaml("d.yaml", "")
    out = tmp_path / "out"
    args = ["generate", "--native-functions", str(native), "--derivatives", str(derivatives), "--namespace", "lib"]
    assert main([*args, "--out", str(out), "--register-backends", "CPU"]) == 0
    unit = (out / "AOTIShims.cpp").read_text()
    assert "aoti_torch_cpu_every_type(" in unit and "aoti_torch_cpu_fill_in(" in unit
    command = [find_compiler(None), "-std=c++20", "-fsyntax-only", *locate_torch().compile_flags(), f"-I{out}"]
    done = subprocess.run([*command, str(out / "AOTIShims.cpp")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def test_sample_api_lists_the_shims(tmp_path: Path) -> None:
    """The typed Python API of a build with backend registrations lists each shim's declaration and
    installs them; without backend registrations (no AOTIShims.cpp) it has neither."""
    api, plain = tmp_path / "api", tmp_path / "plain"
    common = [*sample_inputs(), "--namespace", "vtsample"]
    assert main(["generate", *common, "--out", str(tmp_path / "o1"), "--register-backends", "CPU,Meta",
                 "--python-api", str(api)]) == 0  # fmt: skip
    assert main(["generate", *common, "--out", str(tmp_path / "o2"), "--python-api", str(plain)]) == 0
    text = (api / "__init__.py").read_text()
    assert '"vtsample::softsign": ("AOTITorchError aoti_torch_cpu_softsign(AtenTensorHandle self, ' in text
    assert "def install_aoti_c_shims(library: str) -> None:" in text
    assert "AOTI_C_SHIMS" not in (plain / "__init__.py").read_text()
    compile(text, "__init__.py", "exec")


ATEN_NAMED = """\
- func: topk(Tensor self, float k) -> (Tensor values, Tensor indices)
  dispatch:
    CPU: mytopk_cpu
- func: add_Tensor(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: my_add
- func: topk_soft(Tensor self, float k) -> Tensor
  dispatch:
    CPU: topk_soft
"""


def test_an_op_named_like_an_aten_op_gets_no_shim(tmp_yaml: YamlWriter, tmp_path: Path, run_cli: CliRunner) -> None:
    """Issue 44, item 7: AOTInductor names a shim after the operator alone, so ``lib::topk``'s shim would be
    ``aoti_torch_cpu_topk``, libtorch's own for aten::topk: made global by install_aoti_c_shims(), it would
    take the aten calls of every AOTInductor package loaded after it.  No such shim is generated nor exported
    by the typed API, and generate and inspect say so at the op's line."""
    native = tmp_yaml("nf.yaml", ATEN_NAMED)
    derivatives = tmp_yaml("d.yaml", "")
    plan = _plan(native, ("CPU",))
    assert [s.name for s in plan.shims] == ["aoti_torch_cpu_topk_soft"]
    reasons = {s.operator: s.reason for s in plan.skipped}
    assert "named like aten's operator 'topk'" in reasons["lib::topk"]
    assert "named like aten's operator 'add_Tensor'" in reasons["lib::add_Tensor"]  # aten's add.Tensor shim name
    common = ["--native-functions", native, "--derivatives", derivatives, "--namespace", "lib"]
    api = tmp_path / "api"
    done = run_cli("generate", *common, "--out", str(tmp_path / "out"), "--register-backends", "CPU",
                   "--python-api", str(api))  # fmt: skip
    assert done.code == 0, done.err
    assert f"{native}:1: warning: lib::topk gets no AOTInductor C shim: named like aten's operator" in done.err
    assert f"{native}:4: warning: lib::add_Tensor gets no AOTInductor C shim" in done.err
    for text in ((tmp_path / "out" / "AOTIShims.h").read_text(), (api / "__init__.py").read_text()):
        assert "aoti_torch_cpu_topk(" not in text and "aoti_torch_cpu_add_Tensor(" not in text
        assert "aoti_torch_cpu_topk_soft(" in text
    shown = run_cli("inspect", *common)
    assert shown.code == 0 and f"{native}:1: warning: lib::topk gets no AOTInductor C shim" in shown.err
    listed = run_cli("inspect", *common, "--json")
    assert [w.split(": warning:")[0] for w in json.loads(listed.out)["warnings"]] == [f"{native}:1", f"{native}:4"]


def test_the_shipped_aten_names_cover_the_shims_libtorch_exports() -> None:
    """Every ``aoti_torch_cpu_<name>`` the installed libtorch exports is a name the plan withholds."""
    torch = pytest.importorskip("torch")
    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    if not lib.is_file() or shutil.which("nm") is None:
        pytest.skip("needs libtorch_cpu.so and nm")
    done = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    exported = {w.removeprefix("aoti_torch_cpu_") for w in done.stdout.split() if w.startswith("aoti_torch_cpu_")}
    assert len(exported) > 50
    assert {"topk", "add_Tensor"} <= exported
    assert exported <= aten_op_names()


# -- the stable mode ---------------------------------------------------------------------------------
STABLE_SAMPLE = SAMPLE.parent / "sample_stable"


def _stable_generate(run_cli: CliRunner, out: Path, *extra: str, native: str | None = None) -> CliResult:
    native = native or str(STABLE_SAMPLE / "native_functions.yaml")
    derivatives = str(STABLE_SAMPLE / "derivatives.yaml") if native.startswith(str(STABLE_SAMPLE)) else \
        str(Path(native).with_name("d.yaml"))  # fmt: skip
    return run_cli("generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "vtstable",
                   "--out", str(out), "--register-backends", "CPU,Meta", "--stable-abi", "2.10",
                   "--torch-version", "2.13", *extra)  # fmt: skip


def test_the_stable_sample_has_its_shims_on_the_stable_abi(run_cli: CliRunner, tmp_path: Path) -> None:
    """Issue 46, item 4: a stable library's build defines a C shim per op AOTInductor can meet, in the
    Register<Key>.cpp of the kernel it runs (the author's, unboxed; a structured op's generated variant),
    with the classic mode's C signature; the typed API lists them (AOTI_C_SHIMS) for install_aoti_c_shims."""
    api = tmp_path / "api"
    done = _stable_generate(run_cli, tmp_path / "out", "--python-api", str(api))
    assert done.code == 0, done.err
    cpu, meta = ((tmp_path / "out" / f"Register{k}.cpp").read_text() for k in ("CPU", "Meta"))
    defined = re.findall(r"^VTGEN_AOTI_SHIM_EXPORT AOTITorchError (\w+)\(", cpu, re.M)
    assert defined == [f"aoti_torch_cpu_{op}" for op in ("softsign", "softsign_", "softsign_backward", "sincos",
                                                        "affine", "clamp_abs_")]  # fmt: skip
    assert "aoti_torch_" not in meta  # no device: no shim
    assert "vtstable::softsign.out: an out= operator" in cpu  # listed, never silently left out
    assert "auto result = vtstable_softsign_CPU(vtgen_arg0);" in cpu  # the structured variant the unit generates
    assert "auto result = vtstable::affine_cpu(vtgen_arg0, vtgen_arg1, vtgen_arg2);" in cpu
    assert "auto vtgen_arg2 = vtgen_borrow_optional(bias);" in cpu
    shims = cpu[cpu.index("AOTInductor C shims of the CPU kernels") :]
    assert not re.search(r"\b(at|c10)::|ATen/|aoti_torch/utils\.h", shims)  # the stable ABI only
    text = (api / "__init__.py").read_text()
    assert re.findall(r'^    "vtstable::\w+": \("AOTITorchError (\w+)\(', text, re.M) == defined  # one list, both sides
    assert '"vtstable::affine": ("AOTITorchError aoti_torch_cpu_affine(AtenTensorHandle input, AtenTensorHandle ' \
        'weight, AtenTensorHandle* bias, AtenTensorHandle* ret0)",),' in text  # fmt: skip
    assert "def install_aoti_c_shims(library: str) -> None:" in text


def test_an_op_returning_nothing_takes_the_result_pointer_aoti_passes(run_cli: CliRunner, tmp_path: Path) -> None:
    """AOTInductor's wrapper calls the shim of an operator returning nothing (``-> ()``) with one more
    argument, ``nullptr`` for its one ``None`` output (2.10 to 2.14 alike): a shim without that
    parameter does not compile into the package.  Both modes declare it."""
    done = _stable_generate(run_cli, tmp_path / "out", "--python-api", str(tmp_path / "api"))
    assert done.code == 0, done.err
    stable = (tmp_path / "api" / "__init__.py").read_text()
    assert '"AOTITorchError aoti_torch_cpu_clamp_abs_(AtenTensorHandle self, double bound, AtenTensorHandle* ret0)"' \
        in stable  # fmt: skip
    classic = declarations_by_operator(_sample_plan().shims)
    assert classic["vtsample::softsign_"] == ["AOTITorchError aoti_torch_cpu_softsign_(AtenTensorHandle self, "
                                              "AtenTensorHandle* ret0)"]  # fmt: skip


ATEN_NAMED_STABLE = """\
- func: topk(Tensor self, float k) -> Tensor
  dispatch:
    CPU: mytopk
- func: topk_soft(Tensor self, float k) -> Tensor
  dispatch:
    CPU: soft
"""


def test_a_stable_op_named_like_an_aten_op_gets_no_shim(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", ATEN_NAMED_STABLE)
    tmp_yaml("d.yaml", "")
    api = tmp_path / "api"
    done = _stable_generate(run_cli, tmp_path / "out", "--python-api", str(api), native=native)
    assert done.code == 0, done.err
    assert f"{native}:1: warning: vtstable::topk gets no AOTInductor C shim: named like aten's operator" in done.err
    for text in ((tmp_path / "out" / "RegisterCPU.cpp").read_text(), (api / "__init__.py").read_text()):
        assert "aoti_torch_cpu_topk(" not in text and "aoti_torch_cpu_topk_soft(" in text


_STABLE_ARGUMENTS = (
    "Tensor self, Tensor? weight, Tensor[] more, int n, float f, bool flag, str mode, ScalarType dtype, "
    "int[] dims, float[] scales, int? k, float? g, bool? b, ScalarType? dt, int[]? odims"
)
STABLE_TYPES = f"""\
- func: every_type({_STABLE_ARGUMENTS}) -> (Tensor, int, float, bool)
  dispatch:
    CPU: every_type
- func: fill_in(Tensor(a!) self, float value) -> ()
  dispatch:
    CPU: fill_in
"""


@pytest.mark.slow
def test_every_stable_type_compiles_against_torch(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """RegisterCPU.cpp of a stable library whose op takes every argument type both the stable ABI and the
    shim ABI carry (and returns every such return type), and of a mutating op, compiles against the
    installed torch's headers at the stable target."""
    pytest.importorskip("torch")
    from vtgen_build.check.run import find_compiler
    from vtgen_build.plan.stable import StableTarget

    native = tmp_yaml("nf.yaml", STABLE_TYPES)
    tmp_yaml("d.yaml", "")
    out = tmp_path / "out"
    done = _stable_generate(run_cli, out, native=native)
    assert done.code == 0, done.err
    unit = (out / "RegisterCPU.cpp").read_text()
    assert "aoti_torch_cpu_every_type(" in unit and "aoti_torch_cpu_fill_in(" in unit
    include = installed_torch_include()
    command = [find_compiler(None), "-std=c++17", "-fsyntax-only", f"-I{include}", f"-I{out}",
               f"-DTORCH_TARGET_VERSION={StableTarget(2, 10).macro}"]  # fmt: skip
    compiled = subprocess.run([*command, str(out / "RegisterCPU.cpp")], capture_output=True, text=True, check=False)
    assert compiled.returncode == 0, compiled.stderr[-4000:]


PICKLE_CHILD = """\
import importlib.util, pickle, sys
import torch
import torch._inductor.config as config

lib = torch.library.Library("vtpickle", "DEF")
lib.define("pick_me(Tensor self) -> Tensor")
spec = importlib.util.spec_from_file_location("api", sys.argv[1])
api = sys.modules["api"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api)
api.install_aoti_c_shims(str(torch._C.__file__))  # a library this process loaded (the shims are never called)
shims = dict(config.aot_inductor.custom_ops_to_c_shims)
again = pickle.loads(pickle.dumps(shims))
assert list(again) == [torch.ops.vtpickle.pick_me.default], again
print("PICKLED")
"""


def test_installed_shims_leave_inductors_config_picklable(tmp_yaml: YamlWriter, run_cli: CliRunner,
                                                          tmp_path: Path) -> None:  # fmt: skip
    """Inductor's cache key pickles its config, custom_ops_to_c_shims too, and an OpOverload does not
    pickle: before torch 2.13 (whose pickler steps over it) every torch.compile in a process that
    installed the shims failed (the release matrix's compile checks on 2.10).  install_aoti_c_shims
    makes the operators pickle by name."""
    pytest.importorskip("torch")
    native = tmp_yaml("nf.yaml", "- func: pick_me(Tensor self) -> Tensor\n  dispatch:\n    CPU: pick_me\n")
    derivatives = tmp_yaml("d.yaml", "")
    api = tmp_path / "api"
    done = run_cli("generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "vtpickle",
                   "--out", str(tmp_path / "out"), "--register-backends", "CPU", "--python-api", str(api))  # fmt: skip
    assert done.code == 0, done.err
    child = subprocess.run([sys.executable, "-c", PICKLE_CHILD, str(api / "__init__.py")], capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert child.returncode == 0 and "PICKLED" in child.stdout, child.stderr[-3000:]


def test_an_incremental_run_repeats_the_shim_warnings(tmp_yaml: YamlWriter, tmp_path: Path, run_cli: CliRunner) -> None:
    """An edit of derivatives.yaml re-plans the edited entries only; the warnings of the ops it keeps
    (here: the shims withheld for names libtorch exports) are said again, as a clean run says them."""
    native = tmp_yaml("nf.yaml", ATEN_NAMED)
    derivatives = tmp_yaml("d.yaml", "- name: topk_soft(Tensor self, float k) -> Tensor\n  self: grad * 2\n")
    args = ["generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "lib",
            "--out", str(tmp_path / "out"), "--register-backends", "CPU"]  # fmt: skip
    first = run_cli(*args)
    assert first.code == 0 and f"{native}:1: warning: lib::topk gets no AOTInductor C shim" in first.err, first.err
    Path(derivatives).write_text("- name: topk_soft(Tensor self, float k) -> Tensor\n  self: grad * 3\n")
    edited = run_cli(*args)
    assert edited.code == 0 and "re-planned" in edited.out + edited.err, edited.out + edited.err
    assert edited.err.count(": warning:") == first.err.count(": warning:") == 2, edited.err
    assert f"{native}:1: warning: lib::topk gets no AOTInductor C shim" in edited.err


@pytest.mark.parametrize("stable", [None, "2.10"], ids=["classic", "stable"])
def test_the_typed_api_lists_the_shims_the_library_defines_without_planning_its_registrations(
    monkeypatch: pytest.MonkeyPatch, stable: str | None
) -> None:
    """The typed Python API's shim declarations are those the library's own plan defines, in either dialect
    (``all`` keys included): which shims exist follows from the keys and structured groups alone, so the writer
    plans no registrations (it used to plan the classic dialect's whatever the request's)."""
    from vtgen_build.engine.python_api import aoti_shim_declarations
    from vtgen_build.plan import registrations
    from vtgen_build.plan.library import plan_library
    from vtgen_build.plan.policy import load_policy
    from vtgen_build.plan.request import BuildRequest, StableTarget
    from vtgen_build.plan.stable import plan_stable

    root, ns = (SAMPLE, "vtsample") if stable is None else (SAMPLE.parent / "sample_stable", "vtstable")
    tags = str(root / "tags.yaml") if (root / "tags.yaml").is_file() else None
    model = load_model(Inputs(str(root / "native_functions.yaml"), str(root / "derivatives.yaml"), tags, ns))
    target = None if stable is None else StableTarget(*map(int, stable.split(".")))
    request = BuildRequest(ns, ("all",), target)
    if target is None:
        from vtgen_build.plan.kernel import build_plan

        planned = plan_library(model.native_functions, build_plan(model, load_policy()), load_policy(), request)
        assert planned.aoti_shims is not None
        shims = planned.aoti_shims.shims
    else:
        shims = plan_stable(model.native_functions, request, load_policy().pytorch_tags).aoti_shims.shims
    expected = tuple((name, tuple(decls)) for name, decls in declarations_by_operator(shims).items())
    assert expected  # the sample defines shims

    def refused(*args: object) -> object:
        raise AssertionError("the typed API planned the library's registrations")

    monkeypatch.setattr(registrations, "select_kernels", refused)
    assert aoti_shim_declarations(model, ("all",)) == expected
