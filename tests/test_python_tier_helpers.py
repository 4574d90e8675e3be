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

    def sample(shape: list[int]) -> list[dict[str, Any]]:
        return [{"kind": "tensor", "name": "A", "shape": shape, "values": "normal", "dtype": "float", "high": None,
                 "grad": True}]  # fmt: skip

    entry = {"namespace": "aten", "op": "linalg_inv", "samples": [sample([2, 3]), sample([3, 3])], "outputs": [0],
             "positions": {"A": 0}, "forward": True}  # fmt: skip
    row = python_tier._adjoint_check(torch, entry, F64, lambda _: None, python_tier.PyCounters())
    assert row["status"] == "passed" and row["samples"] == 1, row


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
