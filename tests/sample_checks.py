"""Runtime checks of the sample op library, run in a child process that has torch and vtsample.

``python sample_checks.py [--library PATH] [NAME ...]`` loads the library (``import vtsample``,
or ``torch.ops.load_library(PATH)``), runs the named checks (all by default) and prints one JSON
object: ``{name: null}`` for a check that passed, ``{name: "<error>"}`` for one that failed.
tests/test_sample_runtime.py runs it once per built library and asserts on the result.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable

import torch
from torch.autograd import gradcheck, gradgradcheck

CHECKS: dict[str, Callable[[], None]] = {}


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


@check
def inplace_gradients() -> None:
    assert gradcheck(lambda t: ops().softsign_(t.clone()), (rand(5),), check_forward_ad=True)
    assert gradgradcheck(lambda t: ops().softsign_(t.clone()), (rand(5),))
    assert gradcheck(lambda a, b: ops().scale_add_(a.clone(), b, alpha=-2.0), (rand(4), rand(4)))


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
def non_differentiable_output() -> None:
    values, indices = ops().topk_abs(rand(3, 5), 2, 1)
    assert values.requires_grad and not indices.requires_grad


def main(argv: list[str]) -> int:
    names = list(argv)
    if names[:1] == ["--library"]:
        torch.ops.load_library(names[1])
        names = names[2:]
    else:
        import vtsample  # noqa: F401  (loads the op library)
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
