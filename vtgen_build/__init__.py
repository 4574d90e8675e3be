"""vtgen_build: incremental, compile-checked autograd codegen from PyTorch-style YAML."""

from __future__ import annotations

from pathlib import Path

__all__ = ["__version__", "get_cmake_dir"]

__version__ = "0.1.0"


def get_cmake_dir() -> str:
    """The directory holding ``vtgen_buildConfig.cmake`` (for ``vtgen_build_DIR``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cmake", here.parent / "cmake"):
        if (candidate / "vtgen_buildConfig.cmake").is_file():
            return str(candidate)
    return str(here / "cmake")
