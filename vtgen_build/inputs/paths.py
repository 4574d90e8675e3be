"""Finding the input files from a PyTorch checkout or an installed torchgen package."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError

__all__ = ["PytorchLayout", "find_pytorch_layout", "layout_candidates"]


@dataclass(frozen=True)
class PytorchLayout:
    native_functions: str
    tags: str
    derivatives: str
    manual_header: str | None
    checkout: bool = False  # a PyTorch source checkout (not an installed torchgen package)


_LAYOUTS = (
    # PyTorch source checkout
    (
        "aten/src/ATen/native/native_functions.yaml",
        "aten/src/ATen/native/tags.yaml",
        "tools/autograd/derivatives.yaml",
        "torch/csrc/autograd/FunctionsManual.h",
    ),
    # installed torchgen package (or the site-packages directory holding it)
    (
        "packaged/ATen/native/native_functions.yaml",
        "packaged/ATen/native/tags.yaml",
        "packaged/autograd/derivatives.yaml",
        "../torch/include/torch/csrc/autograd/FunctionsManual.h",
    ),
    (
        "torchgen/packaged/ATen/native/native_functions.yaml",
        "torchgen/packaged/ATen/native/tags.yaml",
        "torchgen/packaged/autograd/derivatives.yaml",
        "torch/include/torch/csrc/autograd/FunctionsManual.h",
    ),
)


def find_pytorch_layout(root: str) -> PytorchLayout:
    """The input paths under ``root``; an error says which layouts were tried."""
    base = Path(root)
    for i, (native, tags, derivatives, manual) in enumerate(_LAYOUTS):
        if (base / native).is_file() and (base / derivatives).is_file():
            header = base / manual
            return PytorchLayout(
                str(base / native),
                str(base / tags),
                str(base / derivatives),
                str(header.resolve()) if header.is_file() else None,
                checkout=i == 0,
            )
    raise VtgenError(
        f"{root}: not a PyTorch checkout (aten/src/ATen/native/, tools/autograd/) "
        "nor an installed torchgen package (packaged/...)"
    )


def layout_candidates(root: str) -> list[str]:
    """Every path whose presence ``find_pytorch_layout(root)`` looks at (its answer changes with them)."""
    return [str(Path(root) / rel) for layout in _LAYOUTS for rel in layout]
