"""What generated units are compiled against: include flags, shims, the compiler launcher.

Our ``Functions.h`` shadows PyTorch's (a shim directory found first); headers we did not
write are ``-isystem`` (their warnings are not ours); against the stub ATen headers a
manual header file stands behind ``torch/csrc/autograd/FunctionsManual.h``; against a real
torch an op library in its own namespace gets its declarations forced in.  The shims live
under ``<out>/.vtgen-check/<stubs|real>/``.  ``check`` and ``check --gradcheck`` both ask here.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError
from ..base.write import write_atomic

__all__ = ["STUB_INCLUDE", "WORK", "Headers", "header_root", "include_flags", "launcher_argv"]

STUB_INCLUDE = Path(__file__).resolve().parent.parent / "stubs" / "include"
WORK = ".vtgen-check"  # in the output directory: shims, the partial unit, caches, state


@dataclass(frozen=True)
class Headers:
    """The headers generated code is compiled against, besides its own."""

    torch_include: str | None = None  # a real PyTorch include dir instead of the stubs
    include_dirs: tuple[str, ...] = ()  # -isystem for the user's headers (the manual header's directory)
    manual_header_file: str | None = None  # file behind torch/csrc/autograd/FunctionsManual.h (stub builds)


def header_root(headers: Headers) -> Path:
    """The directory of the ATen headers compiled against: ``--torch-include``'s, or the stubs."""
    return Path(headers.torch_include) if headers.torch_include else STUB_INCLUDE


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)


def _include(path: Path) -> str:
    return '#include "' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"\n'


def include_flags(out: Path, headers: Headers) -> list[str]:
    """``-I``/``-isystem`` flags: our Functions.h shadows PyTorch's, headers we did not write are system."""
    mode = "real" if headers.torch_include else "stubs"
    shim = out / WORK / mode / "shim"  # found first: the generated Functions.h under PyTorch's name
    system = out / WORK / mode / "system"  # headers we do not check for warnings
    # PyTorch's FunctionsManual.h includes generated/Functions.h for the shared includes only: give it
    # FunctionsBase.h, not the umbrella, so that a change to one Node's header recompiles one shard.
    _write_if_changed(shim / "torch/csrc/autograd/generated/Functions.h", _include(out.resolve() / "FunctionsBase.h"))
    flags = [f"-I{shim}", f"-I{out}"]
    flags += [f"-isystem{d}" for d in headers.include_dirs]
    if headers.torch_include is None:
        if headers.manual_header_file:
            _write_if_changed(
                system / "torch/csrc/autograd/FunctionsManual.h", _include(Path(headers.manual_header_file).resolve())
            )
        return [*flags, f"-isystem{system}", f"-isystem{header_root(headers)}"]
    real = Path(headers.torch_include)
    if not (real / "ATen").is_dir():
        raise VtgenError(f"--torch-include {real}: no ATen/ headers there (expected <torch>/include)")
    flags += [f"-isystem{system}", f"-isystem{real}", f"-isystem{real / 'torch/csrc/api/include'}"]
    functions_inc = (out / "vtgen_decls" / "Functions.inc").read_text(encoding="utf-8")
    if "<vtgen_aten/" in functions_inc:  # an op library in its own namespace: PyTorch's headers lack its functions
        for kind in ("Functions", "RedispatchFunctions"):
            _write_if_changed(system / "vtgen_aten" / f"{kind}.inc", "// the real aten headers are used\n")
        forced = system / "vtgen_namespace_decls.h"
        decls = tuple(f"vtgen_decls/{k}.inc" for k in ("Functions", "RedispatchFunctions"))
        includes = ("ATen/ATen.h", "torch/csrc/Export.h", *decls)
        _write_if_changed(forced, "#pragma once\n" + "".join(f"#include <{h}>\n" for h in includes))
        flags += ["-include", str(forced)]
    return flags


def launcher_argv(launcher: str | None) -> tuple[str, ...]:
    """``--launcher CMD`` as the words each compile is prefixed with; a launcher not found is an error."""
    argv = tuple(launcher.split()) if launcher else ()
    if argv and shutil.which(argv[0]) is None:
        raise VtgenError(f"--launcher {launcher}: {argv[0]} not found")
    return argv
