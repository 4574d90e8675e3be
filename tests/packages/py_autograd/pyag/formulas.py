"""The pyag formulas' helper functions (named by ``--python-formulas``): plain torch code."""

import torch


def softsign_double_backward(grad, grad_output, self):
    return grad * grad_output * -2 * torch.sign(self) / (1 + self.abs()) ** 3


def gather_along(t, dim, indices):
    return t.gather(dim, indices)


def stack_mean_backward(grad, dim, count):
    return [grad / count] * count


def affine_backward(grad, input, weight, grad_input_mask):
    grad_input = grad @ weight if grad_input_mask[0] else None
    grad_weight = grad.mT @ input if grad_input_mask[1] else None
    grad_bias = grad.sum(0) if grad_input_mask[2] else None
    return grad_input, grad_weight, grad_bias


def affine_jvp(input_p, input_t, weight_p, weight_t, bias_t):
    out = input_t @ weight_p.mT + input_p @ weight_t.mT
    return out if bias_t is None else out + bias_t


def sum_to_sizes(grad, sizes):
    lead = grad.dim() - len(sizes)
    dims = [*range(lead), *(lead + i for i, n in enumerate(sizes) if n == 1 and grad.shape[lead + i] != 1)]
    return (grad.sum(dims, keepdim=True) if dims else grad).reshape(sizes)


def tile_to_jvp(self_t, size):
    return self_t.expand(size)


def soft_quantize_backward(grad, self, scale, bits):
    levels = 2 ** (bits - 1)
    return grad * (1 - torch.cos(self / scale * levels) / 8)
