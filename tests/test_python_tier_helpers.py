"""The Python tier's helpers (``gradcheck_child/formula_helpers.py``) against the installed torch's compiled
ones: each helper's value equals the gradient (or tangent) torch's own autograd gives for an op whose
formula calls the C++ helper, on fixed samples with the awkward points (zeros, ties, -inf, complex)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from vtgen_build.gradcheck_child import formula_helpers as h  # noqa: E402  (torch first: skipped without it)

F64, C128 = torch.float64, torch.complex128
# forward AD's first use scripts torch's decompositions with torch.jit.script, which warns that it is deprecated
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _vjp(fn: Callable[..., Any], xs: tuple[Any, ...], seed: int = 0) -> tuple[Any, Any, tuple[Any, ...]]:
    """(output, the cotangent v, torch's Jᵀv per input)."""
    xs = tuple(x.detach().requires_grad_(True) for x in xs)
    out = fn(*xs)
    v = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(seed))
    grads = torch.autograd.grad(out, xs, v, allow_unused=True, materialize_grads=True)
    return out.detach(), v, grads


def _jvp(fn: Callable[..., Any], x: Any) -> tuple[Any, Any]:
    """(the tangent u, torch's J·u)."""
    import torch.autograd.forward_ad as fwad

    u = torch.randn(x.shape, dtype=x.dtype, generator=torch.Generator().manual_seed(7))
    with fwad.dual_level():
        return u, fwad.unpack_dual(fn(fwad.make_dual(x, u))).tangent


def _with_zero(dtype: Any = F64) -> Any:
    x = torch.randn(3, 4, dtype=dtype, generator=torch.Generator().manual_seed(3))
    x[0, 1] = 0
    return x


def _close(a: Any, b: Any) -> None:
    assert torch.allclose(a, b, rtol=1e-7, atol=1e-10, equal_nan=True), (a, b)


@pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])
@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.5, float("inf"), -float("inf")])
@pytest.mark.parametrize("dim", [(), [1], [0, 1]], ids=["all", "dim1", "both"])
def test_norm_helpers(dtype: Any, p: float, dim: list[int]) -> None:
    x, keepdim = _with_zero(dtype), dim == [0, 1]
    out, v, (g,) = _vjp(lambda a: torch.linalg.vector_norm(a, p, dim or None, keepdim), (x,))
    _close(h.linalg_vector_norm_backward(v, x, p, out, dim or None, keepdim), g)
    u, t = _jvp(lambda a: torch.linalg.vector_norm(a, p, dim or None, keepdim), x)
    _close(h.linalg_vector_norm_jvp(x, u, p, out, dim or None, keepdim), t)


def test_reduction_helpers() -> None:
    x = torch.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [1.5, -2.0, 0.5]], dtype=F64)
    out, v, (g,) = _vjp(lambda a: a.prod(), (x,))
    _close(h.prod_backward(v, x, out), g)
    out, v, (g,) = _vjp(lambda a: a.prod(1), (x,))
    _close(h.prod_backward(v, x, out, 1, False), g)
    u, t = _jvp(lambda a: a.cumprod(1), x)
    _close(h.cumprod_jvp(u, x, x.cumprod(1), 1), t)
    out, v, (g,) = _vjp(lambda a: torch.logsumexp(a, [1]), (x,))
    _close(h.logsumexp_backward(v, x, out, [1], False), g)
    for dtype in (F64, C128):
        y = _with_zero(dtype)
        out, v, (g,) = _vjp(lambda a: torch.logcumsumexp(a, 1), (y,))
        _close(h.logcumsumexp_backward(v, y, out, 1), g)
        u, t = _jvp(lambda a: torch.logcumsumexp(a, 1), y)
        _close(h.logcumsumexp_jvp(y, u, 1), t)
    ties = torch.tensor([[1.0, 3.0, 3.0], [2.0, -1.0, -1.0]], dtype=F64).requires_grad_(True)
    for dim, keepdim in ((None, False), (1, False), (0, True)):
        low, high = torch.aminmax(ties, dim=dim, keepdim=keepdim)
        v1, v2 = torch.randn_like(low), torch.randn_like(high)
        (g,) = torch.autograd.grad((low, high), ties, (v1, v2))
        _close(h.aminmax_backward(ties.detach(), dim, keepdim, v1, v2, low.detach(), high.detach()), g)
        import torch.autograd.forward_ad as fwad

        u = torch.randn_like(ties)
        with fwad.dual_level():
            tangents = [fwad.unpack_dual(o).tangent for o in torch.aminmax(fwad.make_dual(ties.detach(), u), dim=dim,
                                                                           keepdim=keepdim)]  # fmt: skip
        for value, tangent in zip((low, high), tangents, strict=True):
            _close(h.aminmax_jvp(ties.detach(), u, value.detach(), dim, keepdim), tangent)


def test_softmax_and_logsumexp_helpers() -> None:
    x = torch.randn(3, 4, dtype=F64, generator=torch.Generator().manual_seed(5))
    y, go = x.softmax(1), torch.randn_like(x)
    _, _, (g,) = _vjp(lambda out: torch._softmax_backward_data(go, out, 1, F64), (y,), seed=1)
    v = torch.randn(y.shape, dtype=F64, generator=torch.Generator().manual_seed(1))
    _close(h.softmax_double_backward(v, go, 1, y), g)
    masked = x.clone()
    masked[1] = -float("inf")  # a slice all -inf: _safe_softmax gives zeros there, and a zero tangent
    u, t = _jvp(lambda a: torch._safe_softmax(a, 1), masked)
    out = torch._safe_softmax(masked, 1)
    _close(out * (u - h.safe_logsumexp_jvp(masked, u, [1], True)), t)


