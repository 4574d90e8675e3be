"""The Python tier's helpers (``gradcheck_child/formula_helpers.py``) against the installed torch's compiled
ones: each helper's value equals the gradient (or tangent) torch's own autograd gives for an op whose
formula calls the C++ helper, on fixed samples with the awkward points (zeros, ties, -inf, complex)."""

from __future__ import annotations

import warnings
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


def _vjps(fn: Callable[..., Any], xs: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """(the outputs, a cotangent of each, torch's Jᵀv per input) for several outputs and inputs."""
    xs = tuple(x.detach().requires_grad_(True) for x in xs)
    out = fn(*xs)
    outs = out if isinstance(out, tuple) else (out,)
    vs = tuple(torch.randn(o.shape, dtype=o.dtype, generator=torch.Generator().manual_seed(21 + i))
               for i, o in enumerate(outs))  # fmt: skip
    grads = torch.autograd.grad(outs, xs, vs, allow_unused=True, materialize_grads=True)
    return tuple(o.detach() for o in outs), vs, grads


def _jvps(fn: Callable[..., Any], xs: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(the tangents u, torch's J·u of each output) for several inputs and outputs."""
    import torch.autograd.forward_ad as fwad

    us = tuple(torch.randn(x.shape, dtype=x.dtype, generator=torch.Generator().manual_seed(11 + i))
               for i, x in enumerate(xs))  # fmt: skip
    with fwad.dual_level():
        out = fn(*(fwad.make_dual(x, u) for x, u in zip(xs, us, strict=True)))
        outs = out if isinstance(out, tuple) else (out,)
        return us, tuple(fwad.unpack_dual(o).tangent for o in outs)


def _matrices(dtype: Any, *shape: int, seed: int = 4) -> Any:
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _positive_definite(dtype: Any) -> Any:
    a = _matrices(dtype, 2, 3, 3)
    return a @ a.mH + 3 * torch.eye(3, dtype=dtype)


DTYPES = pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])


@DTYPES
@pytest.mark.parametrize(("dim", "corr", "keepdim"), [(None, None, False), ([1], 0, False), ([0, 1], 2, True)])
def test_variance_helpers(dtype: Any, dim: Any, corr: Any, keepdim: bool) -> None:
    x = _with_zero(dtype)
    (out,), (v,), (g,) = _vjps(lambda a: torch.var(a, dim, correction=corr, keepdim=keepdim), (x,))
    _close(h.var_backward(v, x, dim, corr, keepdim), g)
    (out,), (v,), (g,) = _vjps(lambda a: torch.std(a, dim, correction=corr, keepdim=keepdim), (x,))
    _close(h.std_backward(out, v, x, dim, corr, keepdim), g)
    _, (v1, v2), (g,) = _vjps(lambda a: torch.var_mean(a, dim, correction=corr, keepdim=keepdim), (x,))
    _close(h.var_mean_backward(v1, v2, x, dim, corr, keepdim), g)
    (std, _), (v1, v2), (g,) = _vjps(lambda a: torch.std_mean(a, dim, correction=corr, keepdim=keepdim), (x,))
    _close(h.std_mean_backward(v1, v2, x, std, dim, corr, keepdim), g)
    assert h.var_mean_backward(None, None, x, dim, corr, keepdim) is None


@DTYPES
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_helpers(dtype: Any, upper: bool) -> None:
    A = _positive_definite(dtype)
    (L,), (v,), (g,) = _vjps(lambda a: torch.linalg.cholesky(a, upper=upper), (A,))
    _close(h.cholesky_backward(v, upper, L), g)
    (u,), (t,) = _jvps(lambda a: torch.linalg.cholesky(a, upper=upper), (A,))
    _close(h.cholesky_jvp(u, L, upper), t)
    (inverse,), (v,), (g,) = _vjps(lambda f: torch.cholesky_inverse(f, upper), (L,))
    _close(h.cholesky_inverse_backward(v, L, upper, inverse), g)
    (u,), (t,) = _jvps(lambda f: torch.cholesky_inverse(f, upper), (L,))
    _close(h.cholesky_inverse_jvp(L, u, inverse, upper), t)
    B = _matrices(dtype, 2, 3, 2)
    (X,), (v,), (gb, gl) = _vjps(lambda b, f: torch.cholesky_solve(b, f, upper), (B, L))
    ours_b, ours_l = h.cholesky_solve_backward(v, B, L, X, upper, [True, True])
    _close(ours_b, gb)
    _close(ours_l, gl)
    (ub, ul), (t,) = _jvps(lambda b, f: torch.cholesky_solve(b, f, upper), (B, L))
    _close(h.cholesky_solve_jvp(X, L, ul, ub, upper), t)


@DTYPES
def test_determinant_helpers(dtype: Any) -> None:
    singular = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=dtype)
    for A in (_matrices(dtype, 2, 3, 3), singular):  # a singular matrix: the cofactors, through the SVD
        det, LU, pivots = torch.ops.aten._linalg_det(A)
        _, (v,), (g,) = _vjps(torch.linalg.det, (A,))
        _close(h.linalg_det_backward(v, det, A, LU, pivots), g)
    A = _matrices(dtype, 2, 3, 3)
    use_A_T = A.is_contiguous() and not A.is_complex()
    det, LU, pivots = torch.ops.aten._linalg_det(A)
    (u,), (t,) = _jvps(torch.linalg.det, (A,))
    _close(h.linalg_det_jvp(u, det, LU, pivots, use_A_T), t)
    sign, _, LU, pivots = torch.ops.aten._linalg_slogdet(A)
    _, (vs, vl), (g,) = _vjps(torch.linalg.slogdet, (A,))
    _close(h.slogdet_backward(vs if dtype == C128 else None, vl, A, sign, LU, pivots), g)
    (u,), (ts, tl) = _jvps(torch.linalg.slogdet, (A,))
    ours_s, ours_l = h.slogdet_jvp(LU, pivots, u, sign, use_A_T)
    _close(ours_s, ts)
    _close(ours_l, tl)


