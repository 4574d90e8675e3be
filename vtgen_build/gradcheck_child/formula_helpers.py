"""Python equivalents of some helpers PyTorch's formulas call (``torch::autograd::generated::details``).

The Python tier's translated modules import this one as their formulas module (``_formulas``); the
parent reads its public function names with ``ast`` (``python_tier.helper_names``), never imports it.
Each is written from the derivative it computes, not from PyTorch's source, and is held equal to the
installed torch's compiled helper on samples (the ``agree`` check: tests/test_python_tier.py runs an
entry calling each through both and compares the gradients; tests/test_python_tier_helpers.py compares
helpers directly with torch's own autograd of an op calling the C++ one).  A helper not here leaves its entries to
the compiled tier.  Standalone: stdlib and torch only (imported inside the child).
"""

from __future__ import annotations

import cmath
import math
import warnings
from typing import Any

import torch

__all__ = [
    "TensorGeometry",
    "_convolution_double_backward_symint",
    "_convolution_jvp",
    "_euclidean_dist_backward",
    "_trilinear_backward",
    "amaxamin_jvp",
    "aminmax_backward",
    "aminmax_jvp",
    "angle_backward",
    "apply_loss_reduction",
    "as_strided_backward",
    "atan2_backward",
    "batch_norm_jvp",
    "batchnorm_double_backward",
    "binary_cross_entropy_double_backward",
    "binary_cross_entropy_double_backward_grad_output",
    "binary_cross_entropy_double_backward_target",
    "binary_cross_entropy_target_backward",
    "binary_cross_entropy_with_logits_backward",
    "binary_cross_entropy_with_logits_target_backward",
    "block_diag_backward",
    "block_diag_jvp",
    "cat_jvp",
    "cat_tensors_backward",
    "cholesky_backward",
    "cholesky_inverse_backward",
    "cholesky_inverse_jvp",
    "cholesky_jvp",
    "cholesky_solve_backward",
    "cholesky_solve_jvp",
    "clamp_backward",
    "clamp_backward_min_max",
    "clamp_jvp",
    "constant_pad_nd_backward",
    "convolution_backward_jvp_grad_bias",
    "convolution_jvp",
    "copysign_tensor_self_backward",
    "cumprod_jvp",
    "cumsum_backward",
    "deg2rad_backward",
    "elu_double_backward",
    "embedding_dense_double_backward_symint",
    "evenly_distribute_backward",
    "evenly_read_jvp",
    "fft_c2r_backward",
    "fft_r2c_backward",
    "gather_with_keepdimed_indices",
    "gelu_double_backward",
    "glu_double_backward",
    "glu_double_backward_grad_output",
    "group_norm_invstd_jvp",
    "group_norm_jvp",
    "group_norm_mean_jvp",
    "householder_product_backward",
    "householder_product_jvp",
    "huber_loss_double_backward",
    "huber_loss_double_backward_grad_output",
    "i1_backward",
    "i1e_backward",
    "index_backward",
    "index_reduce_backward",
    "infinitely_differentiable_logit_backward",
    "infinitely_differentiable_mish_backward",
    "infinitely_differentiable_native_dropout_backward",
    "infinitely_differentiable_native_group_norm_backward",
    "infinitely_differentiable_silu_backward",
    "layer_norm_jvp",
    "linalg_det_backward",
    "linalg_det_jvp",
    "linalg_eig_backward",
    "linalg_eig_jvp",
    "linalg_lstsq_backward",
    "linalg_lstsq_residuals_jvp",
    "linalg_lstsq_solution_jvp",
    "linalg_lu_backward",
    "linalg_lu_jvp",
    "linalg_lu_solve_LU",
    "linalg_lu_solve_jvp",
    "linalg_matrix_exp_differential",
    "linalg_qr_backward",
    "linalg_qr_jvp",
    "linalg_solve_backward",
    "linalg_solve_jvp",
    "linalg_solve_triangular_backward",
    "linalg_solve_triangular_forward_AD",
    "linalg_svd_jvp",
    "linalg_vector_norm_backward",
    "linalg_vector_norm_jvp",
    "log1p_backward",
    "log_sigmoid_double_backward",
    "logcumsumexp_backward",
    "logcumsumexp_jvp",
    "logsumexp_backward",
    "logsumexp_jvp",
    "lu_factor_ex_backward",
    "lu_factor_ex_jvp",
    "lu_unpack_backward",
    "masked_fill_backward",
    "max_pool_double_backward",
    "mean_backward",
    "mm_mat1_backward",
    "mm_mat2_backward",
    "mse_loss_double_backward",
    "mvlgamma_backward",
    "nansum_backward",
    "native_dropout_double_backward",
    "norm_backward",
    "norm_jvp",
    "ormqr_backward",
    "permute_backwards",
    "pinv_backward",
    "pinv_jvp",
    "polar_backward",
    "pow_backward",
    "pow_backward_exponent",
    "pow_backward_self",
    "prod_backward",
    "rad2deg_backward",
    "renorm_backward",
    "renorm_jvp",
    "repeat_backward",
    "restore_reduced_dims",
    "safe_logsumexp_jvp",
    "scale_grad_by_count",
    "scatter_reduce_backward",
    "scatter_reduce_jvp",
    "sgn_backward",
    "sinc_backward",
    "slice_backward_wrapper",
    "slogdet_backward",
    "slogdet_jvp",
    "smooth_l1_loss_double_backward",
    "soft_margin_loss_double_backward",
    "soft_margin_loss_double_backward_grad_output",
    "softmax_double_backward",
    "softplus_double_backward",
    "split_backward",
    "split_with_sizes_backward",
    "stack_jvp",
    "stack_tensors_backward",
    "std_backward",
    "std_mean_backward",
    "sum_backward",
    "svd_backward",
    "take_backward",
    "to_args_scalartypes",
    "to_args_sizes",
    "to_args_sizes_symint",
    "triangular_solve_backward",
    "triangular_solve_jvp",
    "unbind_backward",
    "unsqueeze_to",
    "value_selecting_reduction_backward_symint",
    "var_backward",
    "var_mean_backward",
    "warn_backwards",
    "wrap_opt_if",
]


def _real_if_real(like: Any, grad: Any) -> Any:
    """A gradient of a real input is real: the real part of a complex one."""
    dtype = like if isinstance(like, torch.dtype) else like.dtype
    return grad.real if grad is not None and grad.is_complex() and not dtype.is_complex else grad


def elu_double_backward(
    grad: Any, grad_output: Any, alpha: Any, scale: Any, input_scale: Any, is_result: bool, self_or_result: Any
) -> Any:
    """d(elu_backward)/d(self_or_result) times ``grad``: zero on the linear side; on the exponential side
    ``input_scale`` times the backward's value (of x), or ``input_scale * grad_output`` (of the result y)."""
    alpha, scale, input_scale = float(alpha), float(scale), float(input_scale)
    negative = self_or_result <= 0
    if is_result:
        inside = grad * grad_output * input_scale
    else:
        factor = input_scale * input_scale * alpha * scale
        inside = grad * grad_output * factor * torch.exp(self_or_result * input_scale)
    return torch.where(negative, inside, torch.zeros_like(inside))


def unsqueeze_to(tensor: Any, dims: Any, sizes: Any = None) -> Any:
    """Undo a reduction's squeeze: ``unsqueeze_to(t, sizes)`` puts back every dimension of size 1;
    ``unsqueeze_to(t, dim(s), sizes)`` those of the given dimensions that had size 1."""
    if sizes is None:
        for i, n in enumerate(dims):
            if n == 1:
                tensor = tensor.unsqueeze(i)
        return tensor
    rank = len(sizes)
    if rank == 0:
        return tensor
    chosen = sorted({d % rank for d in (dims if isinstance(dims, (list, tuple)) else [dims])})
    for d in chosen:
        if sizes[d] == 1:
            tensor = tensor.unsqueeze(d)
    return tensor


def deg2rad_backward(grad: Any) -> Any:
    return grad * (math.pi / 180.0)


def rad2deg_backward(grad: Any) -> Any:
    return grad * (180.0 / math.pi)


def log1p_backward(grad: Any, self: Any) -> Any:
    return grad / (self + 1).conj()


def sinc_backward(grad: Any, self: Any) -> Any:
    """d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, and 0 at x = 0."""
    pix = self * math.pi
    value = (torch.cos(pix) * pix - torch.sin(pix)) / (pix * self)
    value = torch.where(self == 0, torch.zeros_like(value), value)
    return grad * value.conj()


def infinitely_differentiable_silu_backward(grad_output: Any, input: Any) -> Any:
    s = torch.sigmoid(input)
    return grad_output * s * (1 + input * (1 - s))


def infinitely_differentiable_mish_backward(grad_output: Any, input: Any) -> Any:
    s = torch.sigmoid(input)
    t = torch.tanh(torch.nn.functional.softplus(input))
    return grad_output * (t + input * s * (1 - t * t))


def infinitely_differentiable_logit_backward(grad: Any, self: Any, eps: Any) -> Any:
    if eps is not None:
        low, high = float(eps), 1.0 - float(eps)
        inside = (self >= low) & (self <= high)
        return torch.where(inside, grad / (self * (1 - self)), torch.zeros_like(grad))
    inside = (self >= 0) & (self <= 1)
    return torch.where(inside, grad / (self * (1 - self)), torch.full_like(grad, math.nan))


def clamp_backward(grad: Any, self: Any, min: Any, max: Any) -> Any:
    """The gradient passes where the input was not clamped (bounds inclusive)."""
    keep = None
    if min is not None:
        keep = self >= min
    if max is not None:
        keep = (self <= max) if keep is None else keep & (self <= max)
    return grad if keep is None else torch.where(keep, grad, torch.zeros_like(grad))


def atan2_backward(grad: Any, self: Any, other: Any, output_mask: Any) -> Any:
    if grad is None:
        return (None, None)
    recip = (self * self + other * other).reciprocal()
    return (grad * other * recip if output_mask[0] else None, grad * -self * recip if output_mask[1] else None)


def pow_backward(grad: Any, self: Any, exponent: Any) -> Any:
    """d x^p / dx = p x^(p-1), zero for p = 0 (a scalar exponent)."""
    if not isinstance(exponent, torch.Tensor) and exponent == 0.0:
        return torch.zeros_like(self)
    return _real_if_real(self, grad * (exponent * self.pow(exponent - 1)).conj())


def cumsum_backward(grad: Any, dim: int) -> Any:
    """The gradient of a running sum: the running sum from the end."""
    if grad.numel() <= 1 or grad.size(dim) == 1:
        return grad
    return grad.flip(dim).cumsum(dim).flip(dim)


def apply_loss_reduction(unreduced: Any, reduction: int) -> Any:
    if reduction == 1:
        return unreduced.mean()
    if reduction == 2:
        return unreduced.sum()
    return unreduced


def scale_grad_by_count(grad: Any, mask: Any, dims: Any) -> Any:
    return (grad / mask.sum(dims, keepdim=True)) * mask


def copysign_tensor_self_backward(grad: Any, self: Any, result: Any) -> Any:
    ratio = result / self
    ratio = torch.where(self == 0, torch.zeros_like(ratio), ratio)
    return grad * ratio


def evenly_distribute_backward(grad: Any, input: Any, value: Any) -> Any:
    """A full max/min reduction: the gradient shared evenly among the elements equal to the value."""
    mask = (input == value) | (input.isnan() & value.isnan())
    return mask * (grad / mask.sum())


def value_selecting_reduction_backward_symint(grad: Any, dim: int, indices: Any, sizes: Any, keepdim: bool) -> Any:
    """The gradient of a reduction choosing one element along ``dim`` goes back to that element."""
    if not keepdim and len(sizes) > 0:
        grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
    return grad.new_zeros(tuple(sizes)).scatter(dim, indices, grad)


def evenly_read_jvp(fw_grad: Any, input: Any, value: Any) -> Any:
    """The tangent of a full max/min reduction: the mean of the input's tangent over the chosen elements."""
    mask = (input == value) | (input.isnan() & value.isnan())
    return (fw_grad * mask).sum() / mask.sum()


def gather_with_keepdimed_indices(input: Any, dim: int, indices: Any, keepdim: bool) -> Any:
    """``input`` read at ``indices`` along ``dim`` (a reduction's chosen elements), its shape the reduction's."""
    if not keepdim:
        indices = indices.unsqueeze(dim)
    out = input.gather(dim, indices)
    return out if keepdim else out.squeeze(dim)


def restore_reduced_dims(output: Any, dims: Any, keepdim: bool) -> Any:
    """A reduction's output with its reduced dimensions put back (size 1), unless they were kept."""
    if keepdim:
        return output
    dims = [dims] if isinstance(dims, int) else list(dims)
    rank = output.dim() + len(dims)
    for d in sorted(d % rank for d in dims):
        output = output.unsqueeze(d)
    return output


def mm_mat1_backward(grad: Any, mat2: Any, sizes: Any, strides: Any, layout: Any, alpha: Any) -> Any:
    """d(alpha * mat1 @ mat2)/d mat1: grad @ mat2^H, times conj(alpha)."""
    return _times(grad.mm(mat2.mH), alpha)


def mm_mat2_backward(grad: Any, mat1: Any, sizes: Any, strides: Any, layout: Any, alpha: Any) -> Any:
    """d(alpha * mat1 @ mat2)/d mat2: mat1^H @ grad, times conj(alpha)."""
    return _times(mat1.mH.mm(grad), alpha)


def _times(t: Any, alpha: Any) -> Any:
    if not isinstance(alpha, torch.Tensor) and alpha == 1:
        return t
    return t * (alpha.conjugate() if isinstance(alpha, complex) else alpha)


