"""Fake kernels of the vtsample ops that have no C++ ``Meta:`` kernel: what fake tensors,
``torch.compile`` and ``torch.export`` run instead of the real kernel (shapes and dtypes only).

The op library names this module (``vtgen_generate(... FAKE_MODULE vtsample._fake)``), so
PyTorch's "no fake kernel" error tells the user to import it; ``vtsample/__init__.py`` does.
"""

from __future__ import annotations

import torch

__all__: list[str] = []


@torch.library.register_fake("vtsample::affine")
def _affine(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    torch._check(input.shape[-1] == weight.shape[-1], lambda: "affine: input and weight sizes do not match")
    shape = (*input.shape[:-1], weight.shape[0])
    return input.new_empty(shape if bias is None else torch.broadcast_shapes(shape, bias.shape))


@torch.library.register_fake("vtsample::soft_quantize")
def _soft_quantize(self: torch.Tensor, scale: torch.Tensor, bits: int = 8) -> torch.Tensor:
    return torch.empty_like(torch.broadcast_tensors(self, scale)[0])
