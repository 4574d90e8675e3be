"""Compiling generated C++: the compiler, command lines, the compiled-artifact cache, precompiled headers, jobs.

``vtgen-build check`` is a thin driver over this package; anything else that needs to
run the C++ compiler on generated code (a shared library build, the tests) starts here.

May import: ``base`` (it needs nothing of generation: anything that compiles C++ can use it).
"""

from __future__ import annotations

from .artifacts import ArtifactCache, FileDigests, Hit, parse_depfile
from .build import WARNINGS, Settings, Unit, compile_units, launcher_env
from .compiler import Compiler, find_compiler, identify
from .diagnostics import Diagnostics, first_error, namespace_hint, read_diagnostics
from .jobs import Interrupted, Processes, UnitResult, run_parallel
from .pch import prefix_of
from .standard import DEFAULT_STD, default_std, torch_version

__all__ = [
    "DEFAULT_STD",
    "WARNINGS",
    "ArtifactCache",
    "Compiler",
    "Diagnostics",
    "FileDigests",
    "Hit",
    "Interrupted",
    "Processes",
    "Settings",
    "Unit",
    "UnitResult",
    "compile_units",
    "default_std",
    "find_compiler",
    "first_error",
    "identify",
    "launcher_env",
    "namespace_hint",
    "parse_depfile",
    "prefix_of",
    "read_diagnostics",
    "run_parallel",
    "torch_version",
]
