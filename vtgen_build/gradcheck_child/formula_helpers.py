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
    "amaxamin_jvp",
    "aminmax_backward",
    "aminmax_jvp",
    "angle_backward",
    "apply_loss_reduction",
    "atan2_backward",
    "binary_cross_entropy_target_backward",
    "clamp_backward",
    "clamp_backward_min_max",
    "clamp_jvp",
    "constant_pad_nd_backward",
    "copysign_tensor_self_backward",
    "cumprod_jvp",
    "cumsum_backward",
    "deg2rad_backward",
    "elu_double_backward",
    "evenly_distribute_backward",
    "evenly_read_jvp",
    "gather_with_keepdimed_indices",
    "gelu_double_backward",
    "huber_loss_double_backward",
    "huber_loss_double_backward_grad_output",
    "i1_backward",
    "i1e_backward",
    "index_backward",
    "infinitely_differentiable_logit_backward",
    "infinitely_differentiable_mish_backward",
    "infinitely_differentiable_native_dropout_backward",
    "infinitely_differentiable_silu_backward",
    "linalg_vector_norm_backward",
    "linalg_vector_norm_jvp",
    "log1p_backward",
    "log_sigmoid_double_backward",
    "logcumsumexp_backward",
    "logcumsumexp_jvp",
    "logsumexp_backward",
    "logsumexp_jvp",
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
    "polar_backward",
    "pow_backward",
    "pow_backward_exponent",
    "pow_backward_self",
    "prod_backward",
    "rad2deg_backward",
    "repeat_backward",
    "restore_reduced_dims",
    "safe_logsumexp_jvp",
    "scale_grad_by_count",
    "sgn_backward",
    "sinc_backward",
    "slice_backward_wrapper",
    "smooth_l1_loss_double_backward",
    "softmax_double_backward",
    "softplus_double_backward",
    "split_backward",
    "split_with_sizes_backward",
    "sum_backward",
    "take_backward",
    "unbind_backward",
    "unsqueeze_to",
    "value_selecting_reduction_backward_symint",
    "warn_backwards",
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
