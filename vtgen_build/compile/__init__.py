"""Compiling generated C++: the compiler, command lines, the compiled-artifact cache, precompiled headers, jobs.

``vtgen-build check`` is a thin driver over this package; anything else that needs to
run the C++ compiler on generated code (a shared library build, the tests) starts here.

``partial`` cuts units of some ops out of a generated output (``emit.output_index``'s records);
``includes`` says what they are compiled against.

May import: ``base``, ``plan`` (the release of a torch's headers), ``emit`` (the output index).
"""

from __future__ import annotations

from .artifacts import ArtifactCache, FileDigests, Hit, artifact_key, parse_depfile, read_depfile, remove_legacy
from .build import WARNINGS, Settings, Unit, compile_units, launcher_env
from .compiler import Compiler, find_compiler, identify
from .compiler_output import Diagnostics, first_error, namespace_hint, read_diagnostics
from .includes import STUB_INCLUDE, WORK, Headers, header_root, include_flags, launcher_argv
from .jobs import Interrupted, Processes, UnitResult, run_parallel
from .partial import node_blocks, op_kernels, section, with_node_includes
from .pch import PchBuilder, prefix_of, shard_prefix
from .standard import DEFAULT_STD, default_std, torch_version

__all__ = [
    "DEFAULT_STD",
    "STUB_INCLUDE",
    "WARNINGS",
    "WORK",
    "ArtifactCache",
    "Compiler",
    "Diagnostics",
    "FileDigests",
    "Headers",
    "Hit",
    "Interrupted",
    "PchBuilder",
    "Processes",
    "Settings",
    "Unit",
    "UnitResult",
    "artifact_key",
    "compile_units",
    "default_std",
    "find_compiler",
    "first_error",
    "header_root",
    "identify",
    "include_flags",
    "launcher_argv",
    "launcher_env",
    "namespace_hint",
    "node_blocks",
    "op_kernels",
    "parse_depfile",
    "prefix_of",
    "read_depfile",
    "read_diagnostics",
    "remove_legacy",
    "run_parallel",
    "section",
    "shard_prefix",
    "torch_version",
    "with_node_includes",
]