def slice_backward_wrapper(grad: Any, sizes: Any, dim: int, start: Any, end: Any, step: int) -> Any:
    """The gradient of a slice: ``grad`` placed back into zeros of the input's shape (open ends filled in)."""
    begin = 0 if start is None else start
    stop = (1 << 63) - 1 if end is None else end
    return torch.ops.aten.slice_backward(grad, list(sizes), dim, begin, stop, step)


def masked_fill_backward(grad: Any, mask: Any) -> Any:
    """The gradient of the filled-in value: the sum of ``grad`` where the mask is set."""
    return torch.where(mask, grad, torch.zeros_like(grad)).sum()


def _dims(dims: Any, rank: int) -> list[int]:
    """A dimension list (an int, a list, or None: every dimension) wrapped into ``range(rank)``, sorted."""
    if dims is None:
        return list(range(rank))
    listed = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d % rank for d in listed}) if rank else []


def sum_backward(grad: Any, sizes: Any, dims: Any, keepdim: bool) -> Any:
    """The gradient of a sum over ``dims`` (none given or empty: every dimension): ``grad`` spread back."""
    if not keepdim and len(sizes) > 0 and dims:
        for d in _dims(dims, len(sizes)):
            grad = grad.unsqueeze(d)
    return grad.expand(tuple(sizes))


def mean_backward(grad: Any, sizes: Any, dims: Any, numel: int, keepdim: bool) -> Any:
    """A mean's gradient: the sum's, divided by the count of elements each output averaged."""
    count = numel if not dims else math.prod(sizes[d] for d in _dims(dims, len(sizes))) if len(sizes) else 1
    return sum_backward(grad, sizes, dims, keepdim) / count


def nansum_backward(grad: Any, self: Any, dims: Any, keepdim: bool) -> Any:
    """A sum skipping NaN: the sum's gradient, zero at the NaN elements."""
    return sum_backward(grad, self.shape, dims, keepdim) * self.isnan().logical_not()


def sgn_backward(x: Any, gx: Any, sgn: Any) -> Any:
    """sgn(z) = z/|z| moves only with z's angle: (gx - sgn Re(gx conj(sgn))) / |z|, zero at z = 0 (and for a
    real z, where it is constant)."""
    magnitude = x.abs()
    value = (gx - sgn * (gx * sgn.conj()).real) / magnitude
    return torch.where(magnitude == 0, torch.zeros_like(value), value)


def angle_backward(grad: Any, self: Any) -> Any:
    """angle(z) = atan2(Im z, Re z): d angle = Im(conj(z) dz) / |z|^2, so the gradient is i z grad / |z|^2
    (zero at z = 0); a real input's angle is constant."""
    if not self.is_complex():
        return torch.zeros_like(self)
    value = grad * self / self.abs().pow(2) * 1j
    return torch.where(self == 0, torch.zeros_like(value), value)


def take_backward(grad: Any, self: Any, indices: Any) -> Any:
    """``take`` reads flat elements: their gradients added back at those places."""
    return torch.zeros_like(self).put(indices, grad, accumulate=True)


def constant_pad_nd_backward(grad: Any, pad: Any) -> Any:
    """Padding's gradient: the padding cut away again (a negative pad)."""
    return torch.constant_pad_nd(grad, [-p for p in pad], 0)


def max_pool_double_backward(grad: Any, indices: Any, dim: int) -> Any:
    """A max pool's backward is linear in its gradient: its own gradient reads ``grad`` at the chosen places
    (``indices``, flat over the last ``dim`` dimensions)."""
    if indices.numel() == 0:
        return torch.empty_like(indices, dtype=grad.dtype)
    flat = [*indices.shape[: indices.dim() - dim], -1]
    return grad.contiguous().reshape(flat).gather(-1, indices.reshape(flat)).reshape(indices.shape)


def log_sigmoid_double_backward(grad: Any, input: Any) -> Any:
    """log sigmoid(x)'' = -s (1 - s), s = sigmoid(x)."""
    s = input.sigmoid()
    return grad * (s - 1) * s


def softplus_double_backward(grad: Any, input: Any, beta: Any, threshold: Any) -> Any:
    """softplus'' = beta s (1 - s) with s = sigmoid(beta x), zero where softplus is linear (beta x not below
    the threshold)."""
    x = input * beta
    s = x.sigmoid()
    return grad * s * (1 - s) * (x < threshold).to(grad.dtype) * beta


def _mean_of(value: Any, input: Any, reduction: int) -> Any:
    return value / input.numel() if reduction == 1 else value


def mse_loss_double_backward(grad: Any, input: Any, reduction: int) -> Any:
    """(x - y)^2'' = 2 (divided by the count for a mean)."""
    return _mean_of(2 * grad, input, reduction)


def smooth_l1_loss_double_backward(grad: Any, input: Any, target: Any, reduction: int, beta: float) -> Any:
    """The quadratic part's second derivative, 1/beta, where |x - y| < beta; zero on the linear part."""
    if beta == 0:
        return torch.zeros_like(grad)
    inside = ((input - target).abs() < beta).to(grad.dtype)
    return _mean_of(grad * inside / beta, input, reduction)


def huber_loss_double_backward(grad: Any, input: Any, target: Any, reduction: int, delta: float) -> Any:
    """The quadratic part's second derivative, 1, where |x - y| < delta; zero on the linear part."""
    inside = ((input - target).abs() < delta).to(grad.dtype)
    return _mean_of(grad * inside, input, reduction)


def huber_loss_double_backward_grad_output(
    grad: Any, grad_output: Any, input: Any, target: Any, reduction: int, delta: float
) -> Any:
    """huber_loss_backward is linear in grad_output: its gradient there is the backward with ``grad`` in
    its place (summed to the 0-dim grad_output of a reduced loss)."""
    if reduction == 0:
        return torch.ops.aten.huber_loss_backward(grad, input, target, reduction, delta)
    ones = torch.ones_like(grad_output)
    return (torch.ops.aten.huber_loss_backward(ones, input, target, reduction, delta) * grad).sum()


def _tiny_safe(self: Any) -> tuple[Any, Any]:
    tiny = torch.finfo(self.dtype).eps
    big = self.abs() > tiny
    return big, torch.where(big, self, torch.full_like(self, tiny))


def i1_backward(grad: Any, self: Any, result: Any) -> Any:
    """I1'(x) = I0(x) - I1(x)/x, and 1/2 at x = 0."""
    big, safe = _tiny_safe(self)
    value = torch.special.i0(safe) - result / safe
    return grad * torch.where(big, value, torch.full_like(value, 0.5))


def i1e_backward(grad: Any, self: Any, result: Any) -> Any:
    """(e^-|x| I1(x))' = i0e(x) - i1e(x) (sgn(x) + 1/x), and 1/2 at x = 0."""
    big, safe = _tiny_safe(self)
    value = torch.special.i0e(safe) - result * (safe.sgn() + safe.reciprocal())
    return grad * torch.where(big, value, torch.full_like(value, 0.5))


def polar_backward(grad: Any, result: Any) -> Any:
    """polar(r, t) = r e^(it): d = e^(it) dr + i result dt, so grad_r = Re(conj(grad) sgn(result)) and
    grad_t = Re(conj(grad) i result)."""
    if grad is None:
        return (None, None)
    conj = grad.conj()
    return ((conj * result.sgn()).real, (conj * (result * 1j)).real)


def logsumexp_jvp(self_p: Any, self_t: Any, dim: Any, keepdim: bool) -> Any:
    """The tangent of logsumexp: the tangent averaged with softmax weights over ``dim``."""
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    real = self_p.real if self_p.is_complex() else self_p  # the weights do not change with a real shift
    shifted = (self_p - real.amax(dims, True)).exp() if self_p.numel() > 0 else self_p.exp()
    return (shifted * self_t).sum(dims, keepdim) / shifted.sum(dims, keepdim)


def amaxamin_jvp(x: Any, dx: Any, result: Any, dim: Any, keepdim: bool) -> Any:
    """The tangent of amax/amin: the mean of the tangent over the elements equal to the result."""
    mask = x == restore_reduced_dims(result, dim, keepdim)
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    return torch.where(mask, dx, torch.zeros_like(dx)).sum(dims, keepdim) / mask.sum(dims, keepdim)


def mvlgamma_backward(grad: Any, self: Any, p: int) -> Any:
    """d/dx log Gamma_p(x) = sum over i < p of digamma(x - i/2)."""
    shifts = torch.arange(-p / 2.0 + 0.5, 0.5, 0.5, dtype=self.dtype, device=self.device)
    return grad * (self.unsqueeze(-1) + shifts).digamma().sum(-1)


def index_backward(zeros: Any, indices: Any, grad: Any) -> Any:
    """Advanced indexing's gradient: ``grad`` added back at the indexed places."""
    return torch.ops.aten.index_put(zeros, indices, grad, True)


def pow_backward_self(grad: Any, self: Any, exponent: Any) -> Any:
    """d x^p / dx = p x^(p-1) for a tensor exponent, zero where p = 0."""
    value = grad * (exponent * self.pow(exponent - 1)).conj()
    return _real_if_real(self, torch.where(exponent == 0, torch.zeros_like(value), value))


def _non_negative_real(exponent: Any) -> Any:
    if isinstance(exponent, torch.Tensor) and exponent.is_complex():
        return (exponent.imag == 0) & (exponent.real >= 0)
    return exponent >= 0


def pow_backward_exponent(grad: Any, self: Any, exponent: Any, result: Any) -> Any:
    """d b^p / dp = b^p log(b): zero at b = 0 for a real, non-negative p (the limit PyTorch takes)."""
    at_zero: Any
    if not isinstance(self, torch.Tensor):
        base = complex(self) if exponent.is_complex() else float(self)
        value = (result * (cmath.log(base) if isinstance(base, complex) else _log(base))).conj()
        at_zero = base == 0
    else:
        value = (result * self.log()).conj()
        at_zero = self == 0
    if isinstance(at_zero, bool):
        keep = _non_negative_real(exponent) if at_zero else None
    else:
        keep = at_zero & _non_negative_real(exponent)
    out = grad * (value if keep is None else torch.where(keep, torch.zeros_like(value), value))
    return _real_if_real(exponent, out)


def _log(base: float) -> Any:
    return math.log(base) if base > 0 else cmath.log(base) if base < 0 else -math.inf


def clamp_backward_min_max(grad: Any, self: Any, min: Any, max: Any, mask: Any) -> Any:
    """The gradient of the bounds: to ``min`` where it clamped (and was below ``max``), to ``max`` where it
    clamped or, when min > max, everywhere (clamp then returns max)."""
    if grad is None:
        return (None, None)
    zero = torch.zeros_like(grad)
    low = high = None
    if min is not None and max is not None:
        if mask[0]:
            low = torch.where(self.lt(min) & min.lt(max), grad, zero)
        if mask[1]:
            high = torch.where(self.gt(max) | max.lt(min), grad, zero)
    elif min is not None and mask[0]:
        low = torch.where(self.lt(min), grad, zero)
    elif max is not None and mask[1]:
        high = torch.where(self.gt(max), grad, zero)
    return (low, high)


def clamp_jvp(self_p: Any, self_t: Any, min_p: Any, min_t: Any, max_p: Any, max_t: Any) -> Any:
    """clamp's tangent: the tangent of whichever of self, min, max the result is."""
    if min_p is not None and max_p is not None:
        inner = torch.where(self_p < min_p, min_t, torch.where(self_p > max_p, max_t, self_t))
        return torch.where(min_p > max_p, max_t, inner)
    if min_p is not None:
        return torch.where(self_p > min_p, self_t, min_t)
    if max_p is not None:
        return torch.where(self_p < max_p, self_t, max_t)
    return self_t


def logsumexp_backward(grad: Any, self: Any, result: Any, dim: Any, keepdim: bool) -> Any:
    """d logsumexp(x) / dx = exp(x - logsumexp(x)): softmax weights over ``dim``."""
    if not keepdim and self.dim() != 0:
        grad = restore_reduced_dims(grad, dim, False)
        result = restore_reduced_dims(result, dim, False)
    return grad * (self - result).exp().conj()


def safe_logsumexp_jvp(self_p: Any, self_t: Any, dim: Any, keepdim: bool) -> Any:
    """logsumexp's tangent (the softmax-weighted mean of the tangent), zero over a slice all -inf (where
    the weights are no numbers)."""
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    top = self_p.amax(dims, True)
    shifted = (self_p - torch.where(top.isinf(), torch.zeros_like(top), top)).exp()
    total = shifted.sum(dims, keepdim)
    value = (shifted * self_t).sum(dims, keepdim) / total
    return torch.where(total == 0, torch.zeros_like(value), value)


def softmax_double_backward(grad: Any, grad_output: Any, dim: int, output: Any) -> Any:
    """softmax's backward, y * (g - sum(g y)), differentiated in y along ``grad``:
    grad * (g - sum(g y)) - g * sum(grad y)."""
    return grad * (grad_output - (grad_output * output).sum(dim, True)) - grad_output * (grad * output).sum(dim, True)


def repeat_backward(grad: Any, repeats: Any, input_shape: Any) -> Any:
    """``repeat``'s gradient: each copy's gradient added up (and the leading dimensions it added summed)."""
    shape = [1] * (len(repeats) - len(input_shape)) + list(input_shape)
    split = [n for pair in zip(repeats, shape, strict=True) for n in pair]
    summed = grad.reshape(split).sum(tuple(range(0, len(split), 2))) if split else grad
    return summed.reshape(tuple(input_shape))