@DTYPES
@pytest.mark.parametrize(("upper", "left", "unit"), [(True, True, False), (False, False, True), (False, True, True)])
def test_triangular_solve_helpers(dtype: Any, upper: bool, left: bool, unit: bool) -> None:
    T = _matrices(dtype, 3, 3) + 3 * torch.eye(3, dtype=dtype)
    B = _matrices(dtype, 3, 2, seed=5) if left else _matrices(dtype, 2, 3, seed=5)
    solve = lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)  # noqa: E731
    (X,), (v,), (ga, gb) = _vjps(solve, (T, B))
    ours_a, ours_b = h.linalg_solve_triangular_backward(v, T, X, upper, left, unit, [True, True])
    _close(ours_a, ga)
    _close(ours_b, gb)
    (ua, ub), (t,) = _jvps(solve, (T, B))
    _close(h.linalg_solve_triangular_forward_AD(ua, ub, T, X, upper, left, unit), t)
    B = _matrices(dtype, 3, 2, seed=6)
    for transpose in (False, True):
        old = lambda b, a, tr=transpose: torch.triangular_solve(b, a, upper, tr, unit)  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # triangular_solve is deprecated
            (X, _), (vx, vm), (gb, ga) = _vjps(old, (B, T))
            (ub, ua), (t, _) = _jvps(old, (B, T))
        ours_b, ours_a = h.triangular_solve_backward(vx, vm, B, T, X, upper, transpose, unit, [True, True])
        _close(ours_b, gb)
        _close(ours_a, ga)
        _close(h.triangular_solve_jvp(X, T, ua, ub, upper, transpose, unit), t)


@DTYPES
@pytest.mark.parametrize(("left", "b_shape"), [(True, (2, 3, 2)), (True, (2, 3)), (False, (2, 4, 3))])
def test_linalg_solve_helpers(dtype: Any, left: bool, b_shape: tuple[int, ...]) -> None:
    A, B = _matrices(dtype, 2, 3, 3), _matrices(dtype, *b_shape, seed=7)
    (X,), (v,), (ga, gb) = _vjps(lambda a, b: torch.linalg.solve(a, b, left=left), (A, B))
    _, LU, pivots, _ = torch.ops.aten._linalg_solve_ex(A, B, left=left)
    ours_a, ours_b = h.linalg_solve_backward(v, X, A, LU, pivots, left, True)
    _close(ours_a, ga)
    _close(ours_b, gb)
    (ua, ub), (t,) = _jvps(lambda a, b: torch.linalg.solve(a, b, left=left), (A, B))
    _close(h.linalg_solve_jvp(ua, ub, X, LU, pivots, left), t)


def _phase_free(V: Any, gV: Any) -> Any:
    """An eigenvector cotangent the loss's dependence on the eigenvectors' phases drops out of."""
    return gV - V * (V.mH @ gV).diagonal(0, -2, -1).imag.unsqueeze(-2) * 1j if V.is_complex() else gV


@DTYPES
def test_eigen_helpers(dtype: Any) -> None:
    for hermitian, A in ((True, _positive_definite(dtype)), (False, _matrices(dtype, 2, 3, 3))):
        L, V = torch.linalg.eigh(A) if hermitian else torch.linalg.eig(A)
        gL = torch.randn(L.shape, dtype=L.dtype, generator=torch.Generator().manual_seed(1))
        gV = _phase_free(V, torch.randn(V.shape, dtype=V.dtype, generator=torch.Generator().manual_seed(2)))
        leaf = A.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(torch.linalg.eigh(leaf) if hermitian else torch.linalg.eig(leaf), leaf, (gL, gV))
        ours = h.linalg_eig_backward(gL, gV, L, V, hermitian)
        _close(ours if ours.dtype == g.dtype else ours.real, g)
        (u,), (tL, tV) = _jvps(torch.linalg.eigh if hermitian else torch.linalg.eig, (A,))
        dL, dV = h.linalg_eig_jvp(u, L, V, hermitian)
        _close(dL, tL)
        _close(dV, tV)
    if dtype == C128:  # a loss that depends on the phases: an error, as torch's
        with pytest.raises(RuntimeError, match="ill-defined"):
            h.linalg_eig_backward(gL, torch.randn_like(V), L, V, False)


def test_eigen_helpers_take_empty_matrices() -> None:
    """Found on the whole 2.13 yaml: linalg.eigvalsh's empty sample raised in the batched matrix product
    (a reshape to -1 of no elements), where torch's own backward returns an empty gradient."""
    A = torch.zeros(3, 0, 0, dtype=torch.float64)
    L, V = torch.linalg.eigh(A)
    assert h.linalg_eig_backward(torch.zeros_like(L), torch.zeros_like(V), L, V, True).shape == (3, 0, 0)


@DTYPES
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4)])
def test_pinv_helpers(dtype: Any, shape: tuple[int, ...]) -> None:
    A = _matrices(dtype, *shape)
    (P,), (v,), (g,) = _vjps(torch.linalg.pinv, (A,))
    _close(h.pinv_backward(v, P, A), g)
    (u,), (t,) = _jvps(torch.linalg.pinv, (A,))
    _close(h.pinv_jvp(A, P, u), t)


