"""Fake (meta) kernels of the vtstable ops that have no C++ ``Meta:`` kernel.

``sincos`` has a C++ Meta kernel and ``softsign``'s variants get generated ones (its meta
function); these ops are shape-preserving, so their fakes are one line each.
"""

from __future__ import annotations

import torch

__all__: list[str] = []


@torch.library.register_fake("vtstable::softsign_backward")
def _softsign_backward(grad: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    torch._check(grad.shape == self.shape, lambda: "softsign_backward: grad and self differ in size")
    return torch.empty_like(self)


@torch.library.register_fake("vtstable::affine")
def _affine(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    torch._check(weight.shape == input.shape, lambda: "affine: weight must have the sizes of input")
    return torch.empty_like(input)


@torch.library.register_fake("vtstable::clamp_abs_")
def _clamp_abs_(self: torch.Tensor, bound: float) -> None:
    return None