def _gelu_second(x: Any, approximate: str) -> Any:
    """gelu''(x): phi(x) (2 - x^2) exactly; the tanh form's own second derivative for ``tanh``."""
    if approximate == "tanh":
        k, c = math.sqrt(2.0 / math.pi), 0.044715
        u = k * (x + c * x.pow(3))
        t = u.tanh()
        du, ddu = k * (1 + 3 * c * x.pow(2)), 6 * k * c * x
        sech2 = 1 - t.pow(2)
        return sech2 * du + 0.5 * x * (sech2 * ddu - 2 * t * sech2 * du.pow(2))
    phi = (-0.5 * x.pow(2)).exp() / math.sqrt(2.0 * math.pi)
    return phi * (2 - x.pow(2))


def gelu_double_backward(ggI: Any, gO: Any, input: Any, approximate: str) -> Any:
    """gelu_backward(gO, x) = gO gelu'(x), differentiated in x along ggI."""
    return ggI * gO * _gelu_second(input, approximate)


def binary_cross_entropy_target_backward(grad: Any, self: Any, target: Any, weight: Any, reduction: int) -> Any:
    """-w (t log x + (1 - t) log(1 - x)) differentiated in t: w (log(1 - x) - log x)."""
    value = grad * ((-self).log1p() - self.log())
    if weight is not None:
        value = value * weight
    return _mean_of(value, target, reduction)


def _others(x: Any) -> Any:
    """The product, over the last dimension, of every element but each one (exact with zeros)."""
    ones = torch.ones_like(x.narrow(-1, 0, 1))
    left = torch.cat([ones, x.narrow(-1, 0, x.shape[-1] - 1)], -1).cumprod(-1)
    right = torch.cat([x.narrow(-1, 1, x.shape[-1] - 1), ones], -1).flip(-1).cumprod(-1).flip(-1)
    return left * right


def prod_backward(grad: Any, input: Any, result: Any, dim: Any = None, keepdim: bool = False) -> Any:
    """A product's gradient in each element: the product of the others (conjugated), times grad."""
    if input.dim() == 0:
        return grad
    if dim is None:
        return (grad * _others(input.reshape(-1)).conj()).reshape(input.shape)
    if input.shape[dim] == 0:
        return torch.zeros_like(input)
    grad = restore_reduced_dims(grad, dim, keepdim)
    others = _others(input.movedim(dim, -1)).movedim(-1, dim)
    return grad * others.conj()


def cumprod_jvp(self_t: Any, self_p: Any, result: Any, dim: int) -> Any:
    """cumprod's tangent: d result[k] = sum over i <= k of (the product of x[j], j <= k, j != i) dx[i] (exact
    with zeros: quadratic in the length of ``dim``, samples are short)."""
    if self_p.dim() == 0:
        return self_t
    x, t = self_p.movedim(dim, -1), self_t.movedim(dim, -1)
    n = x.shape[-1]
    if n == 0:
        return self_t.clone()
    lower = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
    rows = torch.where(lower, x.unsqueeze(-2), torch.ones_like(x.unsqueeze(-2)))
    return (_others(rows) * t.unsqueeze(-2) * lower).sum(-1).movedim(-1, dim)


def infinitely_differentiable_native_dropout_backward(grad: Any, mask: Any, scale: float) -> Any:
    """Dropout's gradient: ``grad`` where the mask kept the element, times the scale (differentiable again)."""
    return grad * (mask.to(grad.dtype) * scale)


def native_dropout_double_backward(ggI: Any, grad: Any, mask: Any, scale: float) -> Any:
    """native_dropout_backward(grad, mask, scale) = grad * mask * scale is linear in grad: its gradient there
    is ``ggI`` masked and scaled alike."""
    return ggI * (mask.to(ggI.dtype) * scale)


def warn_backwards(grad: Any) -> Any:
    """The gradient unchanged, with the warning torch's test op gives from its backward."""
    warnings.warn("Warn from backward", stacklevel=2)
    return grad


def _norm_weights(self: Any, p: Any, norm: Any, dims: Any, keepdim: bool) -> Any:
    """d ||x||_p / dx (as torch's real-valued-of-complex convention takes it: the gradient of a real grad of
    1), ``norm`` with its reduced dimensions put back."""
    order = 2.0 if p is None else float(p)
    reduced = list(range(self.dim())) if not dims else [d % max(self.dim(), 1) for d in dims]
    norm = norm if keepdim or self.dim() == 0 else restore_reduced_dims(norm, reduced, False)
    zero = torch.zeros_like(self)
    if order == 0:
        return zero
    if order == 1:
        return self.sgn()
    if math.isinf(order):
        mask = (self.abs() == norm).to(self.dtype)
        return self.sgn() * mask / mask.sum(reduced, True)
    if order == 2:
        value = self / norm
        return torch.where(norm == 0, zero, value)
    scaled = self.sgn() * self.abs().pow(order - 1)
    if order < 1:
        scaled = torch.where(self == 0, zero, scaled)
    value = scaled / norm.pow(order - 1)
    return torch.where(norm == 0, zero, value)