@DTYPES
def test_matrix_exp_and_renorm_helpers(dtype: Any) -> None:
    A = _matrices(dtype, 2, 3, 3)
    _, (v,), (g,) = _vjps(torch.linalg.matrix_exp, (A,))
    _close(h.linalg_matrix_exp_differential(A, v, True), g)
    (u,), (t,) = _jvps(torch.linalg.matrix_exp, (A,))
    _close(h.linalg_matrix_exp_differential(A, u, False), t)
    x = _matrices(dtype, 3, 4, 2)
    for p, dim, top in ((2, 1, 1.0), (1, 0, 2.0), (3, 2, 0.5)):
        _, (v,), (g,) = _vjps(lambda a, p=p, d=dim, m=top: torch.renorm(a, p, d, m), (x,))
        _close(h.renorm_backward(v, x, p, dim, top), g)
        (u,), (t,) = _jvps(lambda a, p=p, d=dim, m=top: torch.renorm(a, p, d, m), (x,))
        _close(h.renorm_jvp(x, u, p, dim, top), t)


def test_adjoint_test_skips_a_schema_sample_its_op_refuses() -> None:
    """A linear-algebra op refuses a non-square schema sample in its own forward: that sample tests no formula
    (it is skipped), where it used to count as the translated formulas raising."""
    from vtgen_build.gradcheck_child import python_tier
    from vtgen_build.gradcheck_child.protocol import ArgSample, OpSamples

    def sample(*shape: int) -> tuple[ArgSample, ...]:
        return (ArgSample("A", "tensor", shape, dtype="float", grad=True),)

    entry = OpSamples("linalg_inv", "aten", None, None, None, None, (sample(2, 3), sample(3, 3)), ("float64",), True,
                      outputs=(0,), positions=(("A", 0),))  # fmt: skip
    row = python_tier._adjoint_check(torch, entry, F64, lambda _: None, python_tier.PyCounters())  # type: ignore[arg-type]
    assert row.status == "passed" and row.samples == 1, row


@DTYPES
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)])
def test_svd_and_lu_unpack_helpers(dtype: Any, shape: tuple[int, ...]) -> None:
    A = _matrices(dtype, 2, *shape)
    U, S, Vh = torch.linalg.svd(A, full_matrices=False)
    gU, gS, gVh = (torch.randn(t.shape, dtype=t.dtype, generator=torch.Generator().manual_seed(i))
                   for i, t in enumerate((U, S, Vh)))  # fmt: skip
    if dtype == C128:  # a loss free of the singular vectors' common phase
        gU = gU - U * (U.mH @ gU + Vh @ gVh.mH).diagonal(0, -2, -1).imag.unsqueeze(-2) * 1j
    leaf = A.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(torch.linalg.svd(leaf, full_matrices=False), leaf, (gU, gS, gVh))
    _close(h.svd_backward(gU, gS, gVh, U, S, Vh), g)
    (u,), tangents = _jvps(lambda a: torch.linalg.svd(a, full_matrices=False), (A,))
    for ours, theirs in zip(h.linalg_svd_jvp(u, U, S, Vh, False), tangents, strict=True):
        _close(ours, theirs)
    LU, pivots = torch.linalg.lu_factor(A)
    _, (gL, gU_), (g,) = _vjps(lambda f: torch.lu_unpack(f, pivots)[1:], (LU,))
    _close(h.lu_unpack_backward(gL, gU_, shape[0], shape[1]), g)


@DTYPES
@pytest.mark.parametrize(("shape", "mode"), [((4, 3), "reduced"), ((3, 4), "reduced"), ((3, 4), "complete")])
def test_qr_helpers(dtype: Any, shape: tuple[int, ...], mode: str) -> None:
    A = _matrices(dtype, 2, *shape)
    (Q, R), (gQ, gR), (g,) = _vjps(lambda a: torch.linalg.qr(a, mode), (A,))
    _close(h.linalg_qr_backward(gQ, gR, Q, R, mode), g)
    _, _, (g,) = _vjps(lambda a: torch.linalg.qr(a, mode)[1], (A,))
    gR = torch.randn(R.shape, dtype=dtype, generator=torch.Generator().manual_seed(21))  # _vjps' cotangent
    _close(h.linalg_qr_backward(None, gR, Q, R, mode), g)
    (u,), tangents = _jvps(lambda a: torch.linalg.qr(a, mode), (A,))
    for ours, theirs in zip(h.linalg_qr_jvp(u, Q, R, mode), tangents, strict=True):
        _close(ours, theirs)
    with pytest.raises(RuntimeError, match="mode='r'"):
        h.linalg_qr_backward(gQ, gR, Q, R, "r")


@DTYPES
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("adjoint", [False, True], ids=["plain", "adjoint"])
def test_lu_solve_helpers(dtype: Any, left: bool, adjoint: bool) -> None:
    LU, pivots = torch.linalg.lu_factor(_matrices(dtype, 2, 3, 3))
    B = _matrices(dtype, 2, 3, 2, seed=8) if left else _matrices(dtype, 2, 2, 3, seed=8)
    solve = lambda f, b: torch.linalg.lu_solve(f, pivots, b, left=left, adjoint=adjoint)  # noqa: E731
    (X,), (v,), (g, _) = _vjps(solve, (LU, B))
    _close(h.linalg_lu_solve_LU(v, LU, pivots, X, left, adjoint), g)
    (ul, ub), (t,) = _jvps(solve, (LU, B))
    _close(h.linalg_lu_solve_jvp(X, LU, pivots, ul, ub, left, adjoint), t)


