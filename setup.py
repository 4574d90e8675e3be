"""What pyproject.toml cannot say: the CMake package sources live in the top-level ``cmake/``
and ship inside the package as ``vtgen_build/cmake`` (wheels and editable installs alike),
where ``get_cmake_dir()``, the ``cmake.root`` / ``cmake.prefix`` entry points and
``find_package()`` look.  Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["vtgen_build*"]), "vtgen_build.cmake"],
    package_dir={"vtgen_build.cmake": "cmake"},  # its files: [tool.setuptools.package-data]
)