def norm_backward(grad: Any, self: Any, p: Any, norm: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The p-norm's gradient: sgn(x) |x|^(p-1) / ||x||^(p-1) (zero where the norm is), and its limits: zero
    for p = 0, sgn(x) for p = 1, x / ||x|| for p = 2, the gradient shared evenly by the largest |x| for
    p = +-inf."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    if dims and not keepdim and self.dim() != 0:
        grad = restore_reduced_dims(grad, dims, False)
    return grad * _norm_weights(self, p, norm, dims, keepdim)


def norm_jvp(self_p: Any, self_t: Any, p: Any, norm: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The p-norm's tangent: the real part of <weights, tangent> over the reduced dimensions."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    reduced = dims if dims else list(range(self_p.dim()))
    product = _norm_weights(self_p, p, norm, dims, keepdim).conj() * self_t
    product = product.real if product.is_complex() else product
    return product.sum(reduced, keepdim) if self_p.dim() else product


def linalg_vector_norm_backward(grad: Any, self: Any, ord: Any, norm: Any, dim: Any, keepdim: bool) -> Any:
    """``linalg.vector_norm``'s gradient: the p-norm's, ``dim`` None meaning every dimension."""
    return norm_backward(grad, self, ord, norm, () if dim is None else dim, keepdim)


def linalg_vector_norm_jvp(self_p: Any, self_t: Any, ord: Any, norm: Any, dim: Any, keepdim: bool) -> Any:
    """``linalg.vector_norm``'s tangent: the p-norm's."""
    return norm_jvp(self_p, self_t, ord, norm, () if dim is None else dim, keepdim)


def aminmax_backward(self: Any, dim: Any, keepdim: bool, grad_min: Any, grad_max: Any, min: Any, max: Any) -> Any:
    """aminmax's gradient: each of min's and max's gradient shared evenly by the elements equal to it."""
    dims = list(range(self.dim())) if dim is None else [dim]
    total = torch.zeros_like(self)
    for grad, value in ((grad_min, min), (grad_max, max)):
        if grad is None:
            continue
        mask = self == restore_reduced_dims(value, dims, keepdim)
        share = restore_reduced_dims(grad, dims, keepdim) / mask.sum(dims, True)
        total = total + torch.where(mask, share, torch.zeros_like(share))
    return total


def logcumsumexp_backward(grad: Any, self: Any, result: Any, dim: int) -> Any:
    """r[k] = log sum over j <= k of exp(x[j]): the gradient in x[j] is the sum over k >= j of
    grad[k] conj(exp(x[j] - r[k])) (shifted by the slice's largest real part, so nothing overflows)."""
    if self.dim() == 0 or self.numel() == 0:
        return grad
    top = (self.real if self.is_complex() else self).amax(dim, True)
    later = (grad * (top - result).exp().conj()).flip(dim).cumsum(dim).flip(dim)
    return later * (self - top).exp().conj()


def aminmax_jvp(self_p: Any, self_t: Any, result: Any, dim: Any, keepdim: bool) -> Any:
    """The tangent of aminmax's min or max: amin's and amax's, over every dimension when ``dim`` is None."""
    dims = list(range(self_p.dim())) if dim is None else [dim]
    return amaxamin_jvp(self_p, self_t, result, dims, keepdim) if dims else self_t


def logcumsumexp_jvp(self_p: Any, self_t: Any, dim: int) -> Any:
    """logcumsumexp's tangent: at each place, the tangent averaged with the weights exp(x[j]) over the
    places j up to it (shifted by the slice's largest real part, so nothing overflows)."""
    if self_p.dim() == 0 or self_p.numel() == 0:
        return self_t.clone()
    top = (self_p.real if self_p.is_complex() else self_p).amax(dim, True)
    weights = (self_p - top).exp()
    return (weights * self_t).cumsum(dim) / weights.cumsum(dim)


def split_with_sizes_backward(grads: Any, split_sizes: Any, dim: int, sizes: Any, **options: Any) -> Any:
    """The gradient of a split into pieces of ``split_sizes`` along ``dim``: the pieces' gradients laid end to
    end again (a piece without one contributes zeros of its shape)."""
    dim = dim % len(sizes) if len(sizes) else 0
    parts = []
    for g, n in zip(grads, split_sizes, strict=True):
        if g is None:
            shape = list(sizes)
            shape[dim] = n
            g = torch.zeros(shape, **options)
        parts.append(g)
    return torch.cat(parts, dim)


def split_backward(grads: Any, split_size: int, dim: int, sizes: Any, **options: Any) -> Any:
    """The gradient of a split into pieces of ``split_size`` (the last one shorter): as for their sizes."""
    length = sizes[dim % len(sizes) if len(sizes) else 0]
    count = max(-(-length // split_size), 1) if split_size else 1
    pieces = [split_size] * (count - 1) + [length - split_size * (count - 1)]
    return split_with_sizes_backward(grads, pieces, dim, sizes, **options)


def unbind_backward(grads: Any, dim: int) -> Any:
    """The gradient of unbind along ``dim``: the slices' gradients stacked back along it (zeros for one
    without a gradient)."""
    like = next(g for g in grads if g is not None)
    return torch.stack([torch.zeros_like(like) if g is None else g for g in grads], dim)


# -- variance and standard deviation ---------------------------------------------------------------------


def var_backward(grad: Any, self: Any, dim: Any, correction: Any, keepdim: bool) -> Any:
    """var = sum |x - mean|^2 / (N - correction): its gradient 2 (x - mean) / (N - correction) times grad
    (the reduced dimensions put back); with N = correction, inf (NaN where x is the mean)."""
    c = 1.0 if correction is None else float(correction)
    if self.dim() == 0 or dim is None:
        dof, centered = self.numel() - c, self - self.mean()
    else:
        dims = _dims(dim, self.dim())
        if not keepdim and self.dim() > 1:
            grad = restore_reduced_dims(grad, dims, False)
        dof, centered = math.prod(self.shape[d] for d in dims) - c, self - self.mean(dims, True)
    if dof <= 0:
        return grad * torch.where(
            centered == 0, torch.full_like(centered, math.nan), torch.full_like(centered, math.inf)
        )
    return (2.0 / dof) * grad * centered


def std_backward(result: Any, grad: Any, self: Any, dim: Any, correction: Any, keepdim: bool) -> Any:
    """std = sqrt(var): var's gradient with grad / (2 std) (zero where std is)."""
    scaled = grad / (result * 2)
    return var_backward(torch.where(result == 0, torch.zeros_like(scaled), scaled), self, dim, correction, keepdim)


def _add_defined(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _mean_part(grad: Any, self: Any, dim: Any, keepdim: bool) -> Any:
    if grad is None:
        return None
    return mean_backward(grad, self.shape, None if dim is None else _dims(dim, self.dim()), self.numel(), keepdim)


def var_mean_backward(gvar: Any, gmean: Any, self: Any, dim: Any, correction: Any, keepdim: bool) -> Any:
    """var_mean's gradient: var's and mean's, added (either may be undefined)."""
    part = None if gvar is None else var_backward(gvar, self, dim, correction, keepdim)
    return _add_defined(part, _mean_part(gmean, self, dim, keepdim))


def std_mean_backward(gstd: Any, gmean: Any, self: Any, std: Any, dim: Any, correction: Any, keepdim: bool) -> Any:
    """std_mean's gradient: std's and mean's, added (either may be undefined)."""
    part = None if gstd is None else std_backward(std, gstd, self, dim, correction, keepdim)
    return _add_defined(part, _mean_part(gmean, self, dim, keepdim))


# -- linear algebra: Cholesky --------------------------------------------------------------------------------


def _mm(a: Any, b: Any) -> Any:
    """The matrix product over broadcast batch dimensions, through mm/bmm: not through ``matmul``, whose
    derivatives.yaml entry (for nested tensors) the Python tier may have installed as its CPU kernel."""
    if a.dim() == 2 and b.dim() == 2:
        return a.mm(b)
    rank = max(a.dim(), b.dim()) - 2
    left, right = [1] * (rank - a.dim() + 2) + list(a.shape[:-2]), [1] * (rank - b.dim() + 2) + list(b.shape[:-2])
    batch = [x if y == 1 else y for x, y in zip(left, right, strict=True)]
    count = math.prod(batch)  # not -1: an empty matrix leaves it ambiguous
    flat_a = a.expand(*batch, *a.shape[-2:]).reshape(count, *a.shape[-2:])
    flat_b = b.expand(*batch, *b.shape[-2:]).reshape(count, *b.shape[-2:])
    return flat_a.bmm(flat_b).reshape(*batch, a.shape[-2], b.shape[-1])


def _solve_tri(a: Any, b: Any, upper: bool, left: bool = True, unit: bool = False) -> Any:
    return torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)


def _lower_hermitian_part(t: Any) -> Any:
    """Half of the lower triangle of ``t`` (diagonal included) plus its strict part's adjoint: a Hermitian
    matrix whose lower triangle is half ``t``'s."""
    lower = t.tril()
    return 0.5 * (lower + lower.tril(-1).mH)


def cholesky_backward(grad: Any, upper: bool, L: Any) -> Any:
    """A = L L^H: the gradient in A is L^-H S L^-1, S Hermitian from the lower triangle of L^H grad (the
    factor's gradient, read as lower; with ``upper``, U = L^H)."""
    low, g = (L.mH, grad.mH) if upper else (L, grad)
    middle = _lower_hermitian_part(_mm(low.mH, g))
    return _solve_tri(low, _solve_tri(low.mH, middle, True), False, left=False)


def cholesky_jvp(dA: Any, L: Any, upper: bool) -> Any:
    """dL = L phi(L^-1 dA L^-H), phi taking the lower triangle with the diagonal halved (U = L^H)."""
    low = L.mH if upper else L
    inner = _solve_tri(low.mH, _solve_tri(low, dA, False), True, left=False)
    dL = _mm(low, inner.tril() - 0.5 * torch.diag_embed(inner.diagonal(0, -2, -1)))
    return dL.mH if upper else dL


def _factor_grad(gA: Any, L: Any, upper: bool) -> Any:
    """The gradient in the factor of A = L L^H (or U^H U) from the gradient in A."""
    both = gA + gA.mH
    return _mm(L, both) if upper else _mm(both, L)


def _product_tangent(L: Any, dL: Any, upper: bool) -> Any:
    """dA for A = L L^H (or U^H U)."""
    return _mm(dL.mH, L) + _mm(L.mH, dL) if upper else _mm(dL, L.mH) + _mm(L, dL.mH)


def cholesky_inverse_backward(grad: Any, L: Any, upper: bool, inverse: Any) -> Any:
    """d A^-1 = -A^-1 dA A^-1 (A^-1 Hermitian), carried to the factor."""
    if grad is None:
        return None
    return _factor_grad(-_mm(_mm(inverse, grad), inverse), L, upper)


def cholesky_inverse_jvp(L: Any, dL: Any, inverse: Any, upper: bool) -> Any:
    """The tangent of X = (L L^H)^-1 as torch takes it: K + K^H with K = -X dL X L^H (for U = L^H:
    K = -X dU^H X U), both in the tangent's whole matrix."""
    part = -_mm(_mm(_mm(inverse, dL.mH if upper else dL), inverse), L if upper else L.mH)
    return part + part.mH


def cholesky_solve_backward(grad_x: Any, self: Any, input2: Any, result: Any, upper: bool, mask: Any) -> Any:
    """X = A^-1 B with A from its factor: gB = A^-1 gX, gA = -gB X^H (carried to the factor)."""
    if grad_x is None:
        return (None, None)
    gB = torch.cholesky_solve(grad_x, input2, upper)
    gL = _factor_grad(-_mm(gB, result.mH), input2, upper) if mask[1] else None
    return (gB if mask[0] else None, gL)


def cholesky_solve_jvp(X: Any, L: Any, dL: Any, dB: Any, upper: bool) -> Any:
    return torch.cholesky_solve(dB - _mm(_product_tangent(L, dL, upper), X), L, upper)


# -- linear algebra: determinants and solves ----------------------------------------------------------------


def _inverse_adjoint_times(A: Any, d: Any) -> Any:
    """A^-H times the batch of diagonal matrices ``d``, where A is invertible; where it is singular, the
    cofactor matrix's conjugate times ``d`` through A's singular values (det A = det U det Vh prod S)."""
    n = A.shape[-1]
    eye = torch.eye(n, dtype=A.dtype, device=A.device)
    scaled = d[..., None, None] * eye
    U, S, Vh = torch.linalg.svd(A)
    singular = S.amin(-1) <= torch.finfo(S.dtype).eps * n * S.amax(-1).clamp_min(1)
    if not bool(singular.any()):
        return torch.linalg.solve(A.mH, scaled)
    phase = (torch.linalg.det(U) * torch.linalg.det(Vh)).conj() * d
    others = _others(S.to(A.dtype)) * phase.unsqueeze(-1)
    by_svd = _mm((U * others.unsqueeze(-2)), Vh)
    safe = torch.where(singular[..., None, None], eye, A)
    return torch.where(singular[..., None, None], by_svd, torch.linalg.solve(safe.mH, scaled))


def linalg_det_backward(grad: Any, det: Any, A: Any, LU: Any, pivots: Any) -> Any:
    """d det A = det A tr(A^-1 dA): the gradient is grad conj(det A) A^-H (the cofactors, for a singular A)."""
    if grad is None:
        return None
    if A.numel() == 0:
        return torch.zeros_like(A)
    return _inverse_adjoint_times(A, grad * det.conj())


def _trace_solve(LU: Any, pivots: Any, dA: Any, use_A_T: bool) -> Any:
    """tr(A^-1 dA), A from its LU factors (of A^T when ``use_A_T``)."""
    return torch.linalg.lu_solve(LU, pivots, dA, adjoint=use_A_T).diagonal(0, -2, -1).sum(-1)


def linalg_det_jvp(dA: Any, det: Any, LU: Any, pivots: Any, use_A_T: bool) -> Any:
    return det * _trace_solve(LU, pivots, dA, use_A_T)


def slogdet_backward(grad_sign: Any, grad_logabsdet: Any, A: Any, sign: Any, LU: Any, pivots: Any) -> Any:
    """log det A = logabsdet + i angle: logabsdet's gradient is grad A^-H; for a complex A the sign,
    e^(i angle), adds -i Im(conj(grad_sign) sign) A^-H."""
    if grad_sign is None and grad_logabsdet is None:
        return None
    g = torch.zeros_like(sign.real) if grad_logabsdet is None else grad_logabsdet
    if A.is_complex():
        g = g.to(A.dtype)
        if grad_sign is not None:
            g = g - 1j * (grad_sign.conj() * sign).imag
    return _inverse_adjoint_times(A, g)


def slogdet_jvp(LU: Any, pivots: Any, dA: Any, sign: Any, use_A_T: bool) -> Any:
    """t = tr(A^-1 dA): d logabsdet = Re t, d sign = i sign Im t (zero for a real A)."""
    t = _trace_solve(LU, pivots, dA, use_A_T)
    if not t.is_complex():
        return (torch.zeros_like(sign), t)
    return (sign * (1j * t.imag), t.real)


def _triangle(t: Any, upper: bool, unitriangular: bool) -> Any:
    """The part of ``t`` a triangular matrix holds (strict when its diagonal is implicit ones)."""
    shift = 1 if unitriangular else 0
    return t.triu(shift) if upper else t.tril(-shift)


def linalg_solve_triangular_backward(
    grad: Any, A: Any, X: Any, upper: bool, left: bool, unitriangular: bool, mask: Any
) -> Any:
    """X = A^-1 B (or B A^-1): gB = A^-H gX (or gX A^-H), gA = -gB X^H (or -X^H gB) on A's triangle."""
    if grad is None:
        return (None, None)
    gB = _solve_tri(A.mH, grad, not upper, left, unitriangular)
    gA = None
    if mask[0]:
        gA = _triangle(-(_mm(gB, X.mH) if left else _mm(X.mH, gB)), upper, unitriangular)
    return (gA, gB if mask[1] else None)


def linalg_solve_triangular_forward_AD(
    A_t: Any, B_t: Any, A: Any, X: Any, upper: bool, left: bool, unitriangular: bool
) -> Any:
    """dX = A^-1 (dB - dA X) (or (dB - X dA) A^-1), dA on A's triangle."""
    dA = _triangle(A_t, upper, unitriangular)
    rest = B_t - (_mm(dA, X) if left else _mm(X, dA))
    return _solve_tri(A, rest, upper, left, unitriangular)


def triangular_solve_backward(
    grad_x: Any, grad_m: Any, b: Any, a: Any, x: Any, upper: bool, transpose: bool, unitriangular: bool,
    mask: Any,
) -> Any:  # fmt: skip
    """op(A) X = b, op transposing when ``transpose``: gb = op(A)^-H gX; gA = -gb X^H (transposed back)
    on A's triangle, plus the cloned coefficient's gradient."""
    gb = ga = None
    if grad_x is not None:
        gb = torch.triangular_solve(grad_x, a.conj(), upper, not transpose, unitriangular)[0]
        if mask[1]:
            ga = -(_mm(x.conj(), gb.mT) if transpose else _mm(gb, x.mH))
            ga = _triangle(ga, upper, unitriangular)
    if mask[1] and grad_m is not None:
        ga = grad_m if ga is None else ga + grad_m
    return (gb if mask[0] else None, ga)


def triangular_solve_jvp(X: Any, A: Any, dA: Any, dB: Any, upper: bool, transpose: bool, unitriangular: bool) -> Any:
    """dX = op(A)^-1 (dB - dA X), with the tangent's whole matrix dA, untransposed (as torch takes it)."""
    return torch.triangular_solve(dB - _mm(dA, X), A, upper, transpose, unitriangular)[0]


def _vector_rhs(A: Any, B: Any) -> bool:
    """linalg.solve takes B as a vector (or a batch of them) when it is 1-d or A's shape without its last."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def linalg_solve_backward(gX: Any, X: Any, A: Any, LU: Any, pivots: Any, left: bool, B_requires_grad: bool) -> Any:
    """X = A^-1 B (or B A^-1): gB = A^-H gX (or gX A^-H), gA = -gB X^H (or -X^H gB; an outer product for a
    vector B)."""
    if gX is None:
        return (None, None)
    gB = torch.linalg.solve(A.mH, gX, left=left)
    if _vector_rhs(A, X) and left:
        gA = -_mm(gB.unsqueeze(-1), X.unsqueeze(-1).mH)
    else:
        gA = -(_mm(gB, X.mH) if left else _mm(X.mH, gB))
    return (gA, gB if B_requires_grad else None)


def linalg_solve_jvp(dA: Any, dB: Any, X: Any, LU: Any, pivots: Any, left: bool) -> Any:
    """dX = A^-1 (dB - dA X) (or (dB - X dA) A^-1), A from its LU factors."""
    vector = left and (X.dim() == 1 or (X.dim() == LU.dim() - 1 and tuple(X.shape) == tuple(LU.shape[:-1])))
    x, db = (X.unsqueeze(-1), dB.unsqueeze(-1)) if vector else (X, dB)
    rest = db - (_mm(dA, x) if left else _mm(x, dA))
    out = torch.linalg.lu_solve(LU, pivots, rest, left=left)
    return out.squeeze(-1) if vector else out


# -- linear algebra: spectra, pseudo-inverse, exponential -----------------------------------------------------


def _off_diagonal_quotient(t: Any, L: Any) -> Any:
    """t_ij / (L_j - L_i) off the diagonal, the diagonal kept."""
    gaps = L.unsqueeze(-2) - L.unsqueeze(-1)
    eye = torch.eye(L.shape[-1], dtype=torch.bool, device=L.device)
    return torch.where(eye, t, t / torch.where(eye, torch.ones_like(gaps), gaps))


def _with_diagonal(t: Any, d: Any) -> Any:
    eye = torch.eye(t.shape[-1], dtype=torch.bool, device=t.device)
    return torch.where(eye, torch.diag_embed(d).to(t.dtype), t)


def linalg_eig_backward(gL: Any, gV: Any, L: Any, V: Any, is_hermitian: bool) -> Any:
    """A V = V diag(L): the gradient is V^-H (diag(gL) + P / conj(E)) V^H, P being V^H gV projected onto
    the directions the normalized eigenvectors can move in (E_ij = L_j - L_i), V^-H = V for a Hermitian A;
    an eigenvector gradient that depends on the eigenvectors' phases is an error, as it is in torch."""
    if gL is None and gV is None:
        return None
    if gV is None:
        inner = torch.diag_embed(gL.to(V.dtype))
    else:
        P = _mm(V.mH, gV)
        diag = P.diagonal(0, -2, -1)
        if V.is_complex() and not torch.allclose(diag.imag, torch.zeros_like(diag.imag), rtol=1e-2, atol=1e-2):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
                               "so it is ill-defined.")  # fmt: skip
        P = 0.5 * (P - P.mH) if is_hermitian else P - _mm(V.mH, V * diag.real.unsqueeze(-2))
        inner = _off_diagonal_quotient(P, L if is_hermitian else L.conj())
        if gL is not None:
            inner = _with_diagonal(inner, gL)
    if is_hermitian:
        return _mm(_mm(V, inner), V.mH)
    return torch.linalg.solve(V.mH, _mm(inner, V.mH))


def linalg_eig_jvp(dA: Any, L: Any, V: Any, is_hermitian: bool) -> Any:
    """With T = V^-1 dA V: dL = diag(T) (real for a Hermitian A), dV = V X, X = T / E off the diagonal
    (E_ij = L_j - L_i), its diagonal fixing the eigenvectors' norms (none for a Hermitian A)."""
    T = _mm(_mm(V.mH, dA), V) if is_hermitian else torch.linalg.solve(V, _mm(dA.to(V.dtype), V))
    dL = T.diagonal(0, -2, -1)
    dL = dL.real if is_hermitian and dL.is_complex() else dL
    X = _with_diagonal(_off_diagonal_quotient(T, L), torch.zeros_like(dL))
    if is_hermitian:
        return (dL, _mm(V, X))
    dV = _mm(V, X)
    return (dL, dV - V * _mm(V.mH, dV).diagonal(0, -2, -1).real.unsqueeze(-2))


def pinv_backward(grad: Any, pinvA: Any, A: Any) -> Any:
    """With P = A^+: dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P, whose adjoint is
    -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)."""
    P, gh = pinvA, grad.mH
    first = -_mm(_mm(P.mH, grad), P.mH)
    second = _mm(_mm((gh - _mm(A, _mm(P, gh))), P), P.mH)
    third = _mm(_mm(P.mH, P), gh - _mm(_mm(gh, P), A))
    return first + second + third


def pinv_jvp(A: Any, pinvA: Any, dA: Any) -> Any:
    P, dh = pinvA, dA.mH
    first = -_mm(_mm(P, dA), P)
    second = _mm(_mm(P, P.mH), dh - _mm(_mm(dh, A), P))
    third = _mm(_mm((dh - _mm(P, _mm(A, dh))), P.mH), P)
    return first + second + third


def linalg_matrix_exp_differential(self: Any, grad: Any, adjoint: bool) -> Any:
    """The derivative of exp at A along G (at A^H, for the gradient): the upper right block of
    exp([[A, G], [0, A]])."""
    A = self.mH if adjoint else self
    n = A.shape[-1]
    top = torch.cat([A, grad], -1)
    bottom = torch.cat([torch.zeros_like(A), A], -1)
    return torch.linalg.matrix_exp(torch.cat([top, bottom], -2))[..., :n, n:].clone()


# -- renorm ------------------------------------------------------------------------------------------------


def _renorm_parts(self: Any, p: Any, dim: int, maxnorm: Any) -> tuple[Any, Any, list[int], Any]:
    """(each slice's norm, its scale factor, the dimensions a norm reduces, d factor / d norm)."""
    reduced = [d for d in range(self.dim()) if d != dim % max(self.dim(), 1)]
    norm = torch.linalg.vector_norm(self, float(p), reduced, True) if reduced else self.abs()
    top, shifted = float(maxnorm), norm + 1e-7
    big = norm > top
    one = torch.ones_like(norm)
    factor = torch.where(big, top / shifted, one)
    slope = torch.where(big, -top / shifted.pow(2), torch.zeros_like(norm))
    return norm, factor, reduced, slope


def renorm_backward(grad: Any, self: Any, p: Any, dim: int, maxnorm: Any) -> Any:
    """renorm scales each slice along ``dim`` whose p-norm exceeds maxnorm by maxnorm / (norm + 1e-7)."""
    norm, factor, reduced, slope = _renorm_parts(self, p, dim, maxnorm)
    through = (grad * self.conj()).real if self.is_complex() else grad * self
    summed = through.sum(reduced, True) if reduced else through
    return grad * factor + norm_backward(summed * slope, self, p, norm, reduced, True)


def renorm_jvp(self_p: Any, self_t: Any, p: Any, dim: int, maxnorm: Any) -> Any:
    norm, factor, reduced, slope = _renorm_parts(self_p, p, dim, maxnorm)
    return self_t * factor + self_p * slope * norm_jvp(self_p, self_t, p, norm, reduced, True)


# -- linear algebra: singular values, LU -------------------------------------------------------------------


def _gaps(S: Any) -> Any:
    """E_ij = S_j^2 - S_i^2, ones on the diagonal (a divisor for the off-diagonal terms)."""
    squares = S * S
    gaps = squares.unsqueeze(-2) - squares.unsqueeze(-1)
    eye = torch.eye(S.shape[-1], dtype=torch.bool, device=S.device)
    return torch.where(eye, torch.ones_like(gaps), gaps)


def _off_diagonal(t: Any) -> Any:
    eye = torch.eye(t.shape[-1], dtype=torch.bool, device=t.device)
    return torch.where(eye, torch.zeros_like(t), t)


def svd_backward(gU: Any, gS: Any, gVh: Any, U: Any, S: Any, Vh: Any) -> Any:
    """A = U diag(S) Vh (reduced): with J = U^H gU and K = V^H gV made skew, the gradient is
    U [(J S + S K) / E off the diagonal, gS + i Im(diag U^H gU) / S on it] Vh, plus the parts of gU and gV
    outside the spans of U and V (E_ij = S_j^2 - S_i^2); a loss depending on the singular vectors' common
    phase is an error, as it is in torch."""
    if gU is None and gS is None and gVh is None:
        return None
    if gU is None and gVh is None:
        return _mm((U * gS.unsqueeze(-2)), Vh)
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    V = Vh.mH
    UhgU = _mm(U.mH, gU) if gU is not None else None
    VhgV = _mm(Vh, gVh.mH) if gVh is not None else None
    if U.is_complex():
        phases = sum(t.diagonal(0, -2, -1) for t in (UhgU, VhgV) if t is not None)
        if not torch.allclose(phases.imag, torch.zeros_like(phases.imag), rtol=1e-2, atol=1e-2):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
                               "making it ill-defined.")  # fmt: skip
    Sc = S.to(U.dtype)
    core = torch.zeros(*S.shape[:-1], k, k, dtype=U.dtype, device=U.device)
    if UhgU is not None:
        core = core + (UhgU - UhgU.mH) * Sc.unsqueeze(-2)
    if VhgV is not None:
        core = core + Sc.unsqueeze(-1) * (VhgV - VhgV.mH)
    core = _off_diagonal(core / _gaps(S).to(U.dtype))
    diagonal = torch.zeros_like(Sc) if gS is None else gS.to(U.dtype)
    if UhgU is not None and U.is_complex():
        diagonal = diagonal + 1j * UhgU.diagonal(0, -2, -1).imag / S
    gA = _mm(_mm(U, core + torch.diag_embed(diagonal)), Vh)
    if gU is not None and m > k:
        gA = gA + _mm(((gU - _mm(U, UhgU)) / Sc.unsqueeze(-2)), Vh)
    if gVh is not None and n > k:
        gA = gA + _mm(U, ((gVh.mH - _mm(V, VhgV)) / Sc.unsqueeze(-2)).mH)
    return gA


def linalg_svd_jvp(dA: Any, U: Any, S: Any, Vh: Any, full_matrices: bool) -> Any:
    """With dP = U^H dA V: dS = Re diag(dP); dU = U (dP S + S dP^H) / E off the diagonal, plus dA V / S outside
    U's span; dV alike with (S dP + dP^H S) / E; the phase tangent i Im(dP_ii) / S_i split evenly between
    U (+) and V (-)."""
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    if full_matrices and m != n:
        raise RuntimeError("linalg_svd_jvp: forward AD is not implemented for full_matrices=True when m != n")
    Ur, Vhr = U[..., :k], Vh[..., :k, :]
    V, Sc = Vhr.mH, S.to(U.dtype)
    dP = _mm(_mm(Ur.mH, dA), V)
    dS = dP.diagonal(0, -2, -1)
    dS = dS.real if dS.is_complex() else dS
    E = _gaps(S).to(U.dtype)
    omega_u = _off_diagonal((dP * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * dP.mH) / E)
    omega_v = _off_diagonal((Sc.unsqueeze(-1) * dP + dP.mH * Sc.unsqueeze(-2)) / E)
    if U.is_complex():  # the common phase's tangent, shared evenly by U and V
        half = torch.diag_embed(0.5j * dP.diagonal(0, -2, -1).imag / S)
        omega_u, omega_v = omega_u + half, omega_v - half
    dU = _mm(Ur, omega_u)
    dV = _mm(V, omega_v)
    if m > k:
        dU = dU + (_mm(dA, V) - _mm(Ur, dP)) / Sc.unsqueeze(-2)
    if n > k:
        dV = dV + (_mm(dA.mH, Ur) - _mm(V, dP.mH)) / Sc.unsqueeze(-2)
    return (dU, dS, dV.mH)


def lu_unpack_backward(grad_L: Any, grad_U: Any, m: int, n: int) -> Any:
    """LU packs L's strict lower triangle (m x k) and U's upper one (k x n) in one m x n matrix: their
    gradients packed alike."""
    if grad_L is None and grad_U is None:
        return None
    k = min(m, n)
    like = grad_L if grad_L is not None else grad_U
    packed = torch.zeros(*like.shape[:-2], m, n, dtype=like.dtype, device=like.device)
    if grad_L is not None:
        packed = packed + torch.nn.functional.pad(grad_L.tril(-1), (0, n - k))
    if grad_U is not None:
        packed = packed + torch.nn.functional.pad(grad_U.triu(), (0, 0, 0, m - k))
    return packed


def _a_of_lu(LU: Any, pivots: Any) -> tuple[Any, Any, Any]:
    P, L, U = torch.lu_unpack(LU, pivots)
    return P, L, U


def _lu_grad(gA: Any, P: Any, L: Any, U: Any) -> Any:
    """A = P L U: the gradient in the packed LU from the gradient in A."""
    inner = _mm(P.mT, gA)
    return _mm(L.mH, inner).triu() + _mm(inner, U.mH).tril(-1)


def _lu_solve(LU: Any, pivots: Any, t: Any, left: bool, adjoint: bool) -> Any:
    return torch.linalg.lu_solve(LU, pivots, t, left=left, adjoint=adjoint)


def linalg_lu_solve_LU(gX: Any, LU: Any, pivots: Any, X: Any, left: bool, adjoint: bool) -> Any:
    """X = op(A)^-1 B (or B op(A)^-1), A = P L U, op the adjoint when ``adjoint``: the gradient in A (then in
    the packed factors)."""
    if left and not adjoint:
        gA = -_mm(_lu_solve(LU, pivots, gX, True, True), X.mH)
    elif left:
        gA = -_mm(X, _lu_solve(LU, pivots, gX, True, False).mH)
    elif not adjoint:
        gA = -_mm(X.mH, _lu_solve(LU, pivots, gX, False, True))
    else:
        gA = -_mm(_lu_solve(LU, pivots, gX, False, False).mH, X)
    return _lu_grad(gA, *_a_of_lu(LU, pivots))


def linalg_lu_solve_jvp(X: Any, LU: Any, pivots: Any, dLU: Any, dB: Any, left: bool, adjoint: bool) -> Any:
    """dA = P (dL U + L dU) from the packed tangent; dX = op(A)^-1 (dB - op(dA) X) (or its right-hand form)."""
    P, L, U = _a_of_lu(LU, pivots)
    dA = _mm(P, _mm(dLU.tril(-1), U) + _mm(L, dLU.triu()))
    op = dA.mH if adjoint else dA
    rest = dB - (_mm(op, X) if left else _mm(X, op))
    return torch.linalg.lu_solve(LU, pivots, rest, left=left, adjoint=adjoint)


# -- linear algebra: QR --------------------------------------------------------------------------------------


def _qr_checked(Q: Any, R: Any, mode: str) -> None:
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
            "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
        )
    if mode == "complete" and Q.shape[-2] > R.shape[-1]:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")


def _tall_qr_backward(gQ: Any, gR: Any, Q: Any, R: Any) -> Any:
    """A = Q R with A tall or square: (gQ + Q copyltu(M)) R^-H, M = R gR^H - gQ^H Q, copyltu making a
    Hermitian matrix of M's lower triangle."""
    M = _mm(R, gR.mH) - _mm(gQ.mH, Q)
    lower = M.tril(-1)
    hermitian = lower + lower.mH + torch.diag_embed(M.diagonal(0, -2, -1).real.to(M.dtype))
    return _solve_tri(R.mH, gQ + _mm(Q, hermitian), False, left=False)


def linalg_qr_backward(gQ: Any, gR: Any, Q: Any, R: Any, mode: str) -> Any:
    """A = Q R; for a wide A = [X | Y] (R = [U | V]), X = Q U is taken as a square QR with Q's gradient
    adding Y gV^H, and gY = Q gV."""
    if gQ is None and gR is None:
        return None
    _qr_checked(Q, R, mode)
    m, n = Q.shape[-2], R.shape[-1]
    gQ = torch.zeros_like(Q) if gQ is None else gQ
    gR = torch.zeros_like(R) if gR is None else gR
    if m >= n:
        return _tall_qr_backward(gQ, gR, Q, R)
    U, V, gU, gV = R[..., :m], R[..., m:], gR[..., :m], gR[..., m:]
    gX = _tall_qr_backward(gQ + _mm(_mm(Q, V), gV.mH), gU, Q, U)
    return torch.cat([gX, _mm(Q, gV)], -1)


def _tall_qr_jvp(dA: Any, Q: Any, R: Any) -> tuple[Any, Any]:
    """C = Q^H dA R^-1 = Q^H dQ + dR R^-1: Omega = Q^H dQ is C's skew-Hermitian lower part (with C's imaginary
    diagonal, R's diagonal being real); dR = (C - Omega) R, dQ = dA R^-1 - Q (C - Omega)."""
    dA_Rinv = _solve_tri(R, dA, True, left=False)
    C = _mm(Q.mH, dA_Rinv)
    lower = C.tril(-1)
    omega = lower - lower.mH
    if C.is_complex():
        omega = omega + torch.diag_embed(1j * C.diagonal(0, -2, -1).imag)
    upper_part = C - omega
    return dA_Rinv - _mm(Q, upper_part), _mm(upper_part, R)


def linalg_qr_jvp(dA: Any, Q: Any, R: Any, mode: str) -> Any:
    """A = Q R's tangents; for a wide A = [X | Y], X's square QR and dV = Q^H (dY - dQ V)."""
    _qr_checked(Q, R, mode)
    m, n = Q.shape[-2], R.shape[-1]
    if m >= n:
        return _tall_qr_jvp(dA, Q, R)
    dQ, dU = _tall_qr_jvp(dA[..., :m], Q, R[..., :m])
    dV = _mm(Q.mH, dA[..., m:] - _mm(dQ, R[..., m:]))
    return dQ, torch.cat([dU, dV], -1)


# -- linear algebra: LU factorization ----------------------------------------------------------------------


def _permuted(P: Any, t: Any, pivot: bool, adjoint: bool) -> Any:
    """P^T t (or P t with ``adjoint`` False), nothing without pivoting (P is then empty)."""
    if not pivot:
        return t
    return _mm(P.mT, t) if adjoint else _mm(P, t)


def linalg_lu_backward(gL: Any, gU: Any, P: Any, L: Any, U: Any, pivot: bool) -> Any:
    """A = P L U, L unit lower, both m x k or k x n: for the square part L1 U1,
    gA1 = L1^-H (tril(L1^H gL1, -1) + triu(gU1 U1^H)) U1^-H; a tall A's bottom rows L2 = A2 U^-1 and a wide
    A's right columns U2 = L^-1 A2 add their own gradients (and move gU, gL)."""
    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = torch.zeros_like(L) if gL is None else gL
    gU = torch.zeros_like(U) if gU is None else gU
    L1, U1 = L[..., :k, :], U[..., :k]
    inner_l, inner_u = _mm(L1.mH, gL[..., :k, :]), _mm(gU[..., :k], U1.mH)
    rest = None
    if m > n:  # L2 = A2 U^-1
        gL2 = gL[..., k:, :]
        inner_u = inner_u - _mm(L[..., k:, :].mH, gL2)
        rest = _solve_tri(U1.mH, gL2, False, left=False)
    elif n > m:  # U2 = L^-1 A2
        gU2 = gU[..., k:]
        inner_l = inner_l - _mm(gU2, U[..., k:].mH)
        rest = _solve_tri(L1.mH, gU2, True, unit=True)
    middle = inner_l.tril(-1) + inner_u.triu()
    gA1 = _solve_tri(U1.mH, _solve_tri(L1.mH, middle, True, unit=True), False, left=False)
    gA = gA1 if rest is None else torch.cat([gA1, rest], -2 if m > n else -1)
    return _permuted(P, gA, pivot, False)


def linalg_lu_jvp(dA: Any, P: Any, L: Any, U: Any, pivot: bool) -> Any:
    """A = P L U's tangents: with X = L1^-1 (P^T dA)_1 U1^-1, dL1 = L1 tril(X, -1), dU1 = triu(X) U1; a tall
    A's dL2 = ((P^T dA)_2 - L2 dU) U^-1, a wide A's dU2 = L^-1 ((P^T dA)_2 - dL U2)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    moved = _permuted(P, dA, pivot, True)
    L1, U1 = L[..., :k, :], U[..., :k]
    X = _solve_tri(U1, _solve_tri(L1, moved[..., :k, :k], False, unit=True), True, left=False)
    dL1, dU1 = _mm(L1, X.tril(-1)), _mm(X.triu(), U1)
    if m > n:
        dL2 = _solve_tri(U1, moved[..., k:, :] - _mm(L[..., k:, :], dU1), True, left=False)
        return torch.cat([dL1, dL2], -2), dU1
    if n > m:
        dU2 = _solve_tri(L1, moved[..., k:] - _mm(dL1, U[..., k:]), False, unit=True)
        return dL1, torch.cat([dU1, dU2], -1)
    return dL1, dU1


def lu_factor_ex_backward(grad: Any, LU: Any, pivs: Any, pivot: bool) -> Any:
    """The packed LU's gradient: L's part (strictly lower) and U's (upper), through linalg_lu's."""
    P, L, U = torch.lu_unpack(LU, pivs)
    k = min(LU.shape[-2], LU.shape[-1])
    return linalg_lu_backward(grad[..., :, :k].tril(-1), grad[..., :k, :].triu(), P, L, U, True)


def lu_factor_ex_jvp(dA: Any, LU: Any, pivs: Any, pivot: bool) -> Any:
    """The packed LU's tangent: linalg_lu's dL and dU, packed."""
    P, L, U = torch.lu_unpack(LU, pivs)
    dL, dU = linalg_lu_jvp(dA, P, L, U, True)
    return lu_unpack_backward(dL, dU, LU.shape[-2], LU.shape[-1])


# -- normalization layers' tangents --------------------------------------------------------------------------
# (batch_norm_jvp is at the end.  The crash once blamed on installing native_batch_norm's kernel was PyTorch's own
# CPU kernel: native_batch_norm in eval mode without running statistics dereferences them (SIGSEGV); its sample
# hint trains.)


def _normalized_tangent(x: Any, dx: Any, mean: Any, invstd: Any, dims: list[int]) -> Any:
    """d((x - mean) invstd) with the statistics of x over ``dims``: the mean's and invstd's tangents counted."""
    centered = x - mean
    dx_centered = dx - dx.mean(dims, True)
    return dx_centered * invstd - centered * invstd.pow(3) * (centered * dx).mean(dims, True)


def _affine_tangent(x_hat: Any, dx_hat: Any, w: Any, dw: Any, db: Any) -> Any:
    """d(x_hat w + b)."""
    out = dx_hat if w is None else dx_hat * w
    if dw is not None:
        out = out + x_hat * dw
    return out if db is None else out + db


def layer_norm_jvp(
    input_p: Any, input_t: Any, weight_p: Any, weight_t: Any, bias_p: Any, bias_t: Any, saved_mean: Any,
    saved_invstd: Any, normalized_shape: Any,
) -> Any:  # fmt: skip
    """Layer norm's tangent: statistics over the last len(normalized_shape) dimensions, their tangents
    counted."""
    dims = list(range(input_p.dim() - len(normalized_shape), input_p.dim()))
    kept = list(input_p.shape[: input_p.dim() - len(normalized_shape)]) + [1] * len(normalized_shape)
    mean, invstd = saved_mean.reshape(kept), saved_invstd.reshape(kept)
    x_hat = (input_p - mean) * invstd
    dx_hat = _normalized_tangent(input_p, input_t, mean, invstd, dims)
    return _affine_tangent(x_hat, dx_hat, weight_p, weight_t, bias_t)


# -- shapes, losses and transforms whose backward is a closed form ------------------------------------------


def permute_backwards(grad: Any, dims: Any) -> Any:
    """permute moves axis dims[i] to i: its gradient moves it back (the inverse permutation)."""
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d % len(dims)] = i
    return grad.permute(inverse)


def _glu_halves(self: Any, dim: int) -> tuple[Any, Any, Any]:
    a, b = self.chunk(2, dim)
    return a, b, torch.sigmoid(b)


def glu_double_backward_grad_output(grad: Any, self: Any, dim: int) -> Any:
    """glu_backward is glu's Jᵀ applied to grad_output (linear in it): its gradient there is glu's J applied
    to ``grad``: d(a sig(b)) = da sig(b) + a sig(b) (1 - sig(b)) db."""
    a, _, s = _glu_halves(self, dim)
    da, db = grad.chunk(2, dim)
    return da * s + a * s * (1 - s) * db


def glu_double_backward(grad: Any, grad_output: Any, self: Any, dim: int) -> Any:
    """<glu_backward(go, x), grad> = <ga, go sig(b)> + <gb, go a sig(b)(1 - sig(b))> differentiated in x = (a, b)."""
    a, _, s = _glu_halves(self, dim)
    ga, gb = grad.chunk(2, dim)
    ds = s * (1 - s)
    return torch.cat([gb * grad_output * ds, ga * grad_output * ds + gb * grad_output * a * ds * (1 - 2 * s)], dim)


def soft_margin_loss_double_backward_grad_output(
    grad: Any, grad_output: Any, self: Any, target: Any, reduction: int
) -> Any:
    """log(1 + exp(-y x)) has x-derivative -y sig(-y x); the backward is that times grad_output (linear in
    it): ``grad`` times it, the shape of ``self`` (autograd sums it to a reduced loss's 0-dim grad_output, and
    the forward formula passes grad_output's tangent as ``grad``)."""
    return _mean_of(grad * -target * torch.sigmoid(-target * self), self, reduction)


def soft_margin_loss_double_backward(grad: Any, self: Any, target: Any, reduction: int) -> Any:
    """(-y sig(-y x))' = y² sig(-y x)(1 - sig(-y x))."""
    s = torch.sigmoid(-target * self)
    return _mean_of(grad * target * target * s * (1 - s), self, reduction)


def _weighted(value: Any, weight: Any) -> Any:
    return value if weight is None else value * weight


def binary_cross_entropy_double_backward_grad_output(
    grad: Any, self: Any, target: Any, weight: Any, reduction: int
) -> Any:
    """-w (t log x + (1 - t) log(1 - x)) has x-derivative w (x - t) / (x (1 - x)); the backward is that
    times grad_output (linear in it; ``self``-shaped, as soft_margin_loss's)."""
    value = _weighted(grad * (self - target) / (self * (1 - self)), weight)
    return _mean_of(value, self, reduction)


def binary_cross_entropy_double_backward(
    grad_output: Any, grad: Any, self: Any, target: Any, weight: Any, reduction: int
) -> Any:
    """((x - t) / (x (1 - x)))' = (x² - 2 t x + t) / (x (1 - x))²."""
    denominator = self * (1 - self)
    value = _weighted(grad_output * grad * (self * self - 2 * target * self + target) / (denominator * denominator),
                      weight)  # fmt: skip
    return _mean_of(value, self, reduction)


def binary_cross_entropy_double_backward_target(
    grad: Any, grad_output: Any, self: Any, target: Any, weight: Any, reduction: int
) -> Any:
    """((x - t) / (x (1 - x))) differentiated in t: -1 / (x (1 - x))."""
    value = _weighted(-grad * grad_output / (self * (1 - self)), weight)
    return _mean_of(value, self, reduction)


def binary_cross_entropy_with_logits_backward(
    grad: Any, self: Any, target: Any, weight: Any, pos_weight: Any, reduction: int
) -> Any:
    """-w (p t log sig(x) + (1 - t) log(1 - sig(x))) differentiated in x: w (sig(x) (p t + 1 - t) - p t)."""
    s = torch.sigmoid(self)
    weighted_target = target if pos_weight is None else pos_weight * target
    value = _weighted(grad * (s * (weighted_target + 1 - target) - weighted_target), weight)
    return _mean_of(value, self, reduction)


def binary_cross_entropy_with_logits_target_backward(
    grad: Any, self: Any, target: Any, weight: Any, pos_weight: Any, reduction: int
) -> Any:
    """The same loss differentiated in t: w (log(1 - sig(x)) - p log sig(x))."""
    if pos_weight is None:
        value = -self
    else:
        value = torch.nn.functional.logsigmoid(-self) - pos_weight * torch.nn.functional.logsigmoid(self)
    return _mean_of(_weighted(grad * value, weight), self, reduction)


def _euclidean_dist_backward(grad: Any, x1: Any, x2: Any, res: Any) -> tuple[Any, Any]:
    """res_ij = |x1_i - x2_j|: d res_ij / d x1_i = (x1_i - x2_j) / res_ij (zero where res_ij is)."""
    ratio = torch.where(res == 0, torch.zeros_like(grad), grad / torch.where(res == 0, torch.ones_like(res), res))
    g1 = ratio.sum(-1, keepdim=True) * x1 - _mm(ratio, x2)
    g2 = ratio.sum(-2).unsqueeze(-1) * x2 - _mm(ratio.transpose(-2, -1), x1)
    return g1, g2


def embedding_dense_double_backward_symint(grad: Any, indices: Any, padding_idx: int) -> Any:
    """embedding_dense_backward sums grad_output's rows into the weight rows indices name (linear in it):
    its gradient there reads those rows back, zero for the padding index."""
    rows = grad.index_select(0, indices.reshape(-1)).reshape(*indices.shape, grad.shape[-1])
    if padding_idx >= 0:
        rows = rows * (indices != padding_idx).unsqueeze(-1).to(rows.dtype)
    return rows


def fft_r2c_backward(grad: Any, dim: Any, normalization: int, onesided: bool, last_dim_size: int) -> Any:
    """r2c is c2c of a real input (one-sided: its first half along dim[-1]): the gradient is the real part
    of c2c's adjoint (the inverse direction, same normalization) of the spectrum padded back with zeros."""
    if onesided:
        last = dim[-1]
        missing = last_dim_size - grad.shape[last]
        zeros_shape = list(grad.shape)
        zeros_shape[last] = missing
        grad = torch.cat([grad, grad.new_zeros(zeros_shape)], last)
    return torch.real(torch.ops.aten._fft_c2c(grad, dim, normalization, False))


def fft_c2r_backward(grad: Any, dim: Any, normalization: int) -> Any:
    """c2r reads a one-sided spectrum as the full Hermitian one: the adjoint is r2c's one-sided result with
    each bin that stands for two bins of the full spectrum (not the first, nor the Nyquist one) counted twice."""
    result = torch.ops.aten._fft_r2c(grad, dim, normalization, True)
    last = dim[-1]
    half = result.shape[last]
    doubled = grad.shape[last] - half
    scale = torch.ones(half, dtype=grad.dtype, device=grad.device)
    if doubled > 0:
        scale[1 : 1 + doubled] = 2
    shape = [1] * result.dim()
    shape[last] = half
    return result * scale.reshape(shape)


def convolution_jvp(
    input_p: Any, input_t: Any, weight_p: Any, weight_t: Any, bias_p: Any, bias_t: Any, stride: Any, padding: Any,
    dilation: Any, transposed: bool, output_padding: Any, groups: int,
) -> Any:  # fmt: skip
    """The convolution is bilinear in (input, weight) and affine in bias: d = conv(dx, w) + conv(x, dw) + db."""

    def conv(x: Any, w: Any, b: Any) -> Any:
        return torch.ops.aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)

    return conv(input_t, weight_p, None) + conv(input_p, weight_t, bias_t)


def _convolution_jvp(
    input_p: Any, input_t: Any, weight_p: Any, weight_t: Any, bias_p: Any, bias_t: Any, stride: Any, padding: Any,
    dilation: Any, transposed: bool, output_padding: Any, groups: int, benchmark: bool, deterministic: bool,
    cudnn_enabled: bool, allow_tf32: bool,
) -> Any:  # fmt: skip
    """_convolution's tangent: convolution's (the backend flags do not change the value)."""
    return convolution_jvp(input_p, input_t, weight_p, weight_t, bias_p, bias_t, stride, padding, dilation,
                           transposed, output_padding, groups)  # fmt: skip


def convolution_backward_jvp_grad_bias(grad_output_t: Any, grad_bias: Any) -> Any:
    """The bias gradient sums grad_output over every dimension but the channels' (linear in it)."""
    if grad_bias is None:
        return None
    return grad_output_t.sum([0, *range(2, grad_output_t.dim())])


# -- tensor lists: cat, stack, block_diag ---------------------------------------------------------------------


def to_args_sizes(tensors: Any) -> list[list[int]]:
    return [list(t.shape) for t in tensors]


def to_args_sizes_symint(tensors: Any) -> list[list[int]]:
    return to_args_sizes(tensors)


def to_args_scalartypes(tensors: Any) -> list[Any]:
    return [t.dtype for t in tensors]


def _as_input_dtype(grad: Any, dtype: Any) -> Any:
    """A real input's part of a complex gradient: its real part (the gradient of a real-to-complex promotion)."""
    return torch.real(grad) if grad.is_complex() and not dtype.is_complex else grad


def cat_tensors_backward(grad: Any, sizes: Any, dtypes: Any, dim: int) -> Any:
    """cat's gradient: each input's slice of ``grad`` along ``dim``.  A 1-d empty input (which cat skips,
    whatever ``dim``) gets an empty gradient; ``dim`` wraps by the first other input's rank."""
    if grad is None:
        return [None] * len(sizes)
    ranked = next((s for s in sizes if s != [0]), sizes[0])
    dim = dim % max(len(ranked), 1)
    found, start = [], 0
    for size, dtype in zip(sizes, dtypes, strict=True):
        if size == [0]:
            found.append(_as_input_dtype(grad.new_zeros([0]), dtype))
            continue
        found.append(_as_input_dtype(grad.narrow(dim, start, size[dim]), dtype))
        start += size[dim]
    return found


def cat_jvp(tangents: Any, dim: int) -> Any:
    """cat is linear: its tangent is the tangents concatenated (``TANGENT_READERS``: given the tangents)."""
    return torch.cat(tangents, dim)


def stack_tensors_backward(grad: Any, dim: int, dtypes: Any) -> Any:
    """stack's gradient: ``grad`` unbound along the new dimension."""
    if grad is None:
        return [None] * len(dtypes)
    return [_as_input_dtype(g, dtype) for g, dtype in zip(grad.unbind(dim), dtypes, strict=True)]


def stack_jvp(tangents: Any, dim: int) -> Any:
    return torch.stack(tangents, dim)


def block_diag_backward(grad: Any, sizes: Any, dtypes: Any) -> Any:
    """block_diag's gradient: each input's diagonal block of ``grad`` (a 1-d input is one row, a 0-d one 1x1)."""
    if grad is None:
        return [None] * len(sizes)
    found, row, col = [], 0, 0
    for size, dtype in zip(sizes, dtypes, strict=True):
        rows, cols = (1, 1) if len(size) == 0 else (1, size[0]) if len(size) == 1 else (size[0], size[1])
        block = grad[row : row + rows, col : col + cols].reshape(size)
        found.append(_as_input_dtype(block, dtype))
        row, col = row + rows, col + cols
    return found


def block_diag_jvp(tangents: Any) -> Any:
    return torch.ops.aten.block_diag(list(tangents))


def batch_norm_jvp(
    input_p: Any, input_t: Any, weight_p: Any, weight_t: Any, bias_p: Any, bias_t: Any, running_mean: Any,
    running_var: Any, saved_mean: Any, saved_invstd: Any, train: bool, eps: float,
) -> Any:  # fmt: skip
    """Batch norm's tangent.  With the batch's statistics (training, or no running ones): over every dimension
    but the channels', their tangents counted; with the running ones: constants."""
    dims = [0, *range(2, input_p.dim())]
    shape = [1, -1] + [1] * (input_p.dim() - 2)

    def channels(t: Any) -> Any:
        return None if t is None else t.reshape(shape)

    if train or running_mean is None:
        mean, invstd = channels(saved_mean), channels(saved_invstd)
        dx_hat = _normalized_tangent(input_p, input_t, mean, invstd, dims)
    else:
        mean, invstd = channels(running_mean), channels((running_var + eps).rsqrt())
        dx_hat = input_t * invstd
    x_hat = (input_p - mean) * invstd
    return _affine_tangent(x_hat, dx_hat, channels(weight_p), channels(weight_t), channels(bias_t))


# -- Householder products (linalg_householder_product, ormqr) and least squares ------------------------------
# The backward helpers differentiate a composite of the op written in differentiable torch ops (products
# through elementwise multiplications and sums, the QR reflectors one at a time) with torch.autograd.grad,
# graph kept: their own double backward and forward-over-reverse go through it.


def _reflector(input: Any, i: int) -> Any:
    """The i-th Householder vector: input's column i below the diagonal, 1 on it, 0 above."""
    column = input[..., :, i]
    rows = torch.arange(input.shape[-2], device=input.device)
    return torch.where(rows > i, column, (rows == i).to(input.dtype))


def _reflect(x: Any, v: Any, tau: Any) -> Any:
    """(I - tau v v^H) x, x of shape (..., m, c), v (..., m), tau (...)."""
    vh_x = (v.conj().unsqueeze(-1) * x).sum(-2)
    return x - tau.unsqueeze(-1).unsqueeze(-1) * v.unsqueeze(-1) * vh_x.unsqueeze(-2)


def _householder_apply(input: Any, tau: Any, x: Any) -> Any:
    """H_1 H_2 ... H_k x, H_i = I - tau_i v_i v_i^H (the reflectors of a QR factorization)."""
    for i in reversed(range(tau.shape[-1])):
        x = _reflect(x, _reflector(input, i), tau[..., i])
    return x


def _eye_like(input: Any, m: int, n: int) -> Any:
    eye = torch.eye(m, n, dtype=input.dtype, device=input.device)
    return eye.expand(*input.shape[:-2], m, n)


def _vjp_of(fn: Any, inputs: tuple[Any, ...], grads: tuple[Any, ...]) -> tuple[Any, ...]:
    """fn's vector-Jacobian product at ``inputs`` (each gradient the shape of its input, zeros when unused)."""
    with torch.enable_grad():
        xs = tuple(x if x.requires_grad else x.detach().requires_grad_(True) for x in inputs)
        outs = fn(*xs)
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True) if g is not None]
        if not pairs:
            return tuple(torch.zeros_like(x) for x in inputs)
        found = torch.autograd.grad([o for o, _ in pairs], xs, [g for _, g in pairs], create_graph=True,
                                    allow_unused=True)  # fmt: skip
    return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(found, inputs, strict=True))