@DTYPES
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_lu_factorization_helpers(dtype: Any, shape: tuple[int, ...]) -> None:
    A = _matrices(dtype, 2, *shape)
    P, _, _ = torch.linalg.lu(A)
    (L, U), (gL, gU), (g,) = _vjps(lambda a: torch.linalg.lu(a)[1:], (A,))
    _close(h.linalg_lu_backward(gL, gU, P, L, U, True), g)
    (u,), (_, tL, tU) = _jvps(torch.linalg.lu, (A,))
    dL, dU = h.linalg_lu_jvp(u, P, L, U, True)
    _close(dL, tL)
    _close(dU, tU)
    _, pivots, _ = torch.linalg.lu_factor_ex(A)
    (LU,), (v,), (g,) = _vjps(lambda a: torch.linalg.lu_factor_ex(a)[0], (A,))
    _close(h.lu_factor_ex_backward(v, LU, pivots, True), g)
    (u,), (t, _, _) = _jvps(torch.linalg.lu_factor_ex, (A,))
    _close(h.lu_factor_ex_jvp(u, LU, pivots, True), t)


def test_layer_norm_jvp() -> None:
    x, w, b = _matrices(F64, 4, 3, 5), _matrices(F64, 3, 5, seed=1), _matrices(F64, 3, 5, seed=2)
    _, mean, rstd = torch.native_layer_norm(x, [3, 5], w, b, 1e-5)
    (ux, uw, ub), (t, _, _) = _jvps(lambda a, c, d: torch.native_layer_norm(a, [3, 5], c, d, 1e-5), (x, w, b))
    _close(h.layer_norm_jvp(x, ux, w, uw, b, ub, mean, rstd, [3, 5]), t)
    (ux,), (t, _, _) = _jvps(lambda a: torch.native_layer_norm(a, [5], None, None, 1e-5), (x,))
    _, mean, rstd = torch.native_layer_norm(x, [5], None, None, 1e-5)
    _close(h.layer_norm_jvp(x, ux, None, None, None, None, mean, rstd, [5]), t)


def _to_shape(ours: Any, like: Any) -> Any:
    """``ours`` summed to ``like``'s shape, as autograd sums a gradient to its input's (a 0-dim grad_output)."""
    return ours.sum() if like.dim() == 0 else ours


