"""The pyag ops without autograd: schemas from native_functions.yaml, Python CPU and fake kernels.

Stands in for a stable-ABI library's ``.so`` (its kernels carry no autograd either).
"""

import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
lib = torch.library.Library("pyag", "DEF")
with open(os.path.join(HERE, "..", "native_functions.yaml"), encoding="utf-8") as f:
    for line in f:  # `- func: <schema>` lines (no yaml parser: some torch environments lack one)
        if line.startswith("- func: "):
            lib.define(line[len("- func: ") :].strip())


def _kernel(name):
    def register(fn):
        lib.impl(name, fn, "CPU")
        return fn

    return register


def _fake(name, fn):
    torch.library.register_fake(f"pyag::{name}", fn, lib=lib)


@_kernel("softsign")
def softsign(self):
    return self / (1 + self.abs())


@_kernel("softsign_")
def softsign_(self):
    self.div_(1 + self.abs())


@_kernel("softsign_backward")
def softsign_backward(grad_output, self):
    return grad_output / (1 + self.abs()) ** 2


@_kernel("scale_add")
def scale_add(self, other, *, alpha=1):
    return self + alpha * other


@_kernel("scale_add_")
def scale_add_(self, other, *, alpha=1):
    self.add_(alpha * other)


@_kernel("topk_abs")
def topk_abs(self, k, dim=-1):
    indices = self.abs().topk(k, dim).indices
    return self.gather(dim, indices), indices


@_kernel("stack_mean")
def stack_mean(tensors, dim=0):
    return torch.stack(tensors, dim).mean(dim)


@_kernel("affine")
def affine(input, weight, bias=None):
    out = input @ weight.mT
    return out if bias is None else out + bias


@_kernel("tile_to")
def tile_to(self, size):
    return self.expand(size).clone()


@_kernel("soft_quantize")
def soft_quantize(self, scale, bits=8):
    """A smooth stand-in for rounding to ``2 ** (bits - 1)`` levels of ``scale``."""
    levels = 2 ** (bits - 1)
    return self - torch.sin(self / scale * levels) * scale / (levels * 8)


@_kernel("mix_")
def mix_(self, other, alpha):
    new_self = self + other * alpha
    other.mul_(self)
    self.copy_(new_self)


@_kernel("cube")
def cube(self):
    return self * self * self


@_kernel("cube_")
def cube_(self):
    return self.mul_(self * self)


for _name in (
    "cube",
    "cube_",
    "softsign",
    "softsign_backward",
    "scale_add",
    "tile_to",
    "soft_quantize",
    "affine",
    "stack_mean",
):
    _fake(_name, globals()[_name])
_fake("softsign_", lambda self: None)
_fake("scale_add_", lambda self, other, *, alpha=1: None)
_fake("mix_", lambda self, other, alpha: None)


def _topk_fake(self, k, dim=-1):
    shape = list(self.shape)
    shape[dim] = k
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.long)


_fake("topk_abs", _topk_fake)
