"""vtgen_build's CMake package (``vtgen_buildConfig.cmake``), importable as ``vtgen_build.cmake``.

Not Python code: this file only makes the directory a package, so that the ``cmake.root`` and
``cmake.prefix`` entry points (``vtgen_build.cmake``) resolve to it with ``importlib.resources``
from an installed wheel (``vtgen_build/cmake``) and from an editable install (this checkout's
``cmake/``) alike.
"""
