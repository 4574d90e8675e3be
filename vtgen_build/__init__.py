"""vtgen_build: incremental, compile-checked autograd codegen from PyTorch-style YAML.

One room (subpackage) per concern, in pipeline order; imports only point down this list
(``tests/test_layers.py`` declares it and fails on an import that points up; the map is
``docs/design/rooms.md``):

``base`` (errors, names, atomic writes, state files) → ``inputs`` (finding and loading the
yaml) → ``model`` → ``plan`` → ``emit`` and ``stubs`` → ``engine`` (generate, incremental,
caches, manifest, the no-op record), ``revisions``, ``compile`` → ``check``, ``torchlib`` →
``gradcheck`` → ``diagnostics`` → the build edges ``setuptools_hook`` and ``linkcheck`` →
``cli`` → the entry points around it: ``__main__``, ``lintrunner``, ``precommit``.

The modules at the root are those other tools name by dotted path (the setuptools entry
point, CMake's link launcher, a ``.lintrunner.toml``, the console scripts).  This module
itself holds only the version and ``get_cmake_dir()``, imports no room, and any room may
import it.
"""

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
