"""Compiling generated C++: the compiler, command lines, precompiled headers, the results cache, jobs.

``vtgen-build check`` is a thin driver over this package; anything else that needs to
run the C++ compiler on generated code (a shared library build, the tests) starts here.
"""

from __future__ import annotations

from .build import WARNINGS, Settings, Unit, compile_units, launcher_env
from .compiler import Compiler, find_compiler, identify
from .diagnostics import Diagnostics, namespace_hint, read_diagnostics
from .jobs import UnitResult
from .pch import prefix_of
from .standard import DEFAULT_STD, default_std, torch_version

__all__ = [
    "DEFAULT_STD",
    "WARNINGS",
    "Compiler",
    "Diagnostics",
    "Settings",
    "Unit",
    "UnitResult",
    "compile_units",
    "default_std",
    "find_compiler",
    "identify",
    "launcher_env",
    "namespace_hint",
    "prefix_of",
    "read_diagnostics",
    "torch_version",
]
