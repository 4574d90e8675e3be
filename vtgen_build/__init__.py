"""vtgen_build: incremental, compile-checked autograd codegen from PyTorch-style YAML."""

from __future__ import annotations

import os

__all__ = ["__version__", "get_cmake_dir"]

__version__ = "0.1.0"


def get_cmake_dir() -> str:
    """The directory holding ``vtgen_buildConfig.cmake`` (for ``vtgen_build_DIR``).

    It lives inside the package (``vtgen_build/cmake``), so the same path is right
    in a source checkout, an editable install and an installed wheel; the
    ``cmake.root`` / ``cmake.prefix`` entry points name the package for the same reason.
    """
    return os.path.join(os.path.dirname(os.path.realpath(__file__)), "cmake")