def householder_product_backward(grad: Any, result: Any, input: Any, tau: Any) -> tuple[Any, Any]:
    """linalg_householder_product's gradient: the composite H_1 ... H_k I[:, :n] differentiated."""
    m, n = input.shape[-2:]
    return _vjp_of(lambda a, t: (_householder_apply(a, t, _eye_like(a, m, n)),), (input, tau), (grad,))


def householder_product_jvp(dV: Any, dtau: Any, result: Any, V: Any, tau: Any) -> Any:
    """Its tangent, the product rule through the reflections one by one: d((I - t v v^H) x) =
    dx - dt v (v^H x) - t dv (v^H x) - t v (dv^H x) - t v (v^H dx)."""
    m, n = V.shape[-2:]
    x = _eye_like(V, m, n)
    dx = torch.zeros_like(x)
    for i in reversed(range(tau.shape[-1])):
        v, dv = _reflector(V, i), _reflector(dV, i) - (torch.arange(m, device=V.device) == i).to(V.dtype)
        t, dt = tau[..., i].unsqueeze(-1).unsqueeze(-1), dtau[..., i].unsqueeze(-1).unsqueeze(-1)
        vh_x = (v.conj().unsqueeze(-1) * x).sum(-2).unsqueeze(-2)
        d_vh_x = (dv.conj().unsqueeze(-1) * x).sum(-2).unsqueeze(-2) + (v.conj().unsqueeze(-1) * dx).sum(-2).unsqueeze(
            -2
        )
        dx = dx - dt * v.unsqueeze(-1) * vh_x - t * dv.unsqueeze(-1) * vh_x - t * v.unsqueeze(-1) * d_vh_x
        x = x - t * v.unsqueeze(-1) * vh_x
    return dx


