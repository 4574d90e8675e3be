"""The sample's build backend: scikit-build-core's, with torch in the build environment only
when the build compiles against it.

The default build (``VTSAMPLE_USE_TORCH=ON``, see pyproject.toml) compiles the op library
against the torch it will run with, so ``torch==2.13.0`` is a build requirement.  The stub
mode (``pip install -C cmake.define.VTSAMPLE_USE_TORCH=OFF .``) compiles the generated kernels
against vtgen_build's stub headers: no torch in its build environment.
"""

from __future__ import annotations

from scikit_build_core import build as _build
from scikit_build_core.build import *  # noqa: F403  (every hook; two are extended below)

TORCH = "torch==2.13.0"  # the version [project].dependencies requires at run time

_KEYS = ("cmake.define.VTSAMPLE_USE_TORCH", "skbuild.cmake.define.VTSAMPLE_USE_TORCH")
_CMAKE_FALSE = {"", "0", "OFF", "NO", "N", "FALSE", "IGNORE", "NOTFOUND"}


def uses_torch(config_settings: dict[str, str | list[str]] | None) -> bool:
    """False only when a ``-C`` setting turns VTSAMPLE_USE_TORCH off (a CMake false constant)."""
    for key in _KEYS:
        value = (config_settings or {}).get(key)
        if isinstance(value, list):
            value = value[-1] if value else None
        if value is not None:
            upper = value.strip().upper()
            return not (upper in _CMAKE_FALSE or upper.endswith("-NOTFOUND"))
    return True


def get_requires_for_build_wheel(config_settings: dict[str, str | list[str]] | None = None) -> list[str]:
    torch = [TORCH] if uses_torch(config_settings) else []
    return [*_build.get_requires_for_build_wheel(config_settings), *torch]


def get_requires_for_build_editable(config_settings: dict[str, str | list[str]] | None = None) -> list[str]:
    torch = [TORCH] if uses_torch(config_settings) else []
    return [*_build.get_requires_for_build_editable(config_settings), *torch]
