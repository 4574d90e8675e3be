"""Python equivalents of some helpers PyTorch's formulas call (``torch::autograd::generated::details``).

The Python tier's translated modules import this one as their formulas module (``_formulas``); the
parent reads its public function names with ``ast`` (``python_tier.helper_names``), never imports it.
Each is written from the derivative it computes, not from PyTorch's source, and is held equal to the
installed torch's compiled helper on samples (the ``agree`` check: tests/test_python_tier.py runs an
entry calling each through both and compares the gradients).  A helper not here leaves its entries to
the compiled tier.  Standalone: stdlib and torch only (imported inside the child).
"""

from __future__ import annotations

import math
from typing import Any

import torch

__all__ = [
    "apply_loss_reduction",
    "atan2_backward",
    "clamp_backward",
    "copysign_tensor_self_backward",
    "cumsum_backward",
    "deg2rad_backward",
    "elu_double_backward",
    "evenly_distribute_backward",
    "evenly_read_jvp",
    "gather_with_keepdimed_indices",
    "infinitely_differentiable_logit_backward",
    "infinitely_differentiable_mish_backward",
    "infinitely_differentiable_silu_backward",
    "log1p_backward",
    "masked_fill_backward",
    "mm_mat1_backward",
    "mm_mat2_backward",
    "pow_backward",
    "rad2deg_backward",
    "restore_reduced_dims",
    "scale_grad_by_count",
    "sinc_backward",
    "slice_backward_wrapper",
    "unsqueeze_to",
    "value_selecting_reduction_backward_symint",
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