def _ormqr(self: Any, input2: Any, input3: Any, left: bool, transpose: bool) -> Any:
    """op(Q) input3 (or input3 op(Q)), Q the product of the reflectors ``self`` holds with factors ``input2``."""
    m = self.shape[-2]
    q = _householder_apply(self, input2, _eye_like(self, m, m))
    q = q.mH if transpose else q
    return _mm(q, input3) if left else _mm(input3, q)


def ormqr_backward(
    grad: Any, result: Any, self: Any, input2: Any, input3: Any, left: bool, transpose: bool, output_mask: Any
) -> tuple[Any, ...]:
    """ormqr's gradient: its composite (``_ormqr``) differentiated."""
    found = _vjp_of(lambda s, a, t: (_ormqr(s, a, t, left, transpose),), (self, input2, input3), (grad,))
    return tuple(g if wanted else None for g, wanted in zip(found, output_mask, strict=True))


def _full_rank_pinv(A: Any) -> Any:
    """A's pseudo-inverse for a full-rank A: (A^H A)^-1 A^H (tall), A^H (A A^H)^-1 (wide), through solve."""
    if A.shape[-2] >= A.shape[-1]:
        return torch.linalg.solve(_mm(A.mH, A), A.mH)
    return torch.linalg.solve(_mm(A, A.mH), A).mH


