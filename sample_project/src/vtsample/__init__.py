"""vtsample: a sample op library whose autograd kernels vtgen_build generates at build time."""

from __future__ import annotations

from pathlib import Path

__all__ = ["get_include"]


def get_include() -> str:
    """The directory holding the generated ``Functions.h`` and ``Functions_<k>.h`` headers and ``vtsample/helpers.h``."""
    return str(Path(__file__).resolve().parent / "include")