def test_shape_and_pointwise_helpers() -> None:
    z = torch.randn(2, 3, dtype=F64, generator=torch.Generator().manual_seed(9))
    _, v, (g,) = _vjp(lambda a: a.repeat(2, 1, 3), (z,))
    _close(h.repeat_backward(v, [2, 1, 3], [2, 3]), g)
    for approximate in ("none", "tanh"):
        go = torch.randn(5, dtype=F64, generator=torch.Generator().manual_seed(2))
        x = torch.linspace(-3, 3, 5, dtype=F64)
        _, v, (g,) = _vjp(lambda a, o=go, ap=approximate: torch.ops.aten.gelu_backward(o, a, approximate=ap), (x,))
        _close(h.gelu_double_backward(v, go, x, approximate), g)
    s, w = torch.tensor([0.2, 0.5, 0.9, 0.1], dtype=F64), torch.tensor([1.0, 0.5, 2.0, 1.5], dtype=F64)
    target = torch.tensor([0.3, 0.0, 1.0, 0.6], dtype=F64)
    for reduction, name in enumerate(("none", "mean", "sum")):
        _, v, (g,) = _vjp(lambda t, n=name: torch.nn.functional.binary_cross_entropy(s, t, w, reduction=n), (target,))
        _close(h.binary_cross_entropy_target_backward(v, s, target, w, reduction), g)
    mask, scale = torch.tensor([True, False, True]), 2.5
    grad = torch.randn(3, dtype=F64)
    _, v, (g,) = _vjp(lambda a: torch.ops.aten.native_dropout_backward(a, mask, scale), (grad,))
    _close(h.native_dropout_double_backward(v, grad, mask, scale), g)
    _close(h.infinitely_differentiable_native_dropout_backward(grad, mask, scale), grad * mask * scale)


@pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])
def test_tensor_list_helpers(dtype: Any) -> None:
    """split's, split_with_sizes's and unbind's gradients from their pieces' (one piece without a gradient:
    torch's own autograd gives it zeros), against torch's own autograd of the ops."""
    x = torch.randn(5, 3, dtype=dtype, generator=torch.Generator().manual_seed(4)).requires_grad_(True)
    options = {"dtype": dtype, "device": x.device, "layout": x.layout}
    for pieces, ours in (
        (x.split(2, 0), lambda gs: h.split_backward(gs, 2, 0, x.shape, **options)),
        (x.split([1, 2], 1), lambda gs: h.split_with_sizes_backward(gs, [1, 2], -1, x.shape, **options)),
        (x.unbind(1), lambda gs: h.unbind_backward(gs, 1)),
    ):
        vs = [torch.randn(p.shape, dtype=dtype, generator=torch.Generator().manual_seed(i)) for i, p in
              enumerate(pieces)]  # fmt: skip
        (g,) = torch.autograd.grad(pieces[1:], x, vs[1:])
        _close(ours([None, *vs[1:]]), g)


@pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])
def test_logsumexp_jvp_shifts_by_the_real_part(dtype: Any) -> None:
    """A complex input's largest element is its real part's (amax has no complex kernel)."""
    x = _with_zero(dtype)
    u, t = _jvp(lambda a: torch.logsumexp(a, [1]), x)
    _close(h.logsumexp_jvp(x, u, [1], False), t)


def test_helpers_no_whole_yaml_agree_check_reaches() -> None:
    """Helpers whose entries the whole-yaml agree check does not reach (their samples raise, or have none)."""
    x = torch.tensor([-2.0, -0.5, 0.3, 1.5, 2.5], dtype=F64)
    low, high = torch.tensor([-1.0, -1.0, 0.0, 2.0, 3.0], dtype=F64), torch.tensor([1.0, 1.0, 1.0, 1.0, 2.0], dtype=F64)
    _, v, (_, g_low, g_high) = _vjp(torch.clamp, (x, low, high))
    ours_low, ours_high = h.clamp_backward_min_max(v, x, low, high, [True, True])
    _close(ours_low, g_low)
    _close(ours_high, g_high)
    import torch.autograd.forward_ad as fwad

    tangents = [torch.randn(5, dtype=F64, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    with fwad.dual_level():
        dual = torch.clamp(*(fwad.make_dual(p, t) for p, t in zip((x, low, high), tangents, strict=True)))
        expected = fwad.unpack_dual(dual).tangent
    _close(h.clamp_jvp(x, tangents[0], low, tangents[1], high, tangents[2]), expected)
    base = torch.randn(4, 3, dtype=F64)
    rows = torch.tensor([0, 2, 0])
    _, v, (g,) = _vjp(lambda a: a[rows], (base,))
    _close(h.index_backward(torch.zeros_like(base), [rows], v), g)
    nan = torch.tensor([[1.0, float("nan"), 2.0], [0.5, 3.0, float("nan")]], dtype=F64)
    _, v, (g,) = _vjp(lambda a: a.nansum(1), (nan,))
    _close(h.nansum_backward(v, nan, [1], False), g)
    go = torch.randn(5, dtype=F64)
    buffer = torch.ops.aten.log_sigmoid_forward(x)[1]
    _, v, (g,) = _vjp(lambda a: torch.ops.aten.log_sigmoid_backward(go, a, buffer), (x,))
    _close(h.log_sigmoid_double_backward(v * go, x), g)