def _lstsq_parts(A: Any, B: Any, residuals: bool) -> tuple[Any, ...]:
    """(the minimum-norm least-squares solution, with residuals: the squared residual of each column)."""
    X = _mm(_full_rank_pinv(A), B)
    if not residuals:
        return (X,)
    R = _mm(A, X) - B
    return X, (R.conj() * R).real.sum(-2)


def linalg_lstsq_backward(gX: Any, gL: Any, A: Any, B: Any, X: Any, output_mask: Any) -> tuple[Any, ...]:
    """linalg_lstsq's gradient (full-rank A): its composite (``_lstsq_parts``) differentiated."""
    residuals = gL is not None and gL.numel() > 0
    grads = (gX, gL) if residuals else (gX,)
    found = _vjp_of(lambda a, b: _lstsq_parts(a, b, residuals), (A, B), grads)
    return tuple(g if wanted else None for g, wanted in zip(found, output_mask, strict=True))


def linalg_lstsq_solution_jvp(A: Any, B: Any, dA: Any, dB: Any) -> Any:
    """d(A^+ B), with the pseudo-inverse's differential at constant rank:
    dA^+ = -A^+ dA A^+ + A^+ A^+^H dA^H (I - A A^+) + (I - A^+ A) dA^H A^+^H A^+."""
    P = _full_rank_pinv(A)
    m, n = A.shape[-2:]
    left = _eye_like(A, m, m) - _mm(A, P)
    right = _eye_like(A, n, n) - _mm(P, A)
    dP = -_mm(_mm(P, dA), P) + _mm(_mm(_mm(P, P.mH), dA.mH), left) + _mm(_mm(_mm(right, dA.mH), P.mH), P)
    return _mm(dP, B) + _mm(P, dB)


def linalg_lstsq_residuals_jvp(A: Any, B: Any, dA: Any, dB: Any, X: Any, L: Any) -> Any:
    """d(sum over rows of |A X - B|^2) = 2 Re sum(conj(R) (dA X + A dX - dB)); empty residuals: empty."""
    if L.numel() == 0:
        return torch.zeros_like(L)
    R = _mm(A, X) - B
    dR = _mm(dA, X) + _mm(A, linalg_lstsq_solution_jvp(A, B, dA, dB)) - dB
    return 2 * (R.conj() * dR).real.sum(-2)


def _batch_norm_composite(x: Any, gamma: Any, mean_var: tuple[Any, Any] | None, eps: float) -> Any:
    """(x - mean) / sqrt(var + eps) * gamma over every dimension but the channels': the batch's statistics
    (``mean_var`` None, biased variance), else the running ones."""
    dims = [0, *range(2, x.dim())]
    shape = [1, -1] + [1] * (x.dim() - 2)
    if mean_var is None:
        mean = x.mean(dims, keepdim=True)
        var = ((x - mean) * (x - mean)).mean(dims, keepdim=True)
    else:
        mean, var = mean_var[0].reshape(shape), mean_var[1].reshape(shape)
    x_hat = (x - mean) * (var + eps).rsqrt()
    return x_hat if gamma is None else x_hat * gamma.reshape(shape)


