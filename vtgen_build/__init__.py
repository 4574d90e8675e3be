"""vtgen_build: incremental, compile-checked autograd codegen from PyTorch-style YAML."""

from __future__ import annotations

import os

__all__ = ["__version__", "get_cmake_dir"]

__version__ = "0.1.0"


def get_cmake_dir() -> str:
    """The directory holding ``vtgen_buildConfig.cmake`` (for ``vtgen_build_DIR``).

    Its sources are the checkout's top-level ``cmake/``; a wheel ships them inside the
    package as ``vtgen_build/cmake``.  So: that directory when it is there (an installed
    wheel), else the ``cmake/`` beside the package (a source checkout, an editable install).
    """
    package = os.path.dirname(os.path.realpath(__file__))
    inside = os.path.join(package, "cmake")
    if os.path.isfile(os.path.join(inside, "vtgen_buildConfig.cmake")):
        return inside
    return os.path.join(os.path.dirname(package), "cmake")
