"""Runtime checks of the sample op library, run in a child process that has torch and vtsample.

``python sample_checks.py [--library PATH] [NAME ...]`` loads the library (``import vtsample``,
or ``torch.ops.load_library(PATH)``), runs the named checks (all by default) and prints one JSON
object: ``{name: null}`` for a check that passed, ``{name: "<error>"}`` for one that failed.
tests/test_sample_runtime.py runs it once per built library and asserts on the result.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import gradcheck, gradgradcheck

CHECKS: dict[str, Callable[[], None]] = {}
LOADER: list[str] = []  # how main() loaded the library (its options): a fresh process does the same


def check(fn: Callable[[], None]) -> Callable[[], None]:
    CHECKS[fn.__name__] = fn
    return fn


def ops() -> torch._ops._OpNamespace:
    return torch.ops.vtsample


def rand(*shape: int, grad: bool = True, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


def raises(fragment: str, fn: Callable[[], object]) -> None:
    """``fn()`` raises a RuntimeError (or NotImplementedError) whose message holds ``fragment``."""
    try:
        fn()
    except (RuntimeError, NotImplementedError) as e:
        assert fragment in str(e), f"expected {fragment!r} in: {e}"
        return
    raise AssertionError(f"no error (expected one with {fragment!r})")


def all_grad_checks(fn: Callable[..., torch.Tensor], inputs: tuple[torch.Tensor, ...], forward: bool = True) -> None:
    """Backward (first and second order) and, when the op has a forward formula, forward AD."""
    assert gradcheck(fn, inputs, check_forward_ad=forward), "gradcheck"
    assert gradgradcheck(fn, inputs), "gradgradcheck"


# --- values ---------------------------------------------------------------------------------


@check
def forward_values() -> None:
    x, y = rand(5, grad=False), rand(5, grad=False)
    torch.testing.assert_close(ops().softsign(x), x / (1 + x.abs()))
    torch.testing.assert_close(ops().scale_add(x, y, alpha=2.5), x + 2.5 * y)
    torch.testing.assert_close(ops().swap_dims(rand(2, 3, grad=False), 0, 1).shape, torch.Size([3, 2]))
    torch.testing.assert_close(ops().stack_mean([x, y]), (x + y) / 2)


# --- gradients, per differentiable op (float64) ---------------------------------------------


@check
def softsign_kernel_one_pass() -> None:
    """softsign on a float32 contiguous input (its batching rule's one call on a vmap batch too) runs
    one pass of the sample's kernel: no ATen op but its output's allocation (three ATen ops, a
    temporary and a tensor of the scalar 1 made vmap of it dearer than vmap of the aten expression)."""
    x = rand(64, 256, grad=False, dtype=torch.float32)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        y = ops().softsign(x)
        batched = torch.vmap(ops().softsign)(x)
    called = [e.name for e in prof.events() if e.name.startswith("aten::")]
    assert called == ["aten::empty", "aten::empty"], called
    for got in (y, batched):
        torch.testing.assert_close(got, x / (1 + x.abs()))
    for dtype in (torch.float64, torch.bfloat16):  # the pass in float64; another dtype through ATen
        z = rand(7, grad=False, dtype=dtype)
        torch.testing.assert_close(ops().softsign(z), z / (1 + z.abs()))
    t = rand(6, 4, grad=False).t()  # a non-contiguous self
    torch.testing.assert_close(ops().softsign(t), t / (1 + t.abs()))


@check
def softsign_gradients() -> None:  # forward formula: auto_element_wise
    all_grad_checks(ops().softsign, (rand(6),))


@check
def scale_add_gradients() -> None:
    all_grad_checks(lambda a, b: ops().scale_add(a, b, alpha=2.5), (rand(4), rand(4)))


@check
def topk_abs_gradients() -> None:
    all_grad_checks(lambda t: ops().topk_abs(t, 2, 1)[0], (rand(3, 5),))


@check
def stack_mean_gradients() -> None:  # Tensor[]: one gradient per list element
    all_grad_checks(lambda a, b, c: ops().stack_mean([a, b, c], 0), (rand(4), rand(4), rand(4)), forward=False)


@check
def affine_gradients() -> None:  # Tensor? present
    all_grad_checks(ops().affine, (rand(3, 4), rand(2, 4), rand(2)))


@check
def affine_without_bias_gradients() -> None:  # Tensor? absent
    all_grad_checks(lambda i, w: ops().affine(i, w, None), (rand(3, 4), rand(2, 4)))


@check
def tile_to_gradients() -> None:  # SymInt[]
    x = rand(1, 3)
    assert ops().tile_to(x, [4, 3]).shape == (4, 3)
    all_grad_checks(lambda t: ops().tile_to(t, [4, 3]), (x,))


@check
def swap_dims_gradients() -> None:  # a view; forward formula: auto_linear
    all_grad_checks(lambda t: ops().swap_dims(t, 0, 1), (rand(2, 3),))


@check
def soft_quantize_gradients() -> None:  # only `self` has a formula
    scale = torch.tensor(1.5, dtype=torch.float64)
    all_grad_checks(lambda t: ops().soft_quantize(t, scale, 3), (rand(5),), forward=False)


@check
def complex_is_refused() -> None:
    """No sample op is declared complex-differentiable: PyTorch's complex-autograd error."""
    z = rand(3, dtype=torch.complex128)
    raises("does not support automatic differentiation for outputs with complex dtype", lambda: ops().scale_add(z, z))


# --- in-place and out= ----------------------------------------------------------------------


def softsign_inplace(t: torch.Tensor) -> torch.Tensor:
    """``softsign_`` on a copy of ``t`` (it returns nothing: ``-> ()``, the form torch.compile takes)."""
    t = t.clone()
    ops().softsign_(t)
    return t


def scale_add_inplace(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a = a.clone()
    ops().scale_add_(a, b, alpha=-2.0)
    return a


@check
def inplace_gradients() -> None:
    assert gradcheck(softsign_inplace, (rand(5),), check_forward_ad=True)
    assert gradgradcheck(softsign_inplace, (rand(5),))
    assert gradcheck(scale_add_inplace, (rand(4), rand(4)))


@check
def inplace_on_saved_input_is_detected() -> None:
    a = rand(4).clone()
    out = ops().softsign(a)  # saves a
    ops().softsign_(a)  # our ADInplaceOrView kernel bumps a's version
    raises("modified by an inplace operation", lambda: out.sum().backward())


@check
def inplace_on_leaf_is_refused() -> None:
    raises(
        "a leaf Variable that requires grad is being used in an in-place operation", lambda: ops().softsign_(rand(3))
    )


@check
def out_with_grad_is_refused() -> None:
    out = torch.empty(3, dtype=torch.float64)
    raises("don't support automatic differentiation", lambda: ops().softsign.out(rand(3), out=out))
    ops().softsign.out(rand(3, grad=False), out=out)  # without grad it works


# --- views ----------------------------------------------------------------------------------


@check
def view_aliases_and_rebases() -> None:
    base = rand(2, 3).clone()
    view = ops().swap_dims(base, 0, 1)
    assert view._is_view() and view._base is base, "the output is a view of its input"
    ops().softsign_(view)  # in place on the view: the base's history is rebased
    assert base.grad_fn is not None and "CopySlices" in type(base.grad_fn).__name__, base.grad_fn

    def through_view(t: torch.Tensor) -> torch.Tensor:
        b = t.clone()
        ops().softsign_(ops().swap_dims(b, 0, 1))
        return b

    assert gradcheck(through_view, (rand(2, 3),))
    assert gradgradcheck(through_view, (rand(2, 3),))


# --- what autograd refuses or skips ---------------------------------------------------------


@check
def not_implemented_names_the_op() -> None:
    scale = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    out = ops().soft_quantize(rand(4), scale, 3)
    raises("soft_quantize backward for scale", lambda: out.sum().backward())


@check
def missing_forward_formula_names_the_entry() -> None:
    """stack_mean's entry has no forward formula: a tangent reaching it is refused, naming that entry
    (not PyTorch's "please file an issue" of a missing decomposition)."""
    import torch.autograd.forward_ad as fwad

    with fwad.dual_level():
        x = fwad.make_dual(rand(3, grad=False), rand(3, grad=False))
        raises(
            "its derivatives.yaml entry 'stack_mean(Tensor[] tensors, int dim=0) -> Tensor' has no forward formula",
            lambda: ops().stack_mean([x, x]),
        )


@check
def non_differentiable_output() -> None:
    values, indices = ops().topk_abs(rand(3, 5), 2, 1)
    assert values.requires_grad and not indices.requires_grad


# --- PyTorch's own custom-op tests: opcheck, torch.compile, torch.export -------------------------
# Every op and variant gets opcheck's four default tests, except the view op: PyTorch cannot
# functionalize a custom op returning a view of its input, so torch.compile
# (test_aot_dispatch_dynamic) refuses it; it gets the other three, and
# `view_op_refused_by_compile` checks PyTorch's own error.
ALL_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
EAGER_TESTS = ALL_TESTS[:3]


def opcheck(op: torch._ops.OpOverload, args: tuple[object, ...], kwargs: dict[str, object] | None = None) -> None:
    view = any(r.alias_info is not None and not r.alias_info.is_write for r in op._schema.returns)
    tests = EAGER_TESTS if view else ALL_TESTS
    results = torch.library.opcheck(op, args, kwargs or {}, test_utils=tests)
    failed = {k: v for k, v in results.items() if v != "SUCCESS"}
    assert not failed, failed


def nonleaf(*shape: int) -> torch.Tensor:
    return rand(*shape) * 1.0


def opcheck_case(
    name: str, make: Callable[[], tuple[torch._ops.OpOverload, tuple[object, ...], dict[str, object]]]
) -> None:
    def run() -> None:
        opcheck(*make())

    run.__name__ = f"opcheck_{name}"
    check(run)


OPCHECK_CASES: dict[str, Callable[[], tuple[torch._ops.OpOverload, tuple[object, ...], dict[str, object]]]] = {
    "softsign": lambda: (ops().softsign.default, (rand(3, 4),), {}),
    "softsign_": lambda: (ops().softsign_.default, (nonleaf(3, 4),), {}),
    "softsign_out": lambda: (
        ops().softsign.out,
        (rand(3, 4, grad=False),),
        {"out": torch.empty(0, dtype=torch.float64)},
    ),
    "scale_add": lambda: (ops().scale_add.default, (rand(3, 4), rand(4)), {"alpha": 2.0}),
    "scale_add_": lambda: (ops().scale_add_.default, (nonleaf(3, 4), rand(4)), {"alpha": 2.0}),
    "scale_add_out": lambda: (
        ops().scale_add.out,
        (rand(3, 4, grad=False), rand(4, grad=False)),
        {"out": torch.empty(3, 4, dtype=torch.float64)},
    ),
    "topk_abs": lambda: (ops().topk_abs.default, (rand(3, 5), 2, 1), {}),
    "stack_mean": lambda: (ops().stack_mean.default, ([rand(3), rand(3)], 0), {}),
    "affine": lambda: (ops().affine.default, (rand(2, 3), rand(4, 3), rand(4)), {}),
    "tile_to": lambda: (ops().tile_to.default, (rand(1, 3), [2, 3]), {}),
    "swap_dims": lambda: (ops().swap_dims.default, (rand(2, 3), 0, 1), {}),
    "soft_quantize": lambda: (ops().soft_quantize.default, (rand(4), torch.tensor(1.5, dtype=torch.float64), 3), {}),
}
for _name, _make in OPCHECK_CASES.items():
    opcheck_case(_name, _make)


def functional_ops(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Every functional differentiable sample op (swap_dims, a view, is eager-only)."""
    v = ops().softsign(x)
    v = ops().scale_add(v, x, alpha=0.5)
    values, _ = ops().topk_abs(v, 2, 1)
    v = ops().affine(v, w, b)
    v = ops().stack_mean([v, ops().tile_to(b, [v.shape[0], b.shape[0]])], 0)
    q = ops().soft_quantize(x, torch.tensor(1.5, dtype=x.dtype), 3)
    return v.sum() + values.sum() + q.sum()


def compiled_equals_eager(dynamic: bool) -> None:
    torch._dynamo.reset()
    inputs = (rand(3, 5), rand(4, 5), rand(4))
    expected = functional_ops(*inputs)
    expected_grads = torch.autograd.grad(expected, inputs)
    compiled = torch.compile(functional_ops, fullgraph=True, dynamic=dynamic)  # the default backend: Inductor
    got = compiled(*inputs)
    torch.testing.assert_close(got, expected)
    for g, e in zip(torch.autograd.grad(got, inputs), expected_grads, strict=True):
        torch.testing.assert_close(g, e)


@check
def compile_static_equals_eager() -> None:
    compiled_equals_eager(dynamic=False)


@check
def compile_dynamic_equals_eager() -> None:
    compiled_equals_eager(dynamic=True)


class ThreeOps(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 5, dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ops().affine(ops().scale_add(ops().softsign(x), x, alpha=2.0), self.weight, self.bias)


@check
def export_three_ops() -> None:
    module, x = ThreeOps(), rand(3, 5, grad=False)
    exported = torch.export.export(module, (x,))
    targets = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
    assert {"vtsample.softsign.default", "vtsample.scale_add.default", "vtsample.affine.default"} <= targets, targets
    torch.testing.assert_close(exported.module()(x), module(x))


class AllOps(torch.nn.Module):
    """Every functional differentiable op (functional_ops), its weight and bias parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 5, dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional_ops(x, self.weight, self.bias)


def loaded_in_fresh_process(path: str) -> None:
    """``torch.export.load(path)`` in this fresh process (which loaded the library as its parent
    did): its outputs on the inputs saved beside it equal the ones the parent computed eagerly."""
    program = torch.export.load(path)
    x, expected = torch.load(path + ".io", weights_only=True)
    torch.testing.assert_close(program.module()(x), expected)


def aoti_loaded_in_fresh_process(path: str) -> None:
    """``aoti_load_package(path)`` in this fresh process: eager's outputs, as loaded_in_fresh_process."""
    runner = torch._inductor.aoti_load_package(path)
    x, expected = torch.load(path + ".io", weights_only=True)
    with torch.no_grad():
        torch.testing.assert_close(runner(x), expected)


def _in_fresh_process(flag: str, path: str) -> None:
    """Run this script with the parent's way of loading the library and ``flag path``: LOADED-OK."""
    import subprocess

    done = subprocess.run([sys.executable, __file__, *LOADER, flag, path], capture_output=True, text=True,
                          check=False, timeout=900)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "LOADED-OK", done.stdout + done.stderr[-3000:]


def _program_and_inputs(name: str) -> tuple[torch.export.ExportedProgram, str]:
    """AllOps exported, and where its package goes (the inputs and eager outputs saved beside it)."""
    module, x = AllOps(), rand(3, 5, grad=False)
    with torch.no_grad():
        expected = module(x)
    path = os.path.join(tempfile.mkdtemp(prefix="vtsample-export-"), name)
    torch.save((x, expected), path + ".io")
    return torch.export.export(module, (x,)), path


@check
def export_save_load_in_fresh_process() -> None:
    """torch.export.export -> torch.export.save, then torch.export.load in a fresh process that
    imports the library: the same values as eager."""
    program, path = _program_and_inputs("all_ops.pt2")
    torch.export.save(program, path)
    _in_fresh_process("--load-exported", path)


# The ops of AllOps, each called once: the AOTInductor C shim each call goes through.
AOTI_SHIMS = tuple(f"aoti_torch_cpu_{op}" for op in ("softsign", "scale_add", "topk_abs", "affine", "tile_to",
                                                      "stack_mean", "soft_quantize"))  # fmt: skip
PROXY_CALL = "aoti_torch_proxy_executor_call_function("


def aoti_wrapper_source(program: torch.export.ExportedProgram, path: str) -> str:
    """aoti_compile_and_package(program) into ``path``: the generated C++ wrapper's source."""
    import zipfile

    torch._inductor.aoti_compile_and_package(program, package_path=path)
    with zipfile.ZipFile(path) as package:
        (wrapper,) = [n for n in package.namelist() if n.endswith(".wrapper.cpp")]
        return package.read(wrapper).decode()


def shims_not_called(source: str, shims: tuple[str, ...] = AOTI_SHIMS) -> list[str]:
    """The shims a wrapper's source does not call (a declaration is not a call)."""
    return [s for s in shims if f"AOTI_TORCH_ERROR_CODE_CHECK({s}(" not in source]


@check
def aoti_package_loads_in_fresh_process() -> None:
    """AOTInductor: aoti_compile_and_package of every functional op, aoti_load_package in a fresh
    process that loads the library: eager's values.  The library's generated C shims are installed
    (vtsample.ops.install_aoti_c_shims, at import): the wrapper calls each op of ours through its
    shim, directly, and never through AOTInductor's proxy executor."""
    assert inductor_config().custom_ops_to_c_shims, "import vtsample installed no C shim"
    program, path = _program_and_inputs("all_ops_aoti.pt2")
    source = aoti_wrapper_source(program, path)
    assert not shims_not_called(source), f"not called: {shims_not_called(source)}"
    assert PROXY_CALL not in source, f"{source.count(PROXY_CALL)} proxy-executor calls"
    _in_fresh_process("--load-aoti", path)


@check
def aoti_missing_shim_is_detected() -> None:
    """The shim check above can fail: with softsign's shim left out of custom_ops_to_c_shims, the
    wrapper calls softsign through the proxy executor (one call), shims_not_called names it, and
    the package still gives eager's values.  With no shim listed, every op goes through the proxy."""
    import torch._inductor.config as config

    shims = dict(inductor_config().custom_ops_to_c_shims)
    del shims[ops().softsign.default]
    program, path = _program_and_inputs("all_ops_aoti_one_missing.pt2")
    with config.patch({"aot_inductor.custom_ops_to_c_shims": shims}):
        source = aoti_wrapper_source(program, path)
    assert shims_not_called(source) == ["aoti_torch_cpu_softsign"], shims_not_called(source)
    assert source.count(PROXY_CALL) == 1, f"{source.count(PROXY_CALL)} proxy-executor calls (softsign's expected)"
    runner = torch._inductor.aoti_load_package(path)
    x, expected = torch.load(path + ".io", weights_only=True)
    with torch.no_grad():
        torch.testing.assert_close(runner(x), expected)


def inductor_config() -> Any:
    """torch._inductor.config.aot_inductor (where vtsample's import lists its C shims)."""
    import torch._inductor.config as config

    return config.aot_inductor


@check
def view_op_refused_by_compile() -> None:
    """PyTorch's rule: a custom op returning a view of its input is not supported by torch.compile."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: ops().swap_dims(t, 0, 1) * 2, fullgraph=True)
    try:
        compiled(rand(2, 3))
    except Exception as e:  # dynamo wraps the backend's error
        assert "alias" in str(e), str(e)[-2000:]
        return
    raise AssertionError("torch.compile accepted a custom view op")


@check
def out_variant_compiles() -> None:
    """An out= variant in PyTorch's `-> Tensor(a!)` convention (no grad through out=): torch.compile
    functionalizes it; the value written equals eager's."""
    torch._dynamo.reset()

    def fill(t: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(t)  # of the right shape: dynamo refuses to trace the resize of out=
        ops().softsign.out(t, out=out)
        return out

    x = rand(3, grad=False)
    torch.testing.assert_close(torch.compile(fill, fullgraph=True)(x), fill(x))


@check
def inplace_in_compile_style_compiles() -> None:
    """`softsign_(Tensor(a!) self) -> ()`: torch.compile(fullgraph) functionalizes it; values and
    gradients equal eager."""
    torch._dynamo.reset()
    x = rand(4)
    compiled = torch.compile(softsign_inplace, fullgraph=True)
    got, expected = compiled(x), softsign_inplace(x)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(torch.autograd.grad(got.sum(), x)[0], torch.autograd.grad(expected.sum(), x)[0])


@check
def structured_meta_error_same_under_fake_tensors() -> None:
    """scale_add's meta function rejects shapes that do not broadcast: the same error in eager
    (the CPU kernel runs it) and under fake tensors (the generated Meta kernel runs it)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def message(fn: Callable[[], object]) -> str:
        try:
            fn()
        except RuntimeError as e:
            return str(e).splitlines()[0]
        raise AssertionError("no error")

    eager = message(lambda: ops().scale_add(rand(3), rand(4)))
    with FakeTensorMode():
        a, b = torch.empty(3, dtype=torch.float64), torch.empty(4, dtype=torch.float64)
        fake = message(lambda: ops().scale_add(a, b))
    assert "must match the size" in eager, eager
    assert eager == fake, (eager, fake)


# --- autocast: the yaml's `autocast:` policies, under torch.autocast("cpu", dtype=torch.bfloat16) ----------


def grad_dtypes(*outputs: torch.Tensor) -> list[list[torch.dtype]]:
    """The dtype of the gradient reaching each output (what the op's backward gets), filled by backward."""
    seen: list[list[torch.dtype]] = [[] for _ in outputs]
    for found, t in zip(seen, outputs, strict=True):
        t.register_hook(lambda g, found=found: found.append(g.dtype))
    return seen


def was_cast(t: torch.Tensor) -> bool:
    """Does ``t``'s op take one of its inputs through a cast (the autocast kernel's ``to``)?"""
    assert t.grad_fn is not None
    return any(fn is not None and type(fn).__name__ == "ToCopyBackward0" for fn, _ in t.grad_fn.next_functions)


@check
def autocast_fp32_runs_in_float32() -> None:  # softsign: `autocast: fp32`
    x = rand(6, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ops().softsign(x)
    assert y.dtype == torch.float32 and was_cast(y), y.dtype
    torch.testing.assert_close(y, x.detach().float() / (1 + x.detach().float().abs()))
    seen = grad_dtypes(y)
    y.sum().backward()
    assert seen == [[torch.float32]] and x.grad is not None and x.grad.dtype == torch.bfloat16, (seen, x.grad)


@check
def autocast_promote_runs_in_the_widest_type() -> None:  # scale_add, scale_add.out: `autocast: promote`
    a, b = rand(4, dtype=torch.bfloat16), rand(4, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ops().scale_add(a, b, alpha=0.5)  # a keyword-only argument: passed through untouched
        same = ops().scale_add(a, a)
        out = torch.empty(4)
        ops().scale_add(a.detach(), b.detach(), alpha=2.0, out=out)  # out= is never cast
    assert (y.dtype, same.dtype) == (torch.float32, torch.bfloat16) and was_cast(y), (y.dtype, same.dtype)
    torch.testing.assert_close(y, a.detach().float() + 0.5 * b.detach())
    torch.testing.assert_close(out, a.detach().float() + 2 * b.detach())
    seen = grad_dtypes(y)
    y.sum().backward()
    assert seen == [[torch.float32]], seen
    assert a.grad is not None and b.grad is not None and (a.grad.dtype, b.grad.dtype) == (torch.bfloat16, torch.float32)


@check
def autocast_lower_runs_in_the_autocast_dtype() -> None:  # affine: `autocast: lower`
    i, w, b = rand(3, 4, dtype=torch.float32), rand(5, 4, dtype=torch.float32), rand(5, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ops().affine(i, w, b)
        unbiased = ops().affine(i, w)  # Tensor? absent
        wide = ops().affine(i.detach().double(), w.detach().double())  # float64 is never cast
    assert (y.dtype, unbiased.dtype, wide.dtype) == (torch.bfloat16, torch.bfloat16, torch.float64)
    torch.testing.assert_close(y.float(), i.detach() @ w.detach().t() + b.detach(), atol=0.1, rtol=0.05)
    seen = grad_dtypes(y)
    y.float().sum().backward()
    assert seen == [[torch.bfloat16]], seen
    assert all(t.grad is not None and t.grad.dtype == torch.float32 for t in (i, w, b))


@check
def autocast_only_ops_with_a_policy() -> None:
    """Each policy's op has an AutocastCPU kernel; an op without one has none (its inputs pass as they are)."""
    with_kernel = [op for op in ("softsign", "scale_add", "scale_add.out", "affine", "topk_abs", "softsign_")
                   if "AutocastCPU" in torch._C._dispatch_dump(f"vtsample::{op}")]  # fmt: skip
    assert with_kernel == ["softsign", "scale_add", "scale_add.out", "affine"], with_kernel
    x = rand(5, grad=False, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ops().topk_abs(x, 2)[0].dtype == torch.float32


def load_fake_module(path: str) -> None:
    import importlib.util
    import types

    sys.modules.setdefault("vtsample", types.ModuleType("vtsample"))
    spec = importlib.util.spec_from_file_location("vtsample._fake", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["vtsample._fake"] = module
    spec.loader.exec_module(module)


def main(argv: list[str]) -> int:
    # A fresh Inductor cache: its key does not cover the ops' schemas and tags, so a cache filled
    # by another build of the library could answer for this one.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="vtsample-inductor-"))
    names = list(argv)
    if names[:1] == ["--library"]:
        torch.ops.load_library(names[1])
        names = names[2:]
        if names[:1] == ["--fake"]:  # the package's fake kernels, imported under their module name
            load_fake_module(names[1])
            names = names[2:]
    else:
        import vtsample  # noqa: F401  (loads the op library)
    LOADER.extend(argv[: len(argv) - len(names)])
    if names[:1] in (["--load-exported"], ["--load-aoti"]):  # the fresh process of an export check
        (loaded_in_fresh_process if names[0] == "--load-exported" else aoti_loaded_in_fresh_process)(names[1])
        print("LOADED-OK")
        return 0
    results: dict[str, str | None] = {}
    for name in names or list(CHECKS):
        torch.manual_seed(0)
        try:
            CHECKS[name]()
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc(limit=3)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