def batchnorm_double_backward(
    input: Any, gamma: Any, ggI: Any, ggG: Any, ggB: Any, gO: Any, running_mean: Any, running_var: Any, train: bool,
    eps: float, save_mean: Any, save_invstd: Any, output_mask: Any,
) -> tuple[Any, ...]:  # fmt: skip
    """Batch norm's backward differentiated in (input, weight, grad_out) at (ggI, ggG, ggB): the vector-Jacobian
    product of that backward (the composite's, ``_batch_norm_composite``, and the bias's channel sums of gO).

    The gradients given are the cotangents of one ``torch.autograd.grad`` of the backward's (unbatched) values:
    gradcheck's batched double backward vmaps them, and autograd refuses an output batched by a vmap."""
    stats = None if train or running_mean is None else (running_mean, running_var)
    dims = [0, *range(2, input.dim())]

    def backward(x: Any, g: Any, go: Any) -> tuple[Any, Any, Any]:
        if g is None:
            (gI,) = _vjp_of(lambda a: (_batch_norm_composite(a, None, stats, eps),), (x,), (go,))
            return gI, None, go.sum(dims)
        gI, gG = _vjp_of(lambda a, b: (_batch_norm_composite(a, b, stats, eps),), (x, g), (go,))
        return gI, gG, go.sum(dims)

    if gamma is None:
        gI, ggO = _vjp_of(lambda x, go: _no_weight(backward(x, None, go)), (input, gO), (ggI, ggB))
        found = (gI, None, ggO)
    else:
        found = _vjp_of(backward, (input, gamma, gO), (ggI, ggG, ggB))
    return tuple(g if wanted else None for g, wanted in zip(found, output_mask, strict=True))


def _no_weight(grads: tuple[Any, Any, Any]) -> tuple[Any, Any]:
    """A weightless batch norm's backward values: the input's and the bias's (there is no weight's)."""
    return grads[0], grads[2]


# -- _trilinear (bilinear's kernel) ----------------------------------------------------------------------------


def wrap_opt_if(t: Any, cond: bool) -> Any:
    """``t`` when ``cond`` (the tensor a backward formula needs), else None (undefined)."""
    return t if cond else None


def _trilinear_value(i1: Any, i2: Any, i3: Any, expand1: Any, expand2: Any, expand3: Any, sumdim: Any) -> Any:
    """Each input with size-1 dimensions inserted at its ``expand`` positions, the three multiplied, summed over
    ``sumdim``."""

    def expanded(t: Any, where: Any) -> Any:
        for d in sorted(where):
            t = t.unsqueeze(d)
        return t

    product = expanded(i1, expand1) * expanded(i2, expand2) * expanded(i3, expand3)
    return product.sum(list(sumdim)) if len(sumdim) else product


def _trilinear_backward(
    grad: Any, i1: Any, i2: Any, i3: Any, expand1: Any, expand2: Any, expand3: Any, sumdim: Any, grad_mask: Any
) -> tuple[Any, Any, Any]:
    """The form is linear in each input: the gradient of one is the same form of grad and the other two, the
    roles of its expanded and summed dimensions exchanged (grad expanded where the output was summed, the
    result summed where that input was expanded)."""
    if grad is None:
        return None, None, None
    g1 = _trilinear_value(grad, i2, i3, sumdim, expand2, expand3, expand1) if grad_mask[0] else None
    g2 = _trilinear_value(i1, grad, i3, expand1, sumdim, expand3, expand2) if grad_mask[1] else None
    g3 = _trilinear_value(i1, i2, grad, expand1, expand2, sumdim, expand3) if grad_mask[2] else None
    return g1, g2, g3


# -- scatter_reduce / index_reduce ----------------------------------------------------------------------------


def _reduce_partials(
    self: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool, result: Any
) -> tuple[Any, Any]:
    """d result / d self and d result / d src, element by element (src's scattered to where ``index`` sends it):
    1 for sum, 1 / count for mean, the tied extrema's share for amax / amin, the product of the others for prod.
    A place no src reaches keeps self whatever ``include_self``."""
    reached = torch.zeros_like(self).scatter_add(dim, index, torch.ones_like(src)) > 0
    from_self = (~reached) | include_self
    w_self = from_self.to(self.dtype)
    if reduce == "sum":
        return w_self, torch.ones_like(src)
    if reduce == "mean":
        count = w_self.scatter_add(dim, index, torch.ones_like(src))
        return w_self / count, (1 / count).gather(dim, index)
    if reduce in ("amax", "amin"):
        self_is = (self == result) & from_self
        src_is = src == result.gather(dim, index)
        ties = self_is.to(self.dtype).scatter_add(dim, index, src_is.to(src.dtype))
        return self_is / ties, src_is / ties.gather(dim, index)
    if reduce != "prod":
        raise ValueError(f"reduce must be sum, prod, mean, amax or amin, not {reduce!r}")
    zeros = (self == 0).logical_and(from_self).to(self.dtype).scatter_add(dim, index, (src == 0).to(src.dtype))
    one_self = torch.where((self == 0) | ~from_self, torch.ones_like(self), self)
    nonzero = one_self.scatter_reduce(dim, index, torch.where(src == 0, torch.ones_like(src), src), "prod")

    def others(x: Any, total: Any, zero_count: Any) -> Any:
        """The product of the group's other elements: result / x, or for a zero the others' (0 past one zero)."""
        safe = torch.where(x == 0, torch.ones_like(x), x)
        return torch.where(x == 0, torch.where(zero_count == 1, total, torch.zeros_like(total)), result_at(x) / safe)

    def result_at(x: Any) -> Any:
        return result if x is self else result.gather(dim, index)

    w_self_prod = others(self, nonzero, zeros) * w_self
    return w_self_prod, others(src, nonzero.gather(dim, index), zeros.gather(dim, index))


def scatter_reduce_backward(
    grad: Any, self: Any, dim: int, index: Any, src: Any, reduce: str, include_self: bool, result: Any
) -> tuple[Any, Any]:
    w_self, w_src = _reduce_partials(self, dim, index, src, reduce, include_self, result)
    return grad * w_self, grad.gather(dim, index) * w_src


def scatter_reduce_jvp(
    self_p: Any, self_t: Any, dim: int, index: Any, src_p: Any, src_t: Any, reduce: str, include_self: bool,
    result: Any,
) -> Any:  # fmt: skip
    w_self, w_src = _reduce_partials(self_p, dim, index, src_p, reduce, include_self, result)
    return (self_t * w_self).scatter_add(dim, index, src_t * w_src)


def index_reduce_backward(
    grad: Any, self: Any, dim: int, index: Any, source: Any, reduce: str, include_self: bool, result: Any
) -> tuple[Any, Any]:
    """index_reduce is scatter_reduce with the index along ``dim`` spread over source's other dimensions."""
    if source.dim() == 0:  # a 0-dim self and source: one element, its index 0
        return scatter_reduce_backward(grad, self, 0, index.reshape(()), source, reduce, include_self, result)
    shape = [1] * source.dim()
    shape[dim % source.dim()] = -1
    spread = index.reshape(shape).expand(source.shape)
    return scatter_reduce_backward(grad, self, dim, spread, source, reduce, include_self, result)


# -- group norm -------------------------------------------------------------------------------------------------


def _grouped(x: Any, group: int) -> Any:
    """(N, C, *) as (N, group, C / group * the rest): the elements each group's statistics are over."""
    return x.reshape(x.shape[0], group, -1)


def _group_norm_composite(X: Any, gamma: Any, group: int, eps: float) -> tuple[Any, Any, Any]:
    """(Y, mean, rstd) of native_group_norm without its bias: statistics per (sample, group), biased variance."""
    grouped = _grouped(X, group)
    mean = grouped.mean(-1)
    centered = grouped - mean.unsqueeze(-1)
    rstd = ((centered * centered).mean(-1) + eps).rsqrt()
    Y = (centered * rstd.unsqueeze(-1)).reshape(X.shape)
    if gamma is not None:
        Y = Y * gamma.reshape(1, -1, *([1] * (X.dim() - 2)))
    return Y, mean, rstd


def infinitely_differentiable_native_group_norm_backward(
    dY: Any, dmean: Any, drstd: Any, X: Any, mean: Any, rstd: Any, gamma: Any, N: int, C: int, HxW: int, group: int,
    eps: float, grad_input_mask: Any,
) -> tuple[Any, ...]:  # fmt: skip
    """native_group_norm's gradient (its three outputs' gradients, each may be undefined): the composite's
    differentiated; the bias's is dY summed over every dimension but the channels'."""
    if gamma is None:
        (dX,) = _vjp_of(lambda x: _group_norm_composite(x, None, group, eps), (X,), (dY, dmean, drstd))
        dgamma = None
    else:
        dX, dgamma = _vjp_of(lambda x, g: _group_norm_composite(x, g, group, eps), (X, gamma), (dY, dmean, drstd))
    dbeta = None if dY is None else dY.reshape(N, C, -1).sum([0, 2])
    return tuple(g if wanted else None for g, wanted in zip((dX, dgamma, dbeta), grad_input_mask, strict=True))


def group_norm_mean_jvp(X_t: Any, mean: Any, group: int) -> Any:
    return _grouped(X_t, group).mean(-1)


def group_norm_invstd_jvp(X_p: Any, X_t: Any, mean: Any, rstd: Any, group: int) -> Any:
    """d (var + eps)^-1/2 = -rstd^3 mean((X - mean) dX) (the mean's own tangent sums to zero against X - mean)."""
    centered = _grouped(X_p, group) - mean.unsqueeze(-1)
    return -rstd.pow(3) * (centered * _grouped(X_t, group)).mean(-1)


def group_norm_jvp(
    X_p: Any, X_t: Any, gamma_p: Any, gamma_t: Any, beta_p: Any, beta_t: Any, mean: Any, rstd: Any, group: int
) -> Any:
    """Y's tangent: the normalized input's (its statistics' tangents counted), then the affine map's."""
    grouped, tangent = _grouped(X_p, group), _grouped(X_t, group)
    centered = grouped - mean.unsqueeze(-1)
    d_mean, d_rstd = group_norm_mean_jvp(X_t, mean, group), group_norm_invstd_jvp(X_p, X_t, mean, rstd, group)
    x_hat = (centered * rstd.unsqueeze(-1)).reshape(X_p.shape)
    dx_hat = ((tangent - d_mean.unsqueeze(-1)) * rstd.unsqueeze(-1) + centered * d_rstd.unsqueeze(-1)).reshape(
        X_p.shape
    )
    shape = [1, -1] + [1] * (X_p.dim() - 2)

    def channels(t: Any) -> Any:
        return None if t is None else t.reshape(shape)

    return _affine_tangent(x_hat, dx_hat, channels(gamma_p), channels(gamma_t), channels(beta_t))


# -- as_strided --------------------------------------------------------------------------------------------------


def TensorGeometry(t: Any) -> tuple[list[int], list[int], int]:  # PyTorch's name
    """A tensor's place in its storage: (sizes, strides, storage offset)."""
    return list(t.shape), list(t.stride()), int(t.storage_offset())


def _storage_positions(sizes: Any, strides: Any, offset: int) -> Any:
    """The storage index of each element of a tensor of that geometry (shaped like it)."""
    positions = torch.tensor(int(offset))
    for size, stride in zip(sizes, strides, strict=True):
        positions = positions.unsqueeze(-1) + torch.arange(int(size)) * int(stride)
    return positions


def as_strided_backward(grad: Any, input_geometry: Any, sizes: Any, strides: Any, storage_offset: Any) -> Any:
    """as_strided reads the input's storage at the given geometry: its gradient adds grad into that storage
    (an element read twice gets both), then reads it back at the input's own geometry (an input element sharing
    its storage place with k others gets a k-th of it)."""
    in_sizes, in_strides, in_offset = input_geometry
    offset = in_offset if storage_offset is None else int(storage_offset)
    read, own = _storage_positions(sizes, strides, offset), _storage_positions(in_sizes, in_strides, in_offset)
    if own.numel() == 0:
        return grad.new_zeros(in_sizes)
    extent = int(max(own.max(), read.max() if read.numel() else 0)) + 1
    storage = grad.new_zeros(extent).index_add(0, read.reshape(-1), grad.reshape(-1))
    shared = torch.zeros(extent, dtype=torch.int64).index_add(0, own.reshape(-1), torch.ones_like(own.reshape(-1)))
    storage = storage / shared.clamp(min=1).to(storage.real.dtype)
    return storage.index_select(0, own.reshape(-1)).reshape(in_sizes)


def _convolution_double_backward_symint(
    ggI: Any, ggW: Any, ggb: Any, gO: Any, weight: Any, self: Any, stride: Any, padding: Any, dilation: Any,
    transposed: bool, output_padding: Any, groups: int, output_mask: Any,
) -> tuple[Any, ...]:  # fmt: skip
    """convolution_backward differentiated in (grad_output, input, weight), given its outputs' gradients.  The
    backward is bilinear: its input gradient is linear in (grad_output, weight), its weight gradient in
    (grad_output, input), its bias gradient in grad_output.  So grad_output's is the convolution of those
    gradients (conv(ggI, w) + conv(x, ggW) + ggb), input's the input gradient with ggW as the weight, weight's
    the weight gradient with ggI as the input."""
    conv = (stride, padding, dilation, transposed, output_padding, groups)
    g_out = g_in = g_w = None
    if output_mask[0]:
        parts = [torch.ops.aten.convolution(t, w, None, *conv) for t, w in ((ggI, weight), (self, ggW)) if
                 t is not None and w is not None]  # fmt: skip
        if ggb is not None:
            parts.append(ggb.reshape(1, -1, *([1] * (gO.dim() - 2))).expand_as(gO))
        g_out = sum(parts[1:], parts[0]) if parts else torch.zeros_like(gO)
    if output_mask[1] and ggW is not None:
        g_in = torch.ops.aten.convolution_backward(gO, self, ggW, None, *conv, [True, False, False])[0]
    if output_mask[2] and ggI is not None:
        g_w = torch.ops.aten.convolution_backward(gO, ggI, weight, None, *conv, [False, True, False])[1]
    return g_out, g_in, g_w
