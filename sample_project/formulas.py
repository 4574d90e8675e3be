"""Python equivalents of the helpers in include/vtsample/helpers.h (defined in src/helpers.cpp).

Read by `vtgen-build check --gradcheck --library ... --tier python --python-formulas formulas.py`:
the formulas of derivatives.yaml, translated to Python, call these instead of the C++ helpers, so
that a formula edit is verified with nothing compiled.  Plain torch code, written from the same
derivative each C++ helper computes; keep the two in step: the check proves them equal to the
compiled helpers on samples (its `agree` check against the built library) whenever helpers.h, this
file or the library changed, and gives no verdict on an op calling one not proven; its `--changed`
key holds both files.
handle_r_to_c and maybe_multiply are the translator's own.
"""

import math

import torch


def softsign_backward(grad, self):
    denominator = self.abs() + 1
    return grad / (denominator * denominator)


def value_selecting_backward(grad, dim, indices, sizes):
    return grad.new_zeros(sizes).scatter(dim, indices, grad)


def gather_along(t, dim, indices):
    return t.gather(dim, indices)


def stack_mean_backward(grad, dim, count):
    if grad is None:
        return [None] * count
    return [grad / count] * count


def affine_backward(grad, input, weight, grad_input_mask):
    if grad is None:
        return None, None, None
    grad_2d = grad.reshape(-1, grad.size(-1))
    grad_input = grad.matmul(weight) if grad_input_mask[0] else None
    grad_weight = grad_2d.t().mm(input.reshape(-1, input.size(-1))) if grad_input_mask[1] else None
    grad_bias = grad_2d.sum(0) if grad_input_mask[2] else None
    return grad_input, grad_weight, grad_bias


def affine_jvp(input_p, input_t, weight_p, weight_t, bias_t):
    result = input_t.matmul(weight_p.t()) + input_p.matmul(weight_t.t())
    return result if bias_t is None else result + bias_t


def sum_to_sizes(grad, sizes):
    lead = grad.dim() - len(sizes)
    dims = [*range(lead), *(lead + i for i, n in enumerate(sizes) if n == 1 and grad.shape[lead + i] != 1)]
    return (grad.sum(dims, keepdim=True) if dims else grad).reshape(sizes)


def tile_to_jvp(self_t, size):
    return self_t.expand(size).clone()


def soft_quantize_backward(grad, self, scale, bits):
    step = scale / math.ldexp(1.0, bits - 1)
    return grad * (1 - torch.cos(2 * math.pi * self / step))