def _grads(fn: Callable[..., Any], xs: tuple[Any, ...], seed: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """(the cotangent v, torch's Jᵀv per input) of ``fn``."""
    _, v, grads = _vjp(fn, xs, seed)
    return v, grads


def test_shape_and_closed_form_helpers() -> None:
    x = torch.randn(2, 3, 4, dtype=F64, generator=torch.Generator().manual_seed(11))
    v, (g,) = _grads(lambda a: a.permute(2, 0, 1), (x,))
    _close(h.permute_backwards(v, [2, 0, 1]), g)
    v, (g,) = _grads(lambda a: a.permute(-1, 0, 1), (x,))
    _close(h.permute_backwards(v, [-1, 0, 1]), g)
    go = torch.randn(2, 3, 2, dtype=F64, generator=torch.Generator().manual_seed(12))
    v, (g_go, g_x) = _grads(lambda o, a: torch.ops.aten.glu_backward(o, a, 2), (go, x))
    _close(h.glu_double_backward_grad_output(v, x, 2), g_go)
    _close(h.glu_double_backward(v, go, x, 2), g_x)
    x1 = torch.randn(4, 3, dtype=F64, generator=torch.Generator().manual_seed(13))
    x2 = torch.cat([x1[:1], torch.randn(2, 3, dtype=F64, generator=torch.Generator().manual_seed(14))])
    out, v, (g1, g2) = _vjp(lambda a, b: torch._euclidean_dist(a, b), (x1, x2))  # a zero distance: row 0, column 0
    ours = h._euclidean_dist_backward(v, x1, x2, out)
    _close(ours[0], g1)
    _close(ours[1], g2)
    indices = torch.tensor([[0, 2], [2, 4]])
    rows = torch.randn(2, 2, 3, dtype=F64, generator=torch.Generator().manual_seed(15))
    for padding_idx in (-1, 2):
        v, (g,) = _grads(lambda r, p=padding_idx: torch.ops.aten.embedding_dense_backward(r, indices, 5, p, False),
                         (rows,))  # fmt: skip
        _close(h.embedding_dense_double_backward_symint(v, indices, padding_idx), g)


@pytest.mark.parametrize("reduction", [0, 1, 2], ids=["none", "mean", "sum"])
def test_loss_double_backward_helpers(reduction: int) -> None:
    gen = torch.Generator().manual_seed(16)
    x = torch.rand(3, 4, dtype=F64, generator=gen) * 0.8 + 0.1
    t = torch.rand(3, 4, dtype=F64, generator=gen)
    w = torch.rand(3, 4, dtype=F64, generator=gen) + 0.5
    go = torch.randn(() if reduction else (3, 4), dtype=F64, generator=gen)
    v, (g_go, g_x) = _grads(lambda o, a: torch.ops.aten.soft_margin_loss_backward(o, a, t, reduction), (go, x))
    _close(_to_shape(h.soft_margin_loss_double_backward_grad_output(v, go, x, t, reduction), go), g_go)
    _close(h.soft_margin_loss_double_backward(v * go, x, t, reduction), g_x)
    for weight in (None, w):
        v, (g_go, g_x, g_t) = _grads(
            lambda o, a, b, ww=weight: torch.ops.aten.binary_cross_entropy_backward(o, a, b, ww, reduction), (go, x, t)
        )
        _close(_to_shape(h.binary_cross_entropy_double_backward_grad_output(v, x, t, weight, reduction), go), g_go)
        _close(h.binary_cross_entropy_double_backward(go, v, x, t, weight, reduction), g_x)
        _close(h.binary_cross_entropy_double_backward_target(v, go, x, t, weight, reduction), g_t)
        for pos_weight in (None, torch.tensor([0.5, 1.0, 2.0, 3.0], dtype=F64)):
            v, (g_x, g_t) = _grads(
                lambda a, b, ww=weight, p=pos_weight: torch.ops.aten.binary_cross_entropy_with_logits(a, b, ww, p,
                                                                                                     reduction),
                (x, t),
            )  # fmt: skip
            _close(h.binary_cross_entropy_with_logits_backward(v, x, t, weight, pos_weight, reduction), g_x)
            _close(h.binary_cross_entropy_with_logits_target_backward(v, x, t, weight, pos_weight, reduction), g_t)


@pytest.mark.parametrize("normalization", [0, 1, 2])
def test_fft_helpers(normalization: int) -> None:
    x = torch.randn(3, 5, 4, dtype=F64, generator=torch.Generator().manual_seed(17))
    for dim, onesided in (([1], True), ([0, 1], True), ([1, 2], False), ([2], True)):
        v, (g,) = _grads(lambda a, d=dim, o=onesided: torch.ops.aten._fft_r2c(a, d, normalization, o), (x,))
        _close(h.fft_r2c_backward(v, dim, normalization, onesided, x.shape[dim[-1]]), g)
    z = torch.randn(3, 3, 4, dtype=C128, generator=torch.Generator().manual_seed(18))
    for dim, last in (([1], 4), ([1], 5), ([0, 2], 6), ([0, 2], 7)):
        v, (g,) = _grads(lambda a, d=dim, n=last: torch.ops.aten._fft_c2r(a, d, normalization, n), (z,))
        _close(h.fft_c2r_backward(v, dim, normalization), g)


@pytest.mark.parametrize("transposed", [False, True], ids=["direct", "transposed"])
def test_convolution_jvp_helpers(transposed: bool) -> None:
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(19)
    x, dx = torch.randn(2, 4, 5, 6, dtype=F64, generator=gen), torch.randn(2, 4, 5, 6, dtype=F64, generator=gen)
    shape = (4, 3, 2, 3) if transposed else (6, 2, 2, 3)
    w, dw = torch.randn(shape, dtype=F64, generator=gen), torch.randn(shape, dtype=F64, generator=gen)
    channels = 6  # out channels: 6 filters, or 2 groups of 3 transposed
    b, db = torch.randn(channels, dtype=F64, generator=gen), torch.randn(channels, dtype=F64, generator=gen)
    args = ([1, 2], [1, 0], [1, 1], transposed, [0, 1] if transposed else [0, 0], 2)
    with fwad.dual_level():
        out = torch.ops.aten.convolution(fwad.make_dual(x, dx), fwad.make_dual(w, dw), fwad.make_dual(b, db), *args)
        tangent = fwad.unpack_dual(out).tangent
    _close(h.convolution_jvp(x, dx, w, dw, b, db, *args), tangent)
    _close(h._convolution_jvp(x, dx, w, dw, b, db, *args, False, False, True, True), tangent)
    go, dgo = torch.randn_like(out), torch.randn_like(out)
    with fwad.dual_level():
        grads = torch.ops.aten.convolution_backward(fwad.make_dual(go.detach(), dgo), x, w, [channels], *args,
                                                    [False, False, True])  # fmt: skip
        bias_tangent = fwad.unpack_dual(grads[2]).tangent
    _close(h.convolution_backward_jvp_grad_bias(dgo, grads[2].detach()), bias_tangent)
    assert h.convolution_backward_jvp_grad_bias(dgo, None) is None
    leaves = [t.clone().requires_grad_(True) for t in (go, x, w)]
    backward = torch.ops.aten.convolution_backward(*leaves, [channels], *args, [True, True, True])
    gg = [torch.randn(t.shape, dtype=F64, generator=gen) for t in backward]
    theirs = torch.autograd.grad(backward, leaves, gg)
    ours = h._convolution_double_backward_symint(*gg, go, w, x, *args, [True, True, True])
    for mine, their in zip(ours, theirs, strict=True):
        _close(mine, their)


def test_cat_stack_block_diag_helpers() -> None:
    """Mixed real and complex inputs (a real input's gradient is the real part), a legacy 1-d empty input of
    cat, 0-d and 1-d blocks of block_diag; the tangents as torch's forward AD gives them."""
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(20)
    a, b = torch.randn(2, 3, dtype=F64, generator=gen), torch.randn(2, 1, dtype=C128, generator=gen)
    empty = torch.zeros(0, dtype=F64)
    for tensors, dim in (([a, b], 1), ([a, empty, b], -1), ([a.T, b.T], 0)):
        v, grads = _grads(lambda *xs, d=dim: torch.cat(list(xs), d), tuple(tensors))
        ours = h.cat_tensors_backward(v, h.to_args_sizes_symint(tensors), h.to_args_scalartypes(tensors), dim)
        for mine, theirs in zip(ours, grads, strict=True):
            _close(mine, theirs)
    c = torch.randn(2, 3, dtype=C128, generator=gen)
    for dim in (0, 2, -1):
        v, grads = _grads(lambda x, y, d=dim: torch.stack([x, y], d), (a, c))
        for mine, theirs in zip(h.stack_tensors_backward(v, dim, h.to_args_scalartypes([a, c])), grads, strict=True):
            _close(mine, theirs)
    blocks = [a, torch.tensor(2.0, dtype=F64), torch.randn(4, dtype=C128, generator=gen), b]
    v, grads = _grads(lambda *xs: torch.block_diag(*xs), tuple(blocks))
    ours = h.block_diag_backward(v, h.to_args_sizes(blocks), h.to_args_scalartypes(blocks))
    for mine, theirs in zip(ours, grads, strict=True):
        _close(mine, theirs)
    tangents = [torch.randn_like(t) for t in blocks]
    with fwad.dual_level():
        duals = [fwad.make_dual(t, u) for t, u in zip(blocks, tangents, strict=True)]
        _close(h.block_diag_jvp(tangents), fwad.unpack_dual(torch.block_diag(*duals)).tangent)
        _close(h.cat_jvp(tangents[:1] + tangents[3:], 1), fwad.unpack_dual(torch.cat([duals[0], duals[3]], 1)).tangent)
        pair = [duals[0], fwad.make_dual(c, torch.randn_like(c))]
        _close(h.stack_jvp([tangents[0], fwad.unpack_dual(pair[1]).tangent], 1),
               fwad.unpack_dual(torch.stack(pair, 1)).tangent)  # fmt: skip


@pytest.mark.parametrize("train", [True, False], ids=["batch_statistics", "running_statistics"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batch_norm_jvp(train: bool, affine: bool) -> None:
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(21)
    x, dx = torch.randn(4, 3, 5, dtype=F64, generator=gen), torch.randn(4, 3, 5, dtype=F64, generator=gen)
    w, dw, b, db = (torch.randn(3, dtype=F64, generator=gen) if affine else None for _ in range(4))
    mean, var = torch.randn(3, dtype=F64, generator=gen), torch.rand(3, dtype=F64, generator=gen) + 0.5
    with fwad.dual_level():
        dual = [None if t is None else fwad.make_dual(t, u) for t, u in ((x, dx), (w, dw), (b, db))]
        out, saved_mean, saved_invstd = torch.ops.aten.native_batch_norm(*dual, mean.clone(), var.clone(), train,
                                                                         0.1, 1e-5)  # fmt: skip
        tangent = fwad.unpack_dual(out).tangent
    ours = h.batch_norm_jvp(x, dx, w, dw, b, db, mean, var, saved_mean.detach(), saved_invstd.detach(), train, 1e-5)
    _close(ours, tangent)


@pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])
def test_householder_and_least_squares_helpers(dtype: Any) -> None:
    """linalg_householder_product (backward, tangent), ormqr (each side, transposed or not) and linalg_lstsq
    (tall with residuals, tall without, wide, batched) against torch's own gradients and tangents."""
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(22)
    A, tau = torch.randn(5, 3, dtype=dtype, generator=gen), torch.randn(3, dtype=dtype, generator=gen)
    out, v, (g_a, g_tau) = _vjp(torch.linalg.householder_product, (A, tau))
    ours = h.householder_product_backward(v, out, A, tau)
    _close(ours[0], g_a)
    _close(ours[1], g_tau)
    dA, dtau = torch.randn_like(A), torch.randn_like(tau)
    with fwad.dual_level():
        tangent = fwad.unpack_dual(torch.linalg.householder_product(fwad.make_dual(A, dA), fwad.make_dual(tau, dtau)))
    _close(h.householder_product_jvp(dA, dtau, out, A, tau), tangent.tangent)
    for left, transpose in ((True, False), (True, True), (False, False), (False, True)):
        C = torch.randn(*((5, 2) if left else (2, 5)), dtype=dtype, generator=gen)
        out, v, grads = _vjp(lambda a, t, c, lt=left, tr=transpose: torch.ormqr(a, t, c, lt, tr), (A, tau, C))
        for mine, theirs in zip(h.ormqr_backward(v, out, A, tau, C, left, transpose, [True] * 3), grads, strict=True):
            _close(mine, theirs)
    for shape, driver in (((5, 3), "gelsd"), ((5, 3), None), ((3, 5), "gelsd"), ((2, 5, 3), "gelsd")):
        M, B = torch.randn(*shape, dtype=dtype, generator=gen), torch.randn(*shape[:-1], 2, dtype=dtype, generator=gen)
        a, b = M.clone().requires_grad_(True), B.clone().requires_grad_(True)
        found = torch.linalg.lstsq(a, b, driver=driver)
        with_residuals = found.residuals.numel() > 0
        gX, gL = torch.randn_like(found.solution), torch.randn_like(found.residuals) if with_residuals else None
        outs = [found.solution, found.residuals] if with_residuals else [found.solution]
        g_m, g_b = torch.autograd.grad(outs, (a, b), [gX, gL] if with_residuals else [gX])
        ours = h.linalg_lstsq_backward(gX, gL, M, B, found.solution.detach(), [True, True])
        _close(ours[0], g_m)
        _close(ours[1], g_b)
        dM, dB = torch.randn_like(M), torch.randn_like(B)
        with fwad.dual_level():
            dual = torch.linalg.lstsq(fwad.make_dual(M, dM), fwad.make_dual(B, dB), driver=driver)
            t_x, t_l = fwad.unpack_dual(dual.solution).tangent, fwad.unpack_dual(dual.residuals).tangent
        _close(h.linalg_lstsq_solution_jvp(M, B, dM, dB), t_x)
        residual_tangent = h.linalg_lstsq_residuals_jvp(M, B, dM, dB, found.solution.detach(), found.residuals.detach())
        if with_residuals:
            _close(residual_tangent, t_l)
        else:
            assert residual_tangent.numel() == 0


@pytest.mark.parametrize("train", [True, False], ids=["batch_statistics", "running_statistics"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batchnorm_double_backward(train: bool, affine: bool) -> None:
    gen = torch.Generator().manual_seed(23)
    x, ggI = torch.randn(4, 3, 5, dtype=F64, generator=gen), torch.randn(4, 3, 5, dtype=F64, generator=gen)
    w, ggG, ggB = (torch.randn(3, dtype=F64, generator=gen) if affine else None for _ in range(3))
    mean, var = torch.randn(3, dtype=F64, generator=gen), torch.rand(3, dtype=F64, generator=gen) + 0.5
    out, saved_mean, saved_invstd = torch.ops.aten.native_batch_norm(x, w, None, mean.clone(), var.clone(), train,
                                                                     0.1, 1e-5)  # fmt: skip
    go = torch.randn(out.shape, dtype=F64, generator=gen)
    leaves = [t.clone().requires_grad_(True) for t in (x, go, *([w] if affine else []))]
    weight = leaves[2] if affine else None
    found = torch.ops.aten.native_batch_norm_backward(leaves[1], leaves[0], weight, mean, var, saved_mean,
                                                      saved_invstd, train, 1e-5, [True, affine, affine])  # fmt: skip
    outs, cotangents = (list(found), [ggI, ggG, ggB]) if affine else ([found[0]], [ggI])
    theirs = torch.autograd.grad(outs, leaves, cotangents, allow_unused=True, materialize_grads=True)
    ours = h.batchnorm_double_backward(x, w, ggI, ggG, ggB, go, mean, var, train, 1e-5, saved_mean, saved_invstd,
                                       [True, affine, True])  # fmt: skip
    _close(ours[0], theirs[0])
    _close(ours[2], theirs[1])
    if affine:
        _close(ours[1], theirs[2])


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batchnorm_double_backward_runs_under_gradchecks_vmap(affine: bool) -> None:
    """Found on the whole 2.13 yaml: gradcheck's batched double backward vmaps (its own vmap) the gradients
    this helper is given, and differentiating a value they are part of raised (autograd refuses a vmapped
    output); batched, it equals the helper's value per gradient."""
    from torch._vmap_internals import vmap  # the vmap gradcheck's batched checks use

    gen = torch.Generator().manual_seed(29)
    x, go = torch.randn(4, 3, 5, dtype=F64, generator=gen), torch.randn(4, 3, 5, dtype=F64, generator=gen)
    w = torch.randn(3, dtype=F64, generator=gen) if affine else None
    ggI = torch.randn(2, 4, 3, 5, dtype=F64, generator=gen)  # two gradients of each, batched
    ggG, ggB = torch.randn(2, 3, dtype=F64, generator=gen), torch.randn(2, 3, dtype=F64, generator=gen)
    mask = [True, affine, True]
    _, saved_mean, saved_invstd = torch.ops.aten.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)

    def one(i: Any, g: Any, b: Any) -> tuple[Any, ...]:
        found = h.batchnorm_double_backward(x, w, i, g if affine else None, b, go, None, None, True, 1e-5,
                                            saved_mean, saved_invstd, mask)  # fmt: skip
        return tuple(f for f in found if f is not None)

    with warnings.catch_warnings():  # it is deprecated for torch.vmap, but gradcheck's is this one
        warnings.simplefilter("ignore", FutureWarning)
        batched = vmap(one)(ggI, ggG, ggB)
    for k in range(2):
        for ours, theirs in zip(batched, one(ggI[k], ggG[k], ggB[k]), strict=True):
            _close(ours[k], theirs)


def test_trilinear_backward() -> None:
    """As nn.functional.bilinear calls _trilinear, and forms with and without a summed dimension; inputs a gradient is
    not asked of may be undefined (``wrap_opt_if``)."""
    gen = torch.Generator().manual_seed(24)
    for shapes, args in (
        (((2, 3), (4, 3, 5), (2, 5)), ([1, 3], [0], [1, 2], [2, 3])),
        (((3,), (2, 3), (2, 3)), ([0], [], [], [])),
        (((3,), (2, 3), (2, 3)), ([0], [], [], [1])),
    ):
        xs = tuple(torch.randn(s, dtype=F64, generator=gen) for s in shapes)
        _, v, grads = _vjp(lambda a, b, c, e=args: torch._trilinear(a, b, c, *e), xs)
        ours = h._trilinear_backward(v, *xs, *args, [True, True, True])
        for mine, theirs in zip(ours, grads, strict=True):
            _close(mine, theirs)
        only_first = h._trilinear_backward(v, h.wrap_opt_if(xs[0], False), *xs[1:], *args, [True, False, False])
        _close(only_first[0], grads[0])
        assert only_first[1:] == (None, None)


@pytest.mark.parametrize("include_self", [True, False], ids=["with_self", "without_self"])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
def test_scatter_and_index_reduce_helpers(reduce: str, include_self: bool) -> None:
    """Ties of the extrema, zeros in a product (one and two in a group), a place no source reaches, a 0-dim
    index_reduce; the tangent against torch's forward AD (prod: central differences, torch has no forward AD)."""
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(25)
    self, src = torch.randn(4, 4, dtype=F64, generator=gen), torch.randn(5, 4, dtype=F64, generator=gen)
    index = torch.tensor([[0, 1, 0, 1], [2, 1, 0, 1], [0, 0, 0, 1], [2, 1, 2, 1], [0, 1, 0, 1]])  # row 3: never
    src[1, 0] = src[3, 2] = src[0, 2] = 0.0
    src[2, 1] = src[4, 1] = 5.0
    out, v, (g_self, g_src) = _vjp(lambda a, b: a.scatter_reduce(0, index, b, reduce, include_self=include_self),
                                   (self, src))  # fmt: skip
    ours = h.scatter_reduce_backward(v, self, 0, index, src, reduce, include_self, out)
    _close(ours[0], g_self)
    _close(ours[1], g_src)
    u_self, u_src = torch.randn_like(self), torch.randn_like(src)
    tangent = h.scatter_reduce_jvp(self, u_self, 0, index, src, u_src, reduce, include_self, out)
    if reduce == "prod":
        e = 1e-6
        ahead = (self + e * u_self).scatter_reduce(0, index, src + e * u_src, reduce, include_self=include_self)
        behind = (self - e * u_self).scatter_reduce(0, index, src - e * u_src, reduce, include_self=include_self)
        assert torch.allclose(tangent, (ahead - behind) / (2 * e), atol=1e-8)
    else:
        with fwad.dual_level():
            dual = fwad.make_dual(self, u_self).scatter_reduce(0, index, fwad.make_dual(src, u_src), reduce,
                                                                include_self=include_self)  # fmt: skip
            _close(tangent, fwad.unpack_dual(dual).tangent)
    if reduce == "sum":
        return  # index_reduce takes prod, mean, amax and amin
    warnings.filterwarnings("ignore", "index_reduce", UserWarning)
    for dim, base, source in ((0, self, src), (1, self[:, :3], src.T)):  # index 3 of dim 0: never reached
        rows = torch.tensor([0, 2, 0, 1, 2])
        fn = lambda a, b, d=dim, i=rows: a.index_reduce(d, i, b, reduce, include_self=include_self)  # noqa: E731
        out, v, (g_self, g_src) = _vjp(fn, (base, source))
        ours = h.index_reduce_backward(v, base, dim, rows, source, reduce, include_self, out)
        _close(ours[0], g_self)
        _close(ours[1], g_src)
    scalar, value = torch.tensor(2.0, dtype=F64), torch.tensor(3.0, dtype=F64)
    out, v, (g_self, g_src) = _vjp(lambda a, b: a.index_reduce(0, torch.tensor([0]), b, reduce,
                                                               include_self=include_self), (scalar, value))  # fmt: skip
    ours = h.index_reduce_backward(v, scalar, 0, torch.tensor([0]), value, reduce, include_self, out)
    _close(ours[0], g_self)
    _close(ours[1], g_src)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_group_norm_helpers(affine: bool) -> None:
    """native_group_norm's backward from its three outputs' gradients, and its three tangents."""
    import torch.autograd.forward_ad as fwad

    gen = torch.Generator().manual_seed(26)
    N, C, G = 2, 6, 3
    x, w, b = (torch.randn(s, dtype=F64, generator=gen) for s in ((N, C, 4), (C,), (C,)))
    leaves = [t.clone().requires_grad_(True) for t in ((x, w, b) if affine else (x,))]
    weight, bias = (leaves[1], leaves[2]) if affine else (None, None)
    outs = torch.ops.aten.native_group_norm(leaves[0], weight, bias, N, C, 4, G, 1e-5)
    cotangents = [torch.randn(o.shape, dtype=F64, generator=gen) for o in outs]
    theirs = torch.autograd.grad(outs, leaves, cotangents)
    mean, rstd = outs[1].detach(), outs[2].detach()
    ours = h.infinitely_differentiable_native_group_norm_backward(*cotangents, x, mean, rstd, w if affine else None, N,
                                                                  C, 4, G, 1e-5, [True, affine, affine])  # fmt: skip
    for mine, their in zip(ours, theirs, strict=False):
        _close(mine, their)
    u = [torch.randn_like(t) for t in (x, w, b)]
    with fwad.dual_level():
        dual_w, dual_b = (fwad.make_dual(w, u[1]), fwad.make_dual(b, u[2])) if affine else (None, None)
        dual = torch.ops.aten.native_group_norm(fwad.make_dual(x, u[0]), dual_w, dual_b, N, C, 4, G, 1e-5)
        t_y, t_mean, t_rstd = (fwad.unpack_dual(o).tangent for o in dual)
    params = (w, u[1], b, u[2]) if affine else (None, None, None, None)
    _close(h.group_norm_jvp(x, u[0], *params, mean, rstd, G), t_y)
    _close(h.group_norm_mean_jvp(u[0], mean, G), t_mean)
    _close(h.group_norm_invstd_jvp(x, u[0], mean, rstd, G), t_rstd)


@pytest.mark.parametrize("dtype", [F64, C128], ids=["float64", "complex128"])
def test_as_strided_backward(dtype: Any) -> None:
    """Inputs that are the whole storage, a view at an offset, a transpose and an expanded (overlapping) one;
    windows reading an element twice, an explicit and the input's own storage offset."""
    base = torch.randn(4, 5, dtype=dtype, generator=torch.Generator().manual_seed(27))
    cases = (
        (lambda b: b, ([2, 2], [1, 2], None)),
        (lambda b: b[1:, 1:], ([3, 2], [2, 1], 3)),
        (lambda b: b.t(), ([2, 3], [1, 1], None)),
        (lambda b: b[:, :1].expand(4, 3), ([2, 2], [1, 1], None)),
    )
    for view, args in cases:
        x = view(base.clone()).detach()
        _, v, (g,) = _vjp(lambda a, e=args: a.as_strided(*e), (x,))
        _close(h.as_strided_backward(v, h.TensorGeometry(x), *args), g)
