"""Autocast from the yaml: the ``autocast:`` policy of an op, its errors at the line, the Autocast kernels
both modes generate (classic: C++ in ``Register<Device>.cpp``; stable: Python in the autograd module) at
every Autocast key the build's backends imply, and the Python kernels run under ``torch.autocast``.

The sample libraries built against torch run their policies for real: tests/sample_checks.py (classic,
``autocast_*``) and tests/stable_matrix_child.py (stable, ``autocast:``).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from vtgen_build.emit.python_autocast import python_autocast
from vtgen_build.inputs.files import Inputs
from vtgen_build.model import load_model
from vtgen_build.plan.autocast import plan_autocast

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

OPS = """\
- func: twice(Tensor self) -> Tensor
  dispatch:
    CPU: twice
  autocast: fp32
- func: mix(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  dispatch:
    CPU, CUDA: mix
  autocast: promote
- func: mix.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: mix_out
  autocast: promote
- func: stacked(Tensor[] tensors, Tensor? scale=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: stacked
  autocast: lower
- func: plain(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: plain
"""
DERIVATIVES = """\
- name: twice(Tensor self) -> Tensor
  self: grad * 2
"""


def _stable(ops: str) -> str:
    """``ops`` as the stable ABI takes them: ``float`` for ``Scalar``, an out= op returning nothing."""
    return ops.replace("Scalar alpha", "float alpha").replace("Tensor(a!) out) -> Tensor(a!)", "Tensor(a!) out) -> ()")


def _generate(run_cli: CliRunner, native: str, out: Path, *extra: str) -> str:
    derivatives = str(Path(native).with_name("d.yaml"))
    Path(derivatives).write_text(DERIVATIVES)
    result = run_cli("generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "ac",
                     "--out", str(out), *extra)  # fmt: skip
    assert result.code == 0, result.err
    return result.err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("  autocast: fp23", "nf.yaml:4: error: unknown autocast policy 'fp23' (one of fp32, promote, lower); "
                             "did you mean 'fp32'?"),
        ("  autocast: lowr", "did you mean 'lower'?"),
        ("  autocast: [fp32]", "nf.yaml:4: error: 'autocast' must be a string, found a list"),
        ("  autocasts: fp32", "nf.yaml:4: error: unknown key 'autocasts'; did you mean 'autocast'?"),
    ],
)  # fmt: skip
def test_a_bad_policy_is_an_error_at_its_line(
    line: str, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", "- func: twice(Tensor self) -> Tensor\n  dispatch:\n    CPU: twice\n" + line + "\n")
    result = run_cli("generate", "--native-functions", native, "--derivatives", tmp_yaml("d.yaml", DERIVATIVES),
                     "--namespace", "ac", "--out", str(tmp_path / "out"), "--register-backends", "CPU")  # fmt: skip
    assert result.code == 1 and message in result.err, result.err
    assert "Traceback" not in result.err


def test_a_policy_on_an_op_reading_no_tensor_is_refused(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """An in-place ``-> ()`` op writes its only tensor: a cast could not reach what it writes."""
    native = tmp_yaml("nf.yaml", "- func: clamp_(Tensor(a!) self, float bound) -> ()\n  dispatch:\n    CPU: c\n"
                                 "  autocast: lower\n")  # fmt: skip
    result = run_cli("generate", "--native-functions", native, "--derivatives", tmp_yaml("d.yaml", ""),
                     "--namespace", "ac", "--out", str(tmp_path / "out"), "--register-backends", "CPU")  # fmt: skip
    assert result.code == 1, result.err
    assert "nf.yaml:4: error: autocast: 'clamp_' reads no tensor a policy could cast" in result.err, result.err


def _block(unit: str, key: str) -> str:
    start = unit.index(f"TORCH_LIBRARY_IMPL(ac, {key}, m) {{")
    return unit[start : unit.index("\n}", start)]


def test_classic_units_register_the_autocast_key_of_every_device(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """CPU gives AutocastCPU in RegisterCPU.cpp, CUDA AutocastCUDA in RegisterCUDA.cpp: each op at the
    devices its kernels serve (a CompositeExplicitAutograd kernel: every registered device), none at Meta,
    none for an op without a policy; the out= op casts self and other, never out (position 3)."""
    out = tmp_path / "out"
    _generate(run_cli, tmp_yaml("nf.yaml", OPS), out, "--register-backends", "CPU,CUDA,Meta,CompositeExplicitAutograd")
    cpu, cuda = (out / "RegisterCPU.cpp").read_text(), (out / "RegisterCUDA.cpp").read_text()
    found = {}
    for key, unit in (("AutocastCPU", cpu), ("AutocastCUDA", cuda)):
        found[key] = [line.split('"')[1] for line in _block(unit, key).splitlines()[1:]]
        assert "#include <ATen/autocast_mode.h>" in unit
    assert found["AutocastCPU"] == ["twice", "mix", "mix.out", "stacked"]
    assert found["AutocastCUDA"] == ["mix", "mix.out", "stacked"]
    assert "AutocastCPU" not in cuda and "AutocastCUDA" not in cpu
    for name in ("RegisterMeta.cpp", "RegisterCompositeExplicitAutograd.cpp"):
        assert "autocast" not in (out / name).read_text().lower(), name
    assert "ac_plain_Autocast" not in cpu + cuda
    assert ("autocast_call(op, stack, c10::DispatchKey::AutocastCUDA, c10::DeviceType::CUDA, AutocastPolicy::kPromote, "
            "4, {0, 1});") in cuda  # fmt: skip
    assert "AutocastPolicy::kLower, 2, {0, 1});" in cpu  # Tensor[] and Tensor?
    assert "AutocastPolicy::kFloat32, 1, {0});" in cpu


def test_without_a_policy_a_unit_has_no_autocast_text(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    plain = "\n".join(line for line in OPS.splitlines() if "autocast" not in line) + "\n"
    out = tmp_path / "out"
    _generate(run_cli, tmp_yaml("nf.yaml", plain), out, "--register-backends", "CPU,CUDA")
    for name in ("RegisterCPU.cpp", "RegisterCUDA.cpp"):
        assert "utocast" not in (out / name).read_text(), name


def test_stable_mode_registers_python_kernels_at_every_device_key(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """The stable mode's C++ units carry no autocast; its Python autograd module registers the kernels, at
    AutocastCPU and AutocastCUDA for a CPU+CUDA build (the classic mode's module gets none: its kernels are C++)."""
    stable_ops = _stable(OPS)
    native = tmp_yaml("nf.yaml", stable_ops)
    module = tmp_path / "py" / "_autograd.py"
    _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--register-backends", "CPU,CUDA,Meta",
              "--python-autograd", str(module))  # fmt: skip
    text = module.read_text()
    keys = ("AutocastCPU", "AutocastCUDA")
    for op, key in [("twice", "AutocastCPU"), *itertools.product(("mix", "mix.out", "stacked"), keys)]:
        assert f'_AUTOCAST_LIBRARY.impl("{op}", ' in text and f", {key!r})" in text, (op, key)
    assert '_AUTOCAST_LIBRARY.impl("twice", _autocast_twice_AutocastCUDA' not in text
    assert '"plain"' not in text
    assert not any("utocast" in p.read_text() for p in (tmp_path / "out").glob("Register*.cpp"))
    classic = tmp_path / "classic" / "_autograd.py"
    _generate(run_cli, native, tmp_path / "out2", "--register-backends", "CPU", "--python-autograd", str(classic))
    assert "_AUTOCAST_LIBRARY" not in classic.read_text()


# -- the Python kernels, run: ops defined in Python, under torch.autocast("cpu", dtype=torch.bfloat16) ------
PY_OPS = """\
- func: keep(Tensor self) -> Tensor
  dispatch:
    CPU: keep
  autocast: fp32
- func: mix(Tensor self, Tensor other, *, float alpha=1) -> Tensor
  dispatch:
    CPU: mix
  autocast: promote
- func: mix.out(Tensor self, Tensor other, *, float alpha=1, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: mix_out
  autocast: promote
- func: sq(Tensor self, Tensor? shift=None) -> Tensor
  dispatch:
    CPU: sq
  autocast: lower
- func: bare(Tensor self) -> Tensor
  dispatch:
    CPU: bare
"""


@pytest.fixture(scope="module")
def python_ops(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The PY_OPS schemas in namespace ``acpy`` with Python CPU kernels (each checks the dtypes it got) and
    autograd, and the generated autocast kernels executed; yields the namespace's ops."""
    torch = pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("acpy")
    (tmp / "nf.yaml").write_text(PY_OPS)
    (tmp / "d.yaml").write_text("")
    model = load_model(Inputs(str(tmp / "nf.yaml"), str(tmp / "d.yaml"), None, "acpy"))
    source = python_autocast(plan_autocast(model.native_functions, ("CPU",)))
    lib = torch.library.Library("acpy", "DEF")
    for f in model.native_functions:
        lib.define(str(f.func))

    def same(*ts: Any) -> None:
        assert len({t.dtype for t in ts if t is not None}) == 1, [t.dtype for t in ts if t is not None]

    def keep(x: Any) -> Any:
        assert x.dtype in (torch.float32, torch.float64), x.dtype
        return x * 3

    def mix(a: Any, b: Any, *, alpha: float = 1) -> Any:
        same(a, b)
        return a + alpha * b

    def mix_out(a: Any, b: Any, *, alpha: float = 1, out: Any) -> Any:
        same(a, b)
        return out.copy_(a + alpha * b)

    def sq(x: Any, shift: Any = None) -> Any:
        same(x, shift)
        return x * x + (0 if shift is None else shift)

    for name, fn in (("keep", keep), ("mix", mix), ("mix.out", mix_out), ("sq", sq), ("bare", lambda x: x + 1)):
        lib.impl(name, fn, "CPU")
    backward = {
        "keep": lambda ctx, g: g * 3,
        "mix": lambda ctx, g: (g, g * ctx.alpha),
        "sq": lambda ctx, g: (2 * g * ctx.x, None if ctx.shift is None else g),
    }

    def setup(ctx: Any, inputs: tuple[Any, ...], output: Any, keyword_only_inputs: Any = None) -> None:
        ctx.x, ctx.shift = inputs[0], (inputs[1] if len(inputs) > 1 else None)
        ctx.alpha = (keyword_only_inputs or {}).get("alpha", 1)

    for name, fn in backward.items():
        torch.library.register_autograd(f"acpy::{name}", fn, setup_context=setup, lib=lib)
    namespace: dict[str, Any] = {}
    exec(compile(source, "acpy_autocast.py", "exec"), namespace)
    yield torch.ops.acpy, namespace
    for holder in (namespace["_AUTOCAST_LIBRARY"], lib):
        holder._destroy()


def _grad_dtype(y: Any) -> list[Any]:
    """The dtype of the gradient reaching ``y`` (the op's backward gets it): appended on backward."""
    seen: list[Any] = []
    y.register_hook(lambda g: seen.append(g.dtype))
    return seen


def test_python_kernels_give_each_policy_its_dtypes(python_ops: Any) -> None:
    import torch

    ops, _ = python_ops
    x = torch.randn(4, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(4, dtype=torch.float32, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        kept, mixed, squared = ops.keep(x), ops.mix(x, w, alpha=0.5), ops.sq(w, shift=w)
        bare = ops.bare(w)
        out = torch.empty(4)
        ops.mix.out(x.detach(), w.detach(), alpha=2.0, out=out)
    dtypes = (kept.dtype, mixed.dtype, squared.dtype, bare.dtype)
    assert dtypes == (torch.float32, torch.float32, torch.bfloat16, torch.float32)
    torch.testing.assert_close(out, x.detach().float() + 2 * w.detach())
    torch.testing.assert_close(mixed, x.detach().float() + 0.5 * w.detach())
    grads = [_grad_dtype(t) for t in (kept, mixed, squared)]
    (kept.sum() + mixed.sum() + squared.float().sum()).backward()
    assert grads == [[torch.float32], [torch.float32], [torch.bfloat16]]  # each backward ran in the op's dtype
    assert (x.grad.dtype, w.grad.dtype) == (torch.bfloat16, torch.float32)  # and reached each input in its own
    with torch.autocast("cpu", dtype=torch.bfloat16):  # promote: nothing wider than the autocast dtype in, nothing out
        assert ops.mix(x, x).dtype == torch.bfloat16
        assert ops.sq(torch.randn(2, dtype=torch.float64)).dtype == torch.float64  # float64 is never cast
    assert ops.sq(w).dtype == torch.float32  # outside autocast: no cast


def test_python_kernels_exist_only_for_ops_with_a_policy(python_ops: Any) -> None:
    import torch

    dumps = {name: torch._C._dispatch_dump(f"acpy::{name}") for name in ("keep", "mix", "mix.out", "sq", "bare")}
    assert [n for n, d in dumps.items() if "AutocastCPU" in d] == ["keep", "mix", "mix.out", "sq"], dumps["bare"]


def test_stable_mode_without_the_python_autograd_warns_at_each_policy(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """Without --python-autograd a stable library has nowhere to register its Autocast kernels: each policy
    is a warning at its op's line, not silently dropped."""
    native = tmp_yaml("nf.yaml", _stable(OPS))
    err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--register-backends", "CPU")
    warned = [line for line in err.splitlines() if "warning: autocast:" in line]
    assert [line.split(": warning:")[0] for line in warned] == [f"{native}:{n}" for n in (1, 5, 9, 13)], err
    assert "fp32 of ac::twice is not registered" in warned[0] and "PYTHON_AUTOGRAD" in warned[0]
    module = str(tmp_path / "py" / "_autograd.py")
    err = _generate(run_cli, native, tmp_path / "out", "--stable-abi", "2.10", "--register-backends", "CPU",
                    "--python-autograd", module)  # fmt: skip
    assert "warning: autocast" not in err, err
